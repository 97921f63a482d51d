from pathlib import Path

import pytest

from orchestrator.cli import COMMANDS, main
from orchestrator.doctor import check_free_disk, check_tool

# Any readable file: these command lines are refused before the kernel is read.
KERNEL = str(Path(__file__).resolve())


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["boot", "--kernel", KERNEL, "--controller", "ide", "--", "ls"],
         "vmbisect: controller: invalid value 'ide'; valid choices: virtio-blk, virtio-scsi, lsisas1068, lsisas1078, lsilogic"),
        (["boot", "--kernel", KERNEL, "--vcpus", "0", "--", "ls"], "vmbisect: vcpus: must be at least 1, got 0"),
        (["boot", "--kernel", KERNEL, "--cache", "maybe", "--", "ls"],
         "vmbisect: cache: invalid value 'maybe'; valid choices: none, writeback, writethrough, directsync, unsafe"),
        (["frob"], "vmbisect: argument command: invalid choice: 'frob' (choose from "
                   f"{', '.join(map(repr, COMMANDS))})"),
        (["compare", "--workload", "fio", "--kernel", KERNEL, "--disks", "1", "--variant", "a=sched:none",
          "--variant", "b=sched:cfq"],
         "vmbisect: variant b: sched: invalid value 'cfq'; valid choices: none, mq-deadline, bfq, kyber"),
        (["compare", "--workload", "fio", "--kernel", KERNEL, "--variant", "a=nice:0", "--variant", "b=nice:1",
          "--report", "out.pdf"], "vmbisect: report: invalid value '.pdf'; valid choices: .md, .html, .json"),
        (["boot", "--kernel", KERNEL, "--vcpus", "many", "--", "ls"],
         "vmbisect: boot: argument --vcpus: invalid int value: 'many'"),
        (["boot", "--kernel", KERNEL, "--topology", "2x8", "--", "ls"],
         "vmbisect: topology: expected SOCKETS:CORES:THREADS with positive numbers, e.g. 2:4:2, got '2x8'"),
        (["boot", "--kernel", KERNEL, "--vcpus", "16", "--topology", "2:4:1", "--", "ls"],
         "vmbisect: topology: 2 sockets x 4 cores x 1 threads = 8 CPUs, but vcpus is 16"),
        (["boot", "--kernel", KERNEL, "--vcpus", "2", "--pin", "0;1", "--", "ls"],
         "vmbisect: pin: expected host CPU sets like 0,1,2,3 or 0-1/2-3, got '0;1'"),
    ],
)
def test_bad_input_is_one_line_naming_the_field_before_any_guest_starts(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == expected + "\n"


def test_missing_tool_check_names_the_fix():
    check = check_tool("no-such-tool-vmbisect", "some-package")
    assert not check.ok and check.essential and "apt-get install some-package" in check.fix


def test_free_disk_check_walks_up_to_an_existing_directory(tmp_path):
    check = check_free_disk(tmp_path / "not" / "yet")
    assert str(tmp_path) in check.detail and "GiB free" in check.detail


def test_topology_and_pinning_options_reach_the_spec():
    from orchestrator.vm.options import parse_pinning, parse_topology

    assert parse_topology("2:4:2").cpus == 16
    assert parse_pinning("0,1") == ("0", "1") and parse_pinning("0-1/2,3") == ("0-1", "2,3")


def test_campaign_errors_are_one_line_before_anything_is_built(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("name: x\nrepository: .\ngood: a\nbad: b\nworkload: fio\nmetric: {name: read_iops, threshold: -10%}\n"
                   "guest: {disks: {controller: floppy}}\n")
    assert main(["bisect", str(bad), "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 2
    assert capsys.readouterr().err == ("vmbisect: guest.disks.controller: invalid value 'floppy'; valid choices: "
                                       "virtio-blk, virtio-scsi, lsisas1068, lsisas1078, lsilogic\n")


def test_unknown_campaign_id_and_report_format_are_user_errors(tmp_path, capsys):
    from orchestrator.store import Store

    store = f"sqlite:///{tmp_path / 'v.db'}"
    Store(store)
    assert main(["resume", "7", "--store", store]) == 2
    assert "no campaign with id 7" in capsys.readouterr().err
    assert main(["report", "1", "--format", "pdf", "--store", store]) == 2
    assert capsys.readouterr().err == "vmbisect: format: invalid value 'pdf'; valid choices: md, html, json\n"


@pytest.mark.parametrize("argv", [["report", "1"], ["status"], ["status", "1"], ["resume", "1"], ["cancel", "1"],
                                  ["requeue", "1"]], ids=lambda a: " ".join(a))
def test_a_command_reading_a_store_that_is_not_there_says_so_and_makes_none(tmp_path, capsys, argv):
    missing = tmp_path / "typo" / "v.db"
    assert main([*argv, "--store", f"sqlite:///{missing}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"vmbisect: store: no database at {missing}; give --store") and err.count("\n") == 1, err
    assert not missing.parent.exists()


def stored_bisection(tmp_path):  # type: ignore[no-untyped-def]
    """A store holding one finished bisection: 2 boots of 3 runs of its metric on its culprit, a
    skipped step, and samples of another metric that the counts leave out."""
    from orchestrator.campaign.file import parse_campaign
    from orchestrator.decisions import Basis, Decided, Role
    from orchestrator.kinds.specs import BisectSpec
    from orchestrator.kinds.table import record
    from orchestrator.store import Store

    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    raw = {"name": "scsi-mq", "repository": str(tmp_path), "good": "v1", "bad": "v2", "workload": "fio",
           "metric": {"name": "read_iops", "threshold": "-10%"}}
    cid = record(store, "scsi-mq", BisectSpec.of(raw, parse_campaign(raw)))
    culprit = "d5038a13eca72fb216c07eb717169092e92284f1"
    for _ in range(2):
        boot = store.start_boot(cid, culprit)
        store.end_boot(boot, "ok", 1.0, host="local")
        for value in (100.0, 101.0, 99.0):
            store.add_run(cid, boot, culprit, {"read_iops": value, "read_lat": 1.0, "sys_cpu": 2.0}, {})
    store.add_decision(cid, Decided(culprit, Role.STEP, "bad", "2 boots at 98% of the gap", 0.99, 6))
    store.add_decision(cid, Decided("e" * 40, Role.STEP, "skip", "build failed: x", 1.0, 0, Basis.BUILD_FAILED))
    store.set_state(cid, "done", {"outcome": "found", "culprit": culprit, "confidence_text": "confidence 99.0%"})
    return store, cid


def test_status_lists_campaigns_with_boots_and_runs_of_their_metric_only(tmp_path, capsys):
    stored_bisection(tmp_path)
    assert main(["status", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    out = capsys.readouterr().out
    assert "scsi-mq" in out and "done" in out and "d5038a13eca7" in out
    row = next(line for line in out.splitlines() if "scsi-mq" in line)
    assert row.split()[4:7] == ["2", "2", "6"]  # steps, boots, runs (not 18 samples)


def test_status_of_one_campaign_shows_its_steps_and_boots_and_no_nan(tmp_path, capsys):
    import re

    stored_bisection(tmp_path)
    assert main(["status", "1", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    out = capsys.readouterr().out
    assert "decisions" in out and "    reason: build failed: x" in out and "nan" not in out
    assert re.search(r"^local\s+ok\s+2$", out, re.M), out


def test_status_since_lists_what_ended_and_where_its_report_is(tmp_path, capsys):
    stored_bisection(tmp_path)
    assert main(["status", "--since", "12h", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    out = capsys.readouterr().out
    assert "d5038a13eca7" in out and "vmbisect report 1" in out


def test_a_bad_since_is_a_one_line_error_naming_the_option(capsys):
    assert main(["status", "--since", "yesterday"]) == 2
    err = capsys.readouterr().err
    assert "--since" in err and "expected an age like 30m, 12h or 2d" in err and len(err.strip().splitlines()) == 1


def test_the_cli_starts_without_importing_scipy_or_numpy():
    import subprocess
    import sys

    code = "import sys, orchestrator.cli; print(sorted(m for m in ('scipy', 'numpy') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
