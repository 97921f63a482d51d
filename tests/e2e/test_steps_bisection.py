"""End to end, a regression in two steps (examples/steps on linux-source-6.1): a busy wait before
every virtio-scsi command is queued costs fio random reads a part of their IOPS, and bfq as the
default I/O scheduler later costs them about half. Bisected for real (kernel builds, libvirt
guests, fio), the campaign names the commit where the metric crossed the threshold, finds that
it carries clearly less than all of the regression, bisects what remains, and names both steps
with their shares, oldest first; bad with both reverted is back at good; the report and the
status line list them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from orchestrator.demo import Series
from orchestrator.store import Store
from tests.e2e.shipped import bisect_shipped, report_of

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
STEPS = Series("steps", "block: use bfq as the default I/O scheduler")
WAIT = "virtio_scsi: let the host's queue drain before queueing a command"


def test_a_regression_in_two_steps_names_both_with_their_shares(tmp_path: Path):
    def shorter(spec: dict) -> None:
        spec["runs_per_boot"] = 2
        spec["workload"]["params"]["runtime"] = 3

    repo, url, _ = bisect_shipped(tmp_path, STEPS, edit=shorter)
    wait = subprocess.run(["git", "-C", str(repo.path), "log", "--format=%H", f"--grep=^{WAIT}$", "master..steps"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert len(wait) == 1
    result = Store(url).campaign(1).result
    named = [(s["commit"], s["share"], s["low"], s["high"], s["crossed"]) for s in result["steps"]]
    assert [s[0] for s in named] == [wait[0], repo.culprit], (named, result["notes"])  # oldest first
    assert all(0 < low <= share <= high < 1 for _, share, low, high, _ in named), named
    assert sum(s[4] for s in named) == 1, named  # one of them crossed the threshold
    assert result["steps_end"] in ("add_up", "small") and result["reverted"]["verdict"] == "revert restores the metric"
    assert re.match(r"[0-9a-f]{12} carries about \d+% \(95% CI \d+%\.\.\d+%\) of the regression; bad with it "
                    r"reverted is still [+-]\d+% from good$", result["partial"]), result["partial"]
    md = report_of(url, 1)
    assert "The regression came in 2 steps" in md and "crossed the threshold" in md
    assert md.index(wait[0][:12]) < md.index(f"2. {repo.culprit[:12]}"), md[:4000]
    print(f"\n{md[:3000]}")
