"""A real campaign at a release's size: a kernel-shaped history of 10,000 commits with merges
(bench/history), real builds and real boots, bisected to its planted culprit, confirmed and
revert-checked (make test-long; about 75 minutes under TCG; the figures it prints are in
docs/measurements/real-size.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.store import Store

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_10000_commit_history_with_merges_is_bisected_for_real_to_its_planted_culprit(tmp_path: Path):
    dest = tmp_path / "h10k"
    done = subprocess.run([sys.executable, "-m", "bench.real_size", str(dest), "--commits", "10000", "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=3 * 3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    planted = json.loads((dest / "planted.json").read_text())
    store = Store(f"sqlite:///{dest / 'store.db'}", create=False)
    (row,) = store.campaigns()
    assert row.state == "done", done.stdout[-3000:]
    assert row.result["culprit"] == planted["culprit"]
    assert row.result["confirmation"]["verdict"] == "confirmed"
    assert row.result["revert"]["verdict"] == "revert restores the metric"
