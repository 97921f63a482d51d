"""Real `vmbisect measure` runs of fio, dbench and netperf in libvirt guests (TCG here): every
workload produces its metrics, system figures and CPU cost per operation, with raw output kept."""

from __future__ import annotations

import json

import pytest

from orchestrator.cli import main

pytestmark = pytest.mark.vm


def measure(capsys, distro, *args: str) -> dict:
    argv = ["measure", "--kernel", str(distro.image), "--initrd-modules-from", distro.release, "--accel", "tcg",
            "--reps", "2", "--json", *args]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def common_checks(doc: dict, main_metric: str) -> None:
    assert len(doc["samples"]) == 2
    for s in doc["samples"]:
        m = {k: v["value"] for k, v in s["metrics"].items()}
        assert m[main_metric] > 0
        assert m["guest_cpu_us_per_op"] > 0 and m["host_cpu_us_per_op"] > 0 and m["guest_cpu_ns_per_byte"] > 0
        assert m["host_cpus_used"] > 0 and m["ctxt_per_s"] > 0 and "host_vcpu_used.0" in m
        assert s["snapshots"][0]["files"]["/proc/stat"] and s["host"][1]["cpu_time"] > s["host"][0]["cpu_time"]
    summary = {row["metric"]: row for row in doc["summary"]}
    assert summary[main_metric]["n"] == 2 and summary[main_metric]["min"] <= summary[main_metric]["mean"]


def test_fio_on_two_disks_gives_iops_latency_per_disk_iostat_and_cost(launcher, distro, capsys):
    doc = measure(capsys, distro, "--workload", "fio-seqread-4k", "--disks", "2", "--disk-size", "128",
                  "--controller", "lsisas1078", "--param", "runtime=2")
    common_checks(doc, "read_iops")
    m = {k: v["value"] for k, v in doc["samples"][0]["metrics"].items()}
    assert m["read_iops.sda"] > 0 and m["read_iops.sdb"] > 0 and m["read_clat_p99"] >= m["read_clat_p50"] > 0
    assert m["iostat_r_s.sda"] > 0 and 0 < m["iostat_util_pct.sdb"] <= 100
    assert '"jobs"' in doc["samples"][0]["raw"]["fio.json"] and "[sdb]" in doc["samples"][0]["raw"]["fio.job"]


def test_dbench_twice_on_one_guest_gives_throughput_loadfile_time_and_cost(launcher, distro, capsys):
    doc = measure(capsys, distro, "--workload", "dbench", "--disks", "1", "--disk-size", "512",
                  "--param", "clients=2", "--param", "runtime=3")
    common_checks(doc, "throughput")
    m = {k: v["value"] for k, v in doc["samples"][1]["metrics"].items()}
    assert m["loadfile_time"] > 0 and m["max_latency"] > 0 and m["iostat_w_s.sda"] > 0
    assert "Throughput" in doc["samples"][1]["raw"]["dbench.txt"]


def test_netperf_streams_over_loopback_with_netperfs_own_cpu_figures(launcher, distro, capsys):
    doc = measure(capsys, distro, "--workload", "netperf-tcp-stream-large", "--param", "streams=2",
                  "--param", "runtime=2")
    common_checks(doc, "throughput")
    m = {k: v["value"] for k, v in doc["samples"][0]["metrics"].items()}
    assert m["local_cpu_util"] > 0 and m["remote_sd"] > 0
    assert {"netperf.0", "netperf.1"} <= doc["samples"][0]["raw"].keys()
