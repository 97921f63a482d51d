from pathlib import Path

import pytest

from orchestrator.cli import main
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
        (["frob"], "vmbisect: argument command: invalid choice: 'frob' (choose from 'doctor', 'boot', 'cleanup', "
                   "'build', 'measure', 'bisect', 'compare', 'resume', 'status', 'report', 'demo', "
                   "'verify')"),
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
    store = f"sqlite:///{tmp_path / 'v.db'}"
    assert main(["resume", "7", "--store", store]) == 2
    assert "no campaign with id 7" in capsys.readouterr().err
    assert main(["report", "1", "--format", "pdf", "--store", store]) == 2
    assert capsys.readouterr().err == "vmbisect: format: invalid value 'pdf'; valid choices: md, html, json\n"


def test_status_lists_stored_campaigns(tmp_path, capsys):
    from orchestrator.store import Store

    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("scsi-mq", {})
    store.set_state(cid, "done", {"culprit": "d5038a13eca72fb216c07eb717169092e92284f1"})
    assert main(["status", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    out = capsys.readouterr().out
    assert "scsi-mq" in out and "done" in out and "d5038a13eca7" in out


def test_the_cli_starts_without_importing_scipy_or_numpy():
    import subprocess
    import sys

    code = "import sys, orchestrator.cli; print(sorted(m for m in ('scipy', 'numpy') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
