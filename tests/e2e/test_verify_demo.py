"""End to end: `vmbisect verify` on the built-in demo (real kernel builds, libvirt guests, fio):
the demo's culprit is confirmed against its parent, a neutral commit of the series is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.demo import CAMPAIGN, _log, ensure_demo_repo
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]
NEUTRAL = "Documentation: bfq: mention low_latency"


@pytest.mark.parametrize("which, answer", [("culprit", "confirmed: commit against parent -"),
                                           ("neutral", "not seen: commit against parent ")])
def test_verify_confirms_the_demo_culprit_and_not_a_neutral_commit(tmp_path, which, answer):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    demo = ensure_demo_repo()
    neutral = next(sha for sha, subject in _log(demo.path, "demo") if subject == NEUTRAL)
    commit = demo.culprit if which == "culprit" else neutral
    done = subprocess.run([*VMBISECT, "verify", str(CAMPAIGN), commit, "--store", f"sqlite:///{tmp_path / 'v.db'}"],
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(answer), done.stdout
    assert "Amean" in done.stdout
