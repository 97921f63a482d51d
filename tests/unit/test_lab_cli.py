"""`--lab FILE [--host NAME]` on boot, measure, compare and doctor: bad input is one line, exit 2,
before any host is contacted."""

from pathlib import Path

import pytest
import yaml

from orchestrator.cli import main

KERNEL = str(Path(__file__).resolve())  # any readable file: refused before the kernel is read
LAB = {"hosts": [{"name": "big1", "ssh": "root@192.0.2.1", "key": "/nonexistent/key",
                  "slots": [{"cpus": "0-1"}, {"cpus": "2-3"}]}]}


@pytest.fixture
def lab(tmp_path):
    def write(data=LAB):
        path = tmp_path / "lab.yaml"
        path.write_text(yaml.safe_dump(data))
        return str(path)
    return write


def test_host_without_a_lab_file_is_refused(capsys):
    assert main(["boot", "--kernel", KERNEL, "--host", "big1", "--", "true"]) == 2
    assert capsys.readouterr().err == "vmbisect: host: needs --lab FILE naming the hosts\n"


def test_a_host_the_lab_does_not_list_names_the_valid_ones(lab, capsys):
    assert main(["measure", "--kernel", KERNEL, "--workload", "fio", "--disks", "1", "--lab", lab(),
                 "--host", "big2"]) == 2
    assert capsys.readouterr().err == "vmbisect: host: invalid value 'big2'; valid choices: big1\n"


def test_slots_sharing_a_core_are_refused_by_every_command(lab, capsys):
    bad = lab({"hosts": [{**LAB["hosts"][0], "slots": [{"cpus": "0-1"}, {"cpus": "1-2"}]}]})
    for argv in (["doctor", "--lab", bad], ["boot", "--kernel", KERNEL, "--lab", bad, "--", "true"]):
        assert main(argv) == 2
        assert capsys.readouterr().err == ("vmbisect: hosts[0].slots[1].cpus: host CPU 1 already belongs to "
                                           "slot 0; slots never share cores\n")


def test_pinning_a_guest_that_a_slot_pins_is_refused_before_connecting(lab, capsys):
    assert main(["boot", "--kernel", KERNEL, "--lab", lab(), "--vcpus", "2", "--pin", "5,6", "--", "true"]) == 2
    assert capsys.readouterr().err == ("vmbisect: pin: host big1 slot 0 pins the guest to host CPUs 0,1; "
                                       "drop --pin (or guest.pinning)\n")


def test_a_missing_lab_file_is_one_line(tmp_path, capsys):
    assert main(["doctor", "--lab", str(tmp_path / "none.yaml")]) == 2
    assert capsys.readouterr().err.startswith("vmbisect: lab: cannot read ")


def test_compare_refuses_a_bad_lab_or_host_in_one_line_and_records_nothing(lab, tmp_path, capsys):
    from orchestrator.store import Store

    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    compare = ["compare", "--workload", "fio", "--disks", "1", "--kernel", KERNEL, "--variant", "a=nice:0",
               "--variant", "b=nice:1", "--store", store]
    assert main([*compare, "--lab", lab(), "--host", "big2"]) == 2
    assert capsys.readouterr().err == "vmbisect: host: invalid value 'big2'; valid choices: big1\n"
    assert main([*compare, "--host", "big1"]) == 2
    assert capsys.readouterr().err == "vmbisect: host: needs --lab FILE naming the hosts\n"
    assert Store(store).campaigns() == []


def test_a_campaign_whose_lab_names_no_such_host_is_refused_before_it_is_recorded(lab, tmp_path, capsys):
    from orchestrator.store import Store

    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({
        "name": "on-big2", "repository": str(tmp_path), "good": "v1", "bad": "v2", "workload": "fio",
        "metric": {"name": "read_iops", "threshold": "-10%"}, "guest": {"disks": {"count": 1}},
        "lab": lab(), "host": "big2"}))
    assert main(["bisect", str(campaign), "--store", store]) == 2
    assert capsys.readouterr().err == "vmbisect: host: invalid value 'big2'; valid choices: big1\n"
    assert Store(store).campaigns() == []
