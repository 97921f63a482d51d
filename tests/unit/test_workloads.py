"""Workload definitions, parameter checking, job files and argument lists, summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

import workloads.dbench as dbench
import workloads.fio as fio
import workloads.netperf as netperf
from orchestrator.cli import main
from orchestrator.errors import UserError, WorkloadFailed
from orchestrator.workloads.definition import load_all, resolve
from orchestrator.workloads.runner import metric_def

WORKLOADS = load_all()
# Any readable file as the kernel: these command lines are refused before it is read.
KERNEL = ["measure", "--kernel", str(Path(__file__).resolve()), "--accel", "tcg"]


def test_the_three_workloads_and_the_seed_presets_load():
    assert set(WORKLOADS) == {"fio", "dbench", "netperf"}
    presets = {p for w in WORKLOADS.values() for p in w.presets}
    assert {"fio-seqread-4k", "fio-seqwrite-64k", "fio-randread-4k", "dbench", "netperf-tcp-stream-small",
            "netperf-tcp-stream-large", "netperf-tcp-maerts-small", "netperf-tcp-maerts-large"} <= presets


def test_every_preset_resolves_and_every_defined_metric_has_a_direction():
    for w in WORKLOADS.values():
        for name in w.presets:
            assert resolve(WORKLOADS, name, []).points
        assert all(m.direction in ("higher", "lower", "none") for m in w.metrics.values())


def test_preset_values_override_defaults_and_params_override_presets():
    plan = resolve(WORKLOADS, "fio-seqread-64k", ["iodepth=32", "direct=false"])
    (point,) = plan.points
    assert (point["rw"], point["bs"], point["iodepth"], point["direct"], point["runtime"]) == ("read", 65536, 32,
                                                                                               False, 5)


def test_a_list_value_sweeps_one_parameter():
    plan = resolve(WORKLOADS, "fio-randread-4k", [])
    assert plan.swept == "numjobs" and [p["numjobs"] for p in plan.points] == [1, 4, 8, 16, 32, 64]
    assert plan.point_label(plan.points[1]) == "numjobs=4"
    assert [p["clients"] for p in resolve(WORKLOADS, "dbench", ["clients=1,3"]).points] == [1, 3]


@pytest.mark.parametrize("params, message", [
    (["bs=banana"], ("param: fio bs: invalid value 'banana'; valid choices: a size in bytes like 512, 4k, 64k, 1m "
                     "within 512..64m")),
    (["iodepth=-4"], "param: fio iodepth: invalid value '-4'; valid choices: an integer within 1..1024"),
    (["depth=4"], ("param: fio parameter: invalid value 'depth'; valid choices: rw, bs, iodepth, numjobs, "
                   "ioengine, direct, ramp_time, runtime, layout, disks, rate_iops")),
    (["ioengine=sync"], "param: fio ioengine: invalid value 'sync'; valid choices: libaio, io_uring, psync"),
    (["direct=maybe"], "param: fio direct: invalid value 'maybe'; valid choices: true, false"),
    (["disks=some"], "param: fio disks: invalid value 'some'; valid choices: all, or an integer within 1..1024"),
    (["bs"], "param: expected key=value, got 'bs'"),
    (["bs=4k,8k", "iodepth=1,2"], "param: only one parameter may take a list of values, got bs, iodepth"),
])
def test_bad_parameters_are_one_line_errors_naming_the_valid_choices(params, message):
    with pytest.raises(UserError) as err:
        resolve(WORKLOADS, "fio", params)
    assert str(err.value) == message


def test_an_unknown_workload_names_every_workload_and_preset():
    with pytest.raises(UserError, match=r"^workload: invalid value 'fiio'; valid choices: dbench, dbench-xfs, fio, "):
        resolve(WORKLOADS, "fiio", [])


@pytest.mark.parametrize("argv, expected", [
    (["--workload", "fio", "--disks", "2", "--param", "bs=banana"],
     ("vmbisect: param: fio bs: invalid value 'banana'; valid choices: a size in bytes like 512, 4k, 64k, 1m within "
      "512..64m")),
    (["--workload", "fio", "--disks", "2", "--param", "iodepth=-1"],
     "vmbisect: param: fio iodepth: invalid value '-1'; valid choices: an integer within 1..1024"),
    (["--workload", "netperf", "--param", "test=UDP_STREAM"],
     "vmbisect: param: netperf test: invalid value 'UDP_STREAM'; valid choices: TCP_STREAM, TCP_MAERTS, TCP_RR"),
    (["--workload", "dbench"], "vmbisect: disks: dbench needs at least 1 data disk(s); add --disks N"),
    (["--workload", "fio", "--disks", "1", "--reps", "0"],
     "vmbisect: measure: argument --reps: expected a whole number from 1 to 1000, got '0'"),
    (["--workload", "fio", "--disks", "2", "--param", "disks=3"],
     "vmbisect: param: fio disks=3 but the guest gets 2 (--disks); valid choices: all, 1..2"),
    (["--workload", "dbench", "--disks", "2", "--param", "disk=2"],
     "vmbisect: param: dbench disk=2 but the guest gets 2 (--disks); valid choices: 0..1"),
])
def test_measure_rejects_bad_input_in_one_line_before_any_guest_starts(argv, expected, capsys, monkeypatch):
    def no_launcher(*_a, **_k):
        raise AssertionError("a guest was about to start")

    monkeypatch.setattr("orchestrator.hosts.launchers.host_launcher", no_launcher)
    assert main(KERNEL + argv) == 2
    assert capsys.readouterr().err == expected + "\n"


def test_fio_job_has_one_section_per_disk_or_one_spanning_every_disk():
    (point,) = resolve(WORKLOADS, "fio-seqwrite-64k", []).points
    job = fio.render_job(point, ["sda", "sdb"])
    assert job.startswith("[global]\nioengine=libaio\ndirect=1\nrw=write\nbs=65536\niodepth=16\nnumjobs=1\n")
    assert job.endswith("[sda]\nfilename=/dev/sda\n\n[sdb]\nfilename=/dev/sdb\n")
    (one,) = resolve(WORKLOADS, "fio", ["layout=one-job"]).points
    assert fio.render_job(one, ["vda", "vdb"]).endswith("[all]\nfilename=/dev/vda:/dev/vdb\n")


def test_fio_rate_iops_caps_each_job_only_when_it_is_set():
    (free,) = resolve(WORKLOADS, "fio-seqread-64k", []).points
    (capped,) = resolve(WORKLOADS, "fio-seqread-64k", ["rate_iops=40"]).points
    assert "rate_iops" not in fio.render_job(free, ["sda"])
    assert "\ntime_based=1\nrate_iops=40\n\n[sda]\n" in fio.render_job(capped, ["sda"])


def test_fio_disk_selection_takes_the_first_n_and_refuses_more_than_exist():
    assert fio.select_disks(["sdb", "sda", "sr0", "sdc"], 2) == ["sda", "sdb"]
    assert fio.select_disks(["vda"], "all") == ["vda"]
    with pytest.raises(WorkloadFailed, match="disks=3 but the guest has 1"):
        fio.select_disks(["vda"], 3)


def test_fio_percentile_follows_fios_running_count_rule():
    bins = {100: 50, 200: 40, 300: 9, 400: 1}
    assert [fio.percentile(bins, p) for p in (50, 90, 99, 99.9)] == [100.0, 200.0, 300.0, 400.0]


def test_fio_job_errors_and_garbage_are_workload_failures():
    with pytest.raises(WorkloadFailed, match="not JSON"):
        fio.parse("fio: engine libaio not loadable")
    with pytest.raises(WorkloadFailed, match="sda: error 5"):
        fio.parse('{"jobs": [{"jobname": "sda", "error": 5}]}')


def test_dbench_makes_a_fresh_filesystem_and_runs_the_loadfile_by_argv():
    (point,) = resolve(WORKLOADS, "dbench-xfs", ["clients=3"]).points
    assert dbench.setup_argvs(point, "/dev/sdb") == [
        ["mkdir", "-p", "/mnt/vmbisect"], ["mkfs.xfs", "-q", "-f", "/dev/sdb"],
        ["mount", "-t", "xfs", "/dev/sdb", "/mnt/vmbisect"]]
    assert dbench.argv(point) == ["dbench", "-t", "5", "-D", "/mnt/vmbisect", "-c", "/usr/share/dbench/client.txt",
                                  "3"]
    assert dbench.loadfile_ops("# comment\nMkdir x\n\nClose 1\n") == 2


def test_netperf_argv_carries_socket_and_message_sizes_and_rr_sizes():
    (small,) = resolve(WORKLOADS, "netperf-tcp-stream-small", ["streams=8"]).points
    argv = netperf.run_argv(small)
    assert argv[:4] == ["sh", netperf.PARALLEL_PATH, "8", netperf.OUTPUT_PREFIX]
    assert argv[4:15] == ["netperf", "-4", "-P", "0", "-H", "127.0.0.1", "-t", "TCP_STREAM", "-l", "5", "-c"]
    assert argv[16:23] == ["--", "-s", "8192", "-S", "8192", "-m", "256"]
    (rr,) = resolve(WORKLOADS, "netperf", ["test=TCP_RR", "request_size=64", "response_size=1k"]).points
    assert "-r" in netperf.netperf_argv(rr) and "64,1024" in netperf.netperf_argv(rr)
    assert "-s" not in netperf.netperf_argv(rr)


def test_netperf_stream_without_result_is_a_workload_failure():
    (point,) = resolve(WORKLOADS, "netperf", []).points
    with pytest.raises(WorkloadFailed, match="stream 0: no result: establish_control could not"):
        netperf.parse(["establish_control could not establish the control connection\n"], point)


def test_instance_metrics_take_their_definition_from_the_base_name():
    fio_def = WORKLOADS["fio"]
    assert metric_def(fio_def, "read_clat_p99.9").unit == "us"
    assert metric_def(fio_def, "read_clat_p99.9.sda").direction == "lower"
    assert metric_def(fio_def, "iostat_await.sdc").unit == "ms"
    with pytest.raises(WorkloadFailed):
        metric_def(fio_def, "no_such_metric")
