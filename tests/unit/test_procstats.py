"""The kernel counters of a run (orchestrator/workloads/procstats.py) over raw /proc files
captured from a real guest (tests/data/proc/fio-randread-6.1: Debian's 6.1 kernel under TCG, two
vCPUs, a 3 s fio random read between the two snapshots). Expected figures are worked out by
hand from the files (the deltas are written out in each test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.workloads import procstats, system
from orchestrator.workloads.runner import metric_def

DATA = Path(__file__).parents[1] / "data" / "proc" / "fio-randread-6.1"
FILES = ("softirqs", "vmstat", "schedstat", "stat")
BEFORE = {f"/proc/{f}": (DATA / f"{f}-before.txt").read_text() for f in FILES}
AFTER = {f"/proc/{f}": (DATA / f"{f}-after.txt").read_text() for f in FILES}
_ns = json.loads((DATA / "window.json").read_text())["monotonic_ns"]
WINDOW = (_ns[1] - _ns[0]) / 1e9  # 3.592 s


@pytest.fixture(scope="module")
def got() -> dict[str, float]:
    return procstats.metrics(BEFORE, AFTER, WINDOW)


def test_softirqs_are_summed_over_the_cpus_per_type():
    assert procstats.softirqs(AFTER["/proc/softirqs"])["TIMER"] == 275 + 312
    assert procstats.softirqs(AFTER["/proc/softirqs"])["RCU"] == 588 + 1036


def test_softirq_rates_are_the_delta_over_the_window(got):
    assert got["softirq_timer_per_s"] == pytest.approx((587 - 194) / WINDOW)  # 109/s
    assert got["softirq_sched_per_s"] == pytest.approx((1684 - 527) / WINDOW)
    assert got["softirq_net_rx_per_s"] == 0.0


def test_vmstat_counters_become_rates_and_zones_are_summed(got):
    assert got["vmstat_pgfault_per_s"] == pytest.approx((3211 - 192) / WINDOW)
    # pgalloc_dma did not move (32 -> 32), pgalloc_dma32 48284 -> 50635
    assert got["vmstat_pgalloc_per_s"] == pytest.approx(2351 / WINDOW)
    assert got["vmstat_pgalloc_zone_per_s.dma32"] == pytest.approx(2351 / WINDOW)
    assert "vmstat_pgalloc_zone_per_s.dma" not in got


def test_paged_in_kib_agree_with_the_disk_s_own_read_rate(got):
    """pgpgin counts KiB read from block devices: the same figure iostat takes from
    /proc/diskstats for the one disk fio read (34 MB/s in the capture)."""
    assert got["vmstat_pgpgin_per_s"] == pytest.approx((122024 - 12) / WINDOW)
    assert got["vmstat_pgpgin_per_s"] == pytest.approx(33964.26, rel=1e-3)


def test_vmstat_gauges_are_the_value_after_the_run(got):
    assert got["vmstat_nr_free_pages"] == 202746
    assert got["vmstat_nr_dirty"] == 0


def test_run_delay_and_timeslices_come_from_schedstat_per_cpu_and_summed(got):
    delay_ns = (339113678 - 295774058) + (398874719 - 282749306)
    slices = (2173 - 1247) + (4998 - 1800)
    assert got["sched_run_delay_ms_per_s"] == pytest.approx(delay_ns / 1e6 / WINDOW)  # 44 ms/s
    assert got["sched_run_delay_us_per_slice"] == pytest.approx(delay_ns / 1e3 / slices)  # 39 us
    assert got["sched_slices_per_s"] == pytest.approx(slices / WINDOW)
    assert got["sched_cpu_slices_per_s.1"] == pytest.approx((4998 - 1800) / WINDOW)
    assert got["sched_cpu_run_delay_ms_per_s.0"] == pytest.approx((339113678 - 295774058) / 1e6 / WINDOW)


def test_wakeups_are_left_out_when_the_kernel_does_not_count_them(got):
    """Debian's kernel boots with schedstats off: ttwu_count stays 0, which is not "no wakeups"."""
    assert "sched_wakeups_per_s" not in got and "sched_wakeups_remote_pct" not in got


def test_wakeups_and_their_remote_share_when_schedstats_count_them():
    before = "version 15\ncpu0 0 0 10 2 100 60 5 7 3\ncpu1 0 0 10 2 100 40 5 7 3\n"
    after = "version 15\ncpu0 0 0 20 4 300 160 5 7 3\ncpu1 0 0 20 4 300 140 5 7 3\n"
    got = procstats.sched_rates(before, after, 2.0)
    assert got["sched_wakeups_per_s"] == 200.0  # 400 wakeups in 2 s
    assert got["sched_wakeups_remote_pct"] == 50.0  # 200 of them local
    assert "sched_run_delay_us_per_slice" not in got  # no timeslice ran


def test_each_vcpu_busy_share_counts_every_mode_but_idle_and_iowait(got):
    # cpu0: user 5->8, system 134->166; cpu1: user 2->34, system 170->370, softirq 0->4
    assert got["guest_vcpu_busy_pct.0"] == pytest.approx(100 * 35 / 100 / WINDOW)  # 9.7%
    assert got["guest_vcpu_busy_pct.1"] == pytest.approx(100 * 236 / 100 / WINDOW)  # 65.7%
    whole = system.guest_cpu(BEFORE["/proc/stat"], AFTER["/proc/stat"], WINDOW, 2)["guest_cpu_busy"]
    assert (35 + 236) / 100 == pytest.approx(whole)


def test_missing_files_give_no_metrics_rather_than_zeros():
    assert procstats.metrics({"/proc/stat": BEFORE["/proc/stat"]}, {}, WINDOW) == {}
    assert procstats.metrics({}, {}, WINDOW) == {}


def test_every_metric_of_the_capture_has_a_definition_with_a_direction(got):
    from orchestrator.workloads.definition import load_all

    fio = load_all()["fio"]
    assert len(got) >= 30
    for name in got:
        assert metric_def(fio, name).direction in ("higher", "lower", "none"), name
