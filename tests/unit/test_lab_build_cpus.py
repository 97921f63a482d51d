"""The lab's `build_cpus` (build-ahead, docs/campaign.md "Build ahead"): off by default, and
refused in one line wherever builds could share cores with guests."""

import os

import pytest

from orchestrator.errors import UserError
from orchestrator.hosts.labfile import local_lab, parse_lab

REMOTE = {"name": "big1", "ssh": "perf@big1.lab", "key": "/keys/lab", "slots": [{"cpus": "0-1"}]}


def test_build_ahead_is_off_without_a_lab_file_and_without_the_key():
    assert local_lab().build_cpus == ()
    assert parse_lab({"hosts": [REMOTE]}).build_cpus == ()


def test_build_cpus_beside_pinned_local_slots_and_remote_hosts():
    last = (os.cpu_count() or 1) - 1
    if last < 1:
        pytest.skip("needs two CPUs: one for the guest slot, one for builds")
    lab = parse_lab({"hosts": [{"name": "here", "slots": [{"cpus": 0}]}, REMOTE], "build_cpus": f"1-{last}"})
    assert lab.build_cpus == tuple(range(1, last + 1))  # a remote host's CPUs are another machine's


@pytest.mark.parametrize("data, message", [
    ({"hosts": [{"name": "here"}], "build_cpus": 1},
     r"^build_cpus: hosts\[0\]\.slots\[0\] has no cpus, so its guests may run on any core"),
    ({"hosts": [{"name": "here", "slots": [{"cpus": 0}, {"cpus": 1}]}], "build_cpus": "1"},
     r"^build_cpus: host CPU 1 belongs to hosts\[0\]\.slots\[1\]; builds never share cores with guests$"),
    ({"hosts": [{"name": "here", "slots": [{"cpus": 0}]}], "build_cpus": 4096},
     r"^build_cpus: host CPU 4096 does not exist on this machine \(CPUs 0-\d+\)$"),
    ({"hosts": [REMOTE], "build_cpus": "x"}, r"^build_cpus: expected host CPUs like 2-3, 0,2 or \[4, 5\]"),
])
def test_build_cpus_that_would_share_cores_or_do_not_exist_are_one_line(data, message):
    with pytest.raises(UserError, match=message):
        parse_lab(data)
