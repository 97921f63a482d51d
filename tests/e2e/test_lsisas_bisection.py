"""End to end, the case issue #12 started from: a 10-20% fio random-read regression on 4 LSI SAS
disks (lsisas1078, megaraid_sas, one hardware queue), 2 vCPUs, threshold -10%, its culprit on a
side branch merged into the main line among comment-only commits, a commit that breaks the build
and its fix in the range (examples/lsisas). Bisected for real with the shipped campaign (kernel
builds, libvirt guests, fio), the culprit confirmed against its parent and by its revert on the
tip; the comment-only commits pass their verdicts on without a boot."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import LSISAS, ensure_series_repo
from orchestrator.store import Store
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]


def test_lsisas_regression_on_a_merged_side_branch_is_bisected_and_confirmed_by_revert(tmp_path: Path):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(LSISAS)
    merges = subprocess.run(["git", "-C", str(repo.path), "rev-list", "--merges", "master..lsisas"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert merges, "the range has no merge commit"
    spec = {**yaml.safe_load(LSISAS.campaign.read_text()), "repository": str(repo.path)}
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(spec))
    url = f"sqlite:///{tmp_path / 'lsisas.db'}"
    started = time.monotonic()
    done = subprocess.run([*VMBISECT, "bisect", str(campaign), "--json", "--store", url],
                          capture_output=True, text=True, timeout=3 * 3600)
    minutes = (time.monotonic() - started) / 60
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"culprit: {repo.culprit}" in done.stdout, done.stdout[-3000:]
    assert "confirmation: confirmed" in done.stdout
    assert "revert: revert restores the metric" in done.stdout
    result = Store(url).campaign(1).result
    assert result["culprit"] == repo.culprit and result["revert"]["verdict"] == "revert restores the metric"
    assert result["inherited"] >= 1, "no comment-only commit passed its verdict on without a boot"
    decisions = Store(url).decisions(1)
    print(f"\nlsisas: culprit {repo.culprit[:12]}, confidence {result['confidence']:.1%}, {result['boots']} boots, "
          f"{result['inherited']} verdicts inherited, {minutes:.1f} min; steps: "
          + "; ".join(f"{d.commit[:12]} {d.role} {d.verdict}: {d.reason[:80]}" for d in decisions))
