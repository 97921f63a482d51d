"""End to end on the other two tools: the shipped netperf and dbench series on linux-source-6.1
(examples/netperf, examples/dbench: comment-only commits around one real change) bisected for
real, with kernels built from the default recipe, each naming its culprit and confirming it
against its parent. The campaigns are the shipped ones, leaner where it only costs time: two
runs per boot, no revert (the demo's test covers the revert); the boots a step may take stay
the shipped campaign's (netperf in a TCG guest varies a lot between boots: with at most four,
the endpoint check refused the campaign on a busy host, rightly)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import DBENCH, NETPERF, Series, ensure_series_repo
from orchestrator.store import Store
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]
LEAN = {"runs_per_boot": 2, "boots_per_commit": 2, "confirm": "none"}


@pytest.mark.parametrize("series", [NETPERF, DBENCH], ids=lambda s: s.name)
def test_a_shipped_series_bisects_to_its_real_change(tmp_path: Path, series: Series):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(series)
    spec = {**yaml.safe_load(series.campaign.read_text()), **LEAN, "repository": str(repo.path)}
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(spec))
    url = f"sqlite:///{tmp_path / 'series.db'}"
    done = subprocess.run([*VMBISECT, "bisect", str(campaign), "--json", "--store", url],
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"culprit: {repo.culprit}" in done.stdout, done.stdout[-3000:]
    assert "confirmation: confirmed" in done.stdout
    store = Store(url)
    row = store.campaign(1)
    assert row.state == "done" and row.result["culprit"] == repo.culprit
    steps = [d for d in store.decisions(1) if d.role == "step"]
    assert steps and all(d.verdict in ("good", "bad") for d in steps), steps
