"""End to end, a regression in two small steps on a noisy shape (examples/blk-steps on
linux-source-6.1): virtio_blk's default requests in flight lowered to 16, then to 8, each
costing fio random reads at depth 32 on 8 virtio-blk disks about a fifth of their IOPS.
Bisected for real (kernel builds, libvirt guests, fio), the campaign names both steps with their
shares, oldest first, within 60 boots (docs/measurements/noise.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.demo import Series
from orchestrator.store import Store
from tests.e2e.shipped import bisect_shipped, report_of

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
BLK_STEPS = Series("blk-steps", "virtio_blk: halve the default requests in flight again")
FIRST = "virtio_blk: default to 16 requests in flight"


def test_two_small_steps_on_eight_virtio_blk_disks_are_both_named_with_their_shares_within_60_boots(tmp_path: Path):
    repo, url, _ = bisect_shipped(tmp_path, BLK_STEPS)
    first = subprocess.run(["git", "-C", str(repo.path), "log", "--format=%H", f"--grep=^{FIRST}$",
                            "master..blk-steps"], capture_output=True, text=True, check=True).stdout.split()
    assert len(first) == 1
    store = Store(url)
    result = store.campaign(1).result
    named = [(s["commit"], s["share"], s["low"], s["high"]) for s in result["steps"]]
    md = report_of(url, 1)
    print(f"\n{md[:3000]}")
    assert [s[0] for s in named] == [first[0], repo.culprit], (named, result["notes"])  # oldest first
    assert all(0 < low <= share <= high < 1 for _, share, low, high in named), named
    boots = len(store.boots(1))
    assert boots <= 60, boots
