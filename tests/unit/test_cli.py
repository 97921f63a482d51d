import pytest

from orchestrator.cli import main
from orchestrator.doctor import check_free_disk, check_tool


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["boot", "--kernel", "/k", "--controller", "ide", "--", "ls"],
         "vmbisect: controller: invalid value 'ide'; valid choices: virtio-blk, virtio-scsi, lsisas1068, lsisas1078, lsilogic"),
        (["boot", "--kernel", "/k", "--vcpus", "0", "--", "ls"], "vmbisect: vcpus: must be at least 1, got 0"),
        (["boot", "--kernel", "/k", "--cache", "maybe", "--", "ls"],
         "vmbisect: cache: invalid value 'maybe'; valid choices: none, writeback, writethrough, directsync, unsafe"),
        (["frob"], "vmbisect: argument command: invalid choice: 'frob' (choose from 'doctor', 'boot', 'cleanup', 'build', 'measure')"),
        (["boot", "--kernel", "/k", "--vcpus", "many", "--", "ls"],
         "vmbisect: boot: argument --vcpus: invalid int value: 'many'"),
        (["boot", "--kernel", "/k", "--topology", "2x8", "--", "ls"],
         "vmbisect: topology: expected SOCKETS:CORES:THREADS with positive numbers, e.g. 2:4:2, got '2x8'"),
        (["boot", "--kernel", "/k", "--vcpus", "16", "--topology", "2:4:1", "--", "ls"],
         "vmbisect: topology: 2 sockets x 4 cores x 1 threads = 8 CPUs, but vcpus is 16"),
        (["boot", "--kernel", "/k", "--vcpus", "2", "--pin", "0;1", "--", "ls"],
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
    from orchestrator.commands.vmopts import parse_pinning, parse_topology

    assert parse_topology("2:4:2").cpus == 16
    assert parse_pinning("0,1") == ("0", "1") and parse_pinning("0-1/2,3") == ("0-1", "2,3")
