"""CPU time with nanosecond accounting (orchestrator/workloads/system.py: guest_run,
guest_nonidle, host_vcpu and their costs) over raw /proc files captured from a real guest
(tests/data/proc/fio-randread-6.1: Debian's 6.1 kernel under TCG, two vCPUs, a 3 s fio random
read between the two snapshots). Expected figures are worked out by hand from the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.workloads import system
from orchestrator.workloads.result import ToolRun

DATA = Path(__file__).parents[1] / "data" / "proc" / "fio-randread-6.1"
SCHED = [(DATA / f"schedstat-{s}.txt").read_text() for s in ("before", "after")]
STAT = [(DATA / f"stat-{s}.txt").read_text() for s in ("before", "after")]
_ns = json.loads((DATA / "window.json").read_text())["monotonic_ns"]
WINDOW = (_ns[1] - _ns[0]) / 1e9  # 3.592 s
# rq_cpu_time, the 7th number of each cpuN line: cpu0 1449540230 -> 1964503650, cpu1 2399169717 -> 5004728871
RUN_S = ((1964503650 - 1449540230) + (5004728871 - 2399169717)) / 1e9  # 3.121 s
# idle ticks: cpu0 157 -> 447, cpu1 110 -> 193; iowait and steal 0
NONIDLE_S = 2 * WINDOW - ((447 - 157) + (193 - 110)) / 100  # 3.455 s
BUSY_S = (35 + 236) / 100  # the ticks of user, system and softirq


def test_guest_run_is_the_schedstat_run_time_of_every_vcpu_in_seconds():
    assert system.guest_run(*SCHED) == {"guest_run": pytest.approx(RUN_S)}


def test_guest_nonidle_is_the_window_of_every_vcpu_less_its_idle_time():
    assert system.guest_nonidle(*STAT, WINDOW) == {"guest_nonidle": pytest.approx(NONIDLE_S)}


def test_steal_and_iowait_are_not_counted_as_nonidle():
    before = "cpu  0 0 0 0 0 0 0 0\ncpu0 10 0 10 100 5 0 0 3\n"
    after = "cpu  0 0 0 0 0 0 0 0\ncpu0 60 0 60 200 55 0 0 53\n"  # 1 s idle, 0.5 s iowait, 0.5 s stolen
    assert system.guest_nonidle(before, after, 3.0) == {"guest_nonidle": pytest.approx(1.0)}


def test_the_ns_figures_of_the_capture_agree_with_each_other_and_exceed_the_sampled_ticks():
    """What the capture shows under TCG: both nanosecond figures within 11% of each other, the
    tick count about 13% under the run time (ticks a descheduled vCPU thread never took)."""
    assert NONIDLE_S / RUN_S == pytest.approx(1.107, abs=1e-3)
    assert BUSY_S / RUN_S == pytest.approx(0.868, abs=1e-3)


def test_a_run_without_schedstat_or_a_window_gives_no_ns_figures():
    assert system.guest_run("", SCHED[1]) == {}
    assert system.guest_run("version 15\ntimestamp 1\n", "version 15\ntimestamp 2\n") == {}
    assert system.guest_nonidle(*STAT, 0.0) == {}


def test_the_vcpu_threads_host_time_is_the_sum_of_libvirts_per_vcpu_times():
    before = {"cpu_time": 8_901_921_000, "user_time": 0, "system_time": 0, "vcpu_time": [6_720_000_000, 1_690_000_000],
              "monotonic_s": 100.0}
    after = {"cpu_time": 11_587_758_000, "user_time": 0, "system_time": 0, "vcpu_time": [8_320_000_000, 2_640_000_000],
             "monotonic_s": 102.5}
    got = system.host_cpu(before, after)
    assert got["host_vcpu"] == pytest.approx(1.6 + 0.95)
    assert got["host_vcpus_used"] == pytest.approx(2.55 / 2.5)
    assert got["host_vcpu"] < got["host_cpu"]  # the process's time holds the main loop's and I/O threads' too


def test_a_guest_whose_vcpus_libvirt_does_not_list_has_no_vcpu_figures():
    stats = {"cpu_time": 0, "user_time": 0, "system_time": 0, "vcpu_time": [], "monotonic_s": 1.0}
    got = system.host_cpu(stats, {**stats, "cpu_time": 10**9, "monotonic_s": 2.0})
    assert "host_vcpu" not in got and "host_vcpus_used" not in got


def test_each_cpu_time_gives_a_cost_per_operation_and_per_byte():
    tool = ToolRun({}, op_rate=4000.0, byte_rate=4000.0 * 4096)
    guest = {"guest_cpu_busy": BUSY_S, "ctxt_per_s": 0.0, "intr_per_s": 0.0, "guest_run": RUN_S,
             "guest_nonidle": NONIDLE_S}
    host = {"host_cpus_used": 1.5, "host_vcpus_used": 1.2}
    got = system.costs(tool, guest, WINDOW, host, None)
    assert got["guest_run_us_per_op"] == pytest.approx(RUN_S / WINDOW / 4000 * 1e6)  # 217 us
    assert got["guest_nonidle_us_per_op"] == pytest.approx(NONIDLE_S / WINDOW / 4000 * 1e6)
    assert got["guest_cpu_us_per_op"] == pytest.approx(BUSY_S / WINDOW / 4000 * 1e6)
    assert got["host_vcpu_us_per_op"] == pytest.approx(1.2 / 4000 * 1e6)
    assert got["guest_run_ns_per_byte"] == pytest.approx(RUN_S / WINDOW / (4000 * 4096) * 1e9)
    assert got["host_vcpu_ns_per_byte"] == pytest.approx(1.2 / (4000 * 4096) * 1e9)


def test_costs_leave_out_the_cpu_times_a_run_did_not_read():
    tool = ToolRun({}, op_rate=100.0, byte_rate=0.0)
    got = system.costs(tool, {"guest_cpu_busy": 1.0, "ctxt_per_s": 0.0, "intr_per_s": 0.0}, 1.0,
                       {"host_cpus_used": 1.0}, None)
    assert set(got) == {"guest_cpu_us_per_op", "host_cpu_us_per_op", "ctxt_per_op", "intr_per_op"}


@pytest.mark.parametrize("name", ["guest_run", "guest_run_us_per_op", "guest_run_ns_per_byte", "guest_nonidle",
                                  "guest_nonidle_us_per_op", "guest_nonidle_ns_per_byte", "host_vcpu",
                                  "host_vcpus_used", "host_vcpu_us_per_op", "host_vcpu_ns_per_byte"])
def test_every_ns_figure_is_lower_better_and_says_what_it_measures_under_tcg(name):
    m = system.METRICS[name]
    assert m.direction == "lower" and m.tcg and not m.per and not m.accel


def test_the_cost_units_match_the_tick_figures_they_stand_beside():
    for base in ("guest_cpu", "guest_run", "guest_nonidle", "host_cpu", "host_vcpu"):
        assert system.METRICS[f"{base}_us_per_op"].unit == "CPU-us/op"
        assert system.METRICS[f"{base}_ns_per_byte"].unit == "CPU-ns/B"
