"""Golden tests: the parsers over real outputs captured in real guests on this host
(tests/data/<workload>/, re-captured by tests/data/workloads/capture.py) give every expected
metric, and the key figures match what the tools themselves printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.workloads.definition import load_all
from orchestrator.workloads.result import MeasuredMetric, RunResult
from orchestrator.workloads.runner import reparse

# every workload folder's golden pairs (workloads/<name>/testdata/): a new pair is a new test
WORKLOADS = Path(__file__).resolve().parents[2] / "workloads"
CASES = sorted(f"{p.parent.parent.name}/{p.name.removesuffix('.sample.json')}"
               for p in WORKLOADS.glob("*/testdata/*.sample.json"))


def pair(case: str, kind: str) -> Path:
    workload, name = case.split("/")
    return WORKLOADS / workload / "testdata" / f"{name}.{kind}.json"


def load(case: str) -> tuple[RunResult, dict[str, MeasuredMetric]]:
    s = json.loads(pair(case, "sample").read_text())
    expected = {k: MeasuredMetric(**v) for k, v in json.loads(pair(case, "expected").read_text()).items()}
    result = RunResult(s["workload"], s["params"], {}, s["raw"], tuple(s["snapshots"]), tuple(s["host"]),
                       s["duration_s"], tuple(s["disks"]), tuple(s["notes"]))
    return result, expected


def parsed(case: str) -> dict[str, float]:
    result, _ = load(case)
    return reparse(load_all()[result.workload], result, "tcg").values()


def test_every_workload_has_golden_cases():
    assert {c.split("/")[0] for c in CASES} == {"fio", "dbench", "netperf"} and len(CASES) == 8


@pytest.mark.parametrize("case", CASES)
def test_parsers_give_every_expected_metric_with_unit_and_direction(case):
    result, expected = load(case)
    got = reparse(load_all()[result.workload], result, "tcg").metrics
    assert sorted(got) == sorted(expected)
    for name, metric in expected.items():
        assert got[name].value == pytest.approx(metric.value, rel=1e-9, abs=1e-12), name
        assert (got[name].unit, got[name].direction) == (metric.unit, metric.direction), name


def test_fio_percentiles_of_a_single_job_equal_fios_own():
    m = parsed("fio/seqwrite-64k-one-job")
    assert m["write_iops"] == pytest.approx(5861.569215)
    assert (m["write_clat_p50"], m["write_clat_p99"]) == pytest.approx((1630.208, 16318.464))


def test_fio_reads_and_writes_of_a_mixed_job_are_reported_apart():
    m = parsed("fio/randrw-psync")
    assert (m["read_iops"], m["write_iops"]) == pytest.approx((730.134933, 757.121439))
    assert m["iops"] == pytest.approx(730.134933 + 757.121439)
    assert (m["read_clat_p99"], m["write_clat_p99"]) == pytest.approx((4079.616, 6520.832))


def test_fio_per_disk_metrics_sum_the_threads_of_each_disk_and_the_total_sums_the_disks():
    m = parsed("fio/randread-per-disk")
    assert m["read_iops.sda"] == pytest.approx(884.021901 + 888.055972)
    assert m["read_iops.sdb"] == pytest.approx(882.909816 + 798.902196)
    assert m["read_iops"] == pytest.approx(m["read_iops.sda"] + m["read_iops.sdb"])
    # merged histograms: the total p99 lies between the per-disk ones
    assert m["read_clat_p99.sda"] <= m["read_clat_p99"] <= m["read_clat_p99.sdb"]
    assert {"iostat_r_s.sda", "iostat_r_s.sdb", "iostat_util_pct.sda", "iostat_await.sdb"} <= m.keys()


@pytest.mark.parametrize("case, throughput, max_latency, clients, ops", [
    ("dbench/ext4-2-clients", 26.0836, 171.731, 2, 2729.0 * 3),
    ("dbench/xfs-4-clients", 60.1815, 119.365, 4, 5855.0 * 3),
])
def test_dbench_figures_are_its_throughput_line_and_table(case, throughput, max_latency, clients, ops):
    m = parsed(case)
    assert (m["throughput"], m["max_latency"]) == pytest.approx((throughput, max_latency))
    assert m["ops_rate"] == pytest.approx(ops / 3)
    assert m["loadfile_time"] == pytest.approx(458344 / (ops / 3 / clients) * 1000)


@pytest.mark.parametrize("case, key, value, cpu", [
    ("netperf/stream-small-2-streams", "throughput", 21.73 + 22.11, 100.0),
    ("netperf/maerts-large", "throughput", 97.02, 89.06),
    ("netperf/rr", "transactions", 350.75, 88.95),
])
def test_netperf_sums_streams_and_keeps_its_own_cpu_figures(case, key, value, cpu):
    m = parsed(case)
    assert (m[key], m["local_cpu_util"]) == pytest.approx((value, cpu))


def test_system_metrics_and_costs_follow_from_the_raw_snapshots():
    m = parsed("netperf/rr")
    window = (10261573310 - 6932700210) / 1e9
    busy = ((36 - 18) + (962 - 618) + (125 - 10)) / 100
    host_window = 3168.908081187 - 3165.585032344
    host = (11587758000 - 8901921000) / 1e9
    assert m["guest_cpu_busy"] == pytest.approx(busy)
    assert m["guest_cpu_busy_pct"] == pytest.approx(100 * busy / (2 * window))
    assert m["guest_cpu_us_per_op"] == pytest.approx(busy / window / 350.75 * 1e6)
    assert m["host_cpu_us_per_op"] == pytest.approx(host / host_window / 350.75 * 1e6)
    assert m["host_vcpu_used.0"] == pytest.approx((8320000000 - 6720000000) / 1e9 / host_window)
    assert "host_cycles_per_op" not in m


def test_each_vcpus_busy_time_and_the_busiest_share_follow_from_the_per_cpu_lines():
    """stream-small-2-streams' /proc/stat: cpu0 user 11->27, system 328->495, softirq 6->50;
    cpu1 user 8->25, system 266->429, softirq 6->49 (ticks of 10 ms)."""
    m = parsed("netperf/stream-small-2-streams")
    cpu0, cpu1 = (16 + 167 + 44) / 100, (17 + 163 + 43) / 100
    assert (m["guest_vcpu_busy.0"], m["guest_vcpu_busy.1"]) == pytest.approx((cpu0, cpu1))
    assert m["guest_cpu_busiest_share"] == pytest.approx(100 * cpu0 / (cpu0 + cpu1))


def test_the_ns_cpu_figures_follow_from_the_raw_snapshots():
    """rr's /proc/schedstat rq_cpu_time: cpu0 5171495160 -> 8244022773, cpu1 2389664429 -> 4350297130;
    /proc/stat idle: cpu0 108 -> 134, cpu1 386 -> 518 ticks; libvirt's vCPU threads: 6.72 -> 8.32 s
    and 1.69 -> 2.64 s."""
    m = parsed("netperf/rr")
    window = (10261573310 - 6932700210) / 1e9
    host_window = 3168.908081187 - 3165.585032344
    run = ((8244022773 - 5171495160) + (4350297130 - 2389664429)) / 1e9
    nonidle = 2 * window - ((134 - 108) + (518 - 386)) / 100
    assert m["guest_run"] == pytest.approx(run)
    assert m["guest_run_us_per_op"] == pytest.approx(run / window / 350.75 * 1e6)
    assert m["guest_nonidle_us_per_op"] == pytest.approx(nonidle / window / 350.75 * 1e6)
    assert m["host_vcpu_us_per_op"] == pytest.approx((1.6 + 0.95) / host_window / 350.75 * 1e6)
    assert m["host_vcpu_us_per_op"] < m["host_cpu_us_per_op"]
