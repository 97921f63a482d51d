"""End to end, a regression only a cost metric can find (issue #32): the shipped scsi-mq series on
linux-source-6.1 (examples/scsi-mq), whose one real change makes megaraid_sas busy-wait after every
doorbell write, bisected for real on 8 LSI SAS disks with 64k sequential reads held at 50 I/Os per
second a disk by fio's rate_iops. The shipped campaign bisects guest_cpu_us_per_op and watches
IOPS, latency and the host's CPU per I/O; it names the culprit and confirms it against its
parent, the endpoints' IOPS stay within a few percent of each other (the throughput could not
have found it), and the report tables the watched metrics with what the CPU figures measure
under TCG. host-cpu.yaml, the same series on host_cpu_us_per_op, runs the same way. The guest
one took 20.2 min and 30 boots on a 2-core machine under TCG (docs/captures/scsi-mq-cpu-cost.md)."""

from __future__ import annotations

import re
from pathlib import Path
from statistics import fmean

import pytest

from orchestrator.demo import SCSI_MQ
from orchestrator.store import Store
from tests.e2e.shipped import bisect_shipped, report_of

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]


def bisect_cost(tmp_path: Path, campaign_file: Path) -> tuple[str, str, str]:
    """The shipped campaign bisected by the CLI; (the culprit the series was made with, the store's
    URL, the Markdown report), after checking the culprit, its confirmation and the flat IOPS."""
    repo, url, out = bisect_shipped(tmp_path, SCSI_MQ, campaign_file)
    assert f"culprit: {repo.culprit}" in out, out[-3000:]
    assert "confirmation: confirmed" in out
    store = Store(url)
    assert store.campaign(1).result["culprit"] == repo.culprit
    good, bad = (next(d.commit for d in store.decisions(1) if d.role == role) for role in ("good", "bad"))
    iops = store.samples(1, "iops")
    change = fmean(iops[bad]) / fmean(iops[good]) - 1
    assert abs(change) < 0.05, f"IOPS moved {change:+.1%} between the endpoints: the rate limit did not hold them"
    md = report_of(url, 1)
    print(f"\n{campaign_file.name}: endpoint IOPS {fmean(iops[good]):.1f} -> {fmean(iops[bad]):.1f} "
          f"({change:+.1%})\n{md}")
    return repo.culprit, url, md


def watched_rows(md: str) -> dict[str, str]:
    """The watched metrics' table rows of a Markdown report, by metric name."""
    return {m[1]: m[0] for m in re.finditer(r"^\| ([\w.]+) \| (?:higher|lower|none) \|.*$", md, re.M)}


def test_guest_cpu_per_io_bisects_a_busy_wait_that_leaves_iops_flat(tmp_path: Path):
    _, _, md = bisect_cost(tmp_path, SCSI_MQ.campaign)
    rows = watched_rows(md)
    assert {"iops", "read_clat_mean", "read_clat_p99", "host_cpu_us_per_op"} <= rows.keys(), md
    assert not rows["iops"].split("|")[5].strip().endswith("*"), rows["iops"]  # IOPS: no significant change
    if "ran under TCG" in md:  # what the CPU figures measure there, said once
        assert "guest_cpu_us_per_op: guest CPU time is the emulated clock's" in md, md


def test_host_cpu_per_io_bisects_the_same_busy_wait(tmp_path: Path):
    _, _, md = bisect_cost(tmp_path, SCSI_MQ.dir / "host-cpu.yaml")
    assert "guest_cpu_us_per_op" in watched_rows(md), md
