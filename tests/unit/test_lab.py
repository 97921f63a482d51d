"""The lab file parser: defaults, the derived libvirt URI, slots that never share cores, and
one-line errors naming the field."""

from pathlib import Path

import pytest
import yaml

from orchestrator.errors import UserError
from orchestrator.hosts.labfile import DEFAULT_WORK_DIR, LOCAL_URI, Slot, load_lab, local_lab, parse_lab

REMOTE = {"name": "big1", "ssh": "perf@big1.lab:2222", "key": "/keys/lab", "known_hosts": "/keys/known",
          "slots": [{"cpus": "2-3"}, {"cpus": [4, 5]}], "disk_dir": "/mnt/fast", "work_dir": "/srv/vmb"}


def lab(*hosts):
    return parse_lab({"hosts": list(hosts)})


def test_no_lab_file_is_one_local_host_with_one_unpinned_slot():
    only = local_lab().hosts
    assert len(only) == 1 and only[0].name == "local" and only[0].uri == LOCAL_URI
    assert only[0].slots == (Slot(0),) and not only[0].remote and only[0].work_dir is None


def test_remote_host_fields_and_the_derived_libssh_uri():
    h = lab(REMOTE).hosts[0]
    assert (h.ssh.user, h.ssh.host, h.ssh.port) == ("perf", "big1.lab", 2222)
    assert h.ssh.key == Path("/keys/lab") and h.ssh.known_hosts == Path("/keys/known")
    assert h.uri == ("qemu+libssh://perf@big1.lab:2222/system?keyfile=/keys/lab&known_hosts=/keys/known"
                     "&known_hosts_verify=normal&sshauth=privkey")
    assert [s.cpus for s in h.slots] == [(2, 3), (4, 5)]
    assert h.disk_dir == Path("/mnt/fast") and h.work_dir == Path("/srv/vmb")


def test_remote_defaults_root_port_22_user_known_hosts_and_var_tmp():
    h = lab({"name": "b", "ssh": "b.lab", "key": "/k"}).hosts[0]
    assert str(h.ssh) == "root@b.lab:22" and h.work_dir == DEFAULT_WORK_DIR and h.disk_dir is None
    assert h.ssh.known_hosts == Path("~/.ssh/known_hosts").expanduser() and h.slots == (Slot(0),)


def test_key_paths_with_special_characters_are_quoted_in_the_uri():
    h = lab({**REMOTE, "key": "/keys/a b&c=d"}).hosts[0]
    assert "keyfile=/keys/a%20b%26c%3Dd&" in h.uri


def test_an_explicit_uri_is_kept_as_given():
    h = lab({**REMOTE, "uri": "qemu+tls://big1.lab/system"}).hosts[0]
    assert h.uri == "qemu+tls://big1.lab/system"


def test_relative_key_resolves_against_the_lab_files_directory(tmp_path):
    f = tmp_path / "lab.yaml"
    f.write_text(yaml.safe_dump({"hosts": [{"name": "b", "ssh": "root@b", "key": "keys/id"}]}))
    assert load_lab(f).hosts[0].ssh.key == tmp_path / "keys" / "id"


def test_slot_pinning_one_to_one_or_the_whole_set():
    slot = Slot(0, (2, 3))
    assert slot.pinning(2) == ("2", "3")
    assert slot.pinning(4) == ("2,3",) * 4
    assert Slot(0).pinning(4) == ()


@pytest.mark.parametrize("host, message", [
    ({**REMOTE, "slots": [{"cpus": "2-3"}, {"cpus": "3-4"}]},
     "hosts[0].slots[1].cpus: host CPU 3 already belongs to slot 0; slots never share cores"),
    ({**REMOTE, "slots": [{"cpus": "2-3"}, {}]}, "hosts[0].slots[1].cpus: missing; with more than one slot"),
    ({**REMOTE, "slots": [{"cpus": "3-1"}]}, "hosts[0].slots[0].cpus: range '3-1' runs backwards"),
    ({**REMOTE, "slots": [{"cpus": "x"}]}, "hosts[0].slots[0].cpus: expected host CPUs like 2-3"),
    ({**REMOTE, "slots": [{"cpus": "1,1"}]}, "hosts[0].slots[0].cpus: a host CPU is listed twice"),
    ({**REMOTE, "slots": [{"cores": 2}]}, "hosts[0].slots[0].cores: unknown key; valid keys: cpus"),
    ({**REMOTE, "slots": 2}, "hosts[0].slots: expected a list of slots"),
    ({**REMOTE, "ssh": "a b"}, "hosts[0].ssh: expected user@host[:port], got 'a b'"),
    ({**REMOTE, "ssh": "root@h:70000"}, "hosts[0].ssh: port must be 1-65535"),
    ({k: v for k, v in REMOTE.items() if k != "key"}, "hosts[0].key: missing (required with ssh"),
    ({**REMOTE, "work_dir": "rel/dir"}, "hosts[0].work_dir: a directory on a remote host must be absolute"),
    ({"name": "l", "key": "/k"}, "hosts[0].key: only for a host reached over ssh"),
    ({"ssh": "h", "key": "/k"}, "hosts[0].name: missing (required)"),
    ({**REMOTE, "name": "bad name"}, "hosts[0].name: 'bad name' must be 1-32 letters"),
    ({**REMOTE, "port": 22}, "hosts[0].port: unknown key; valid keys: name, ssh, key"),
])
def test_bad_host_is_one_line_naming_the_field(host, message):
    with pytest.raises(UserError) as err:
        lab(host)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_host_names_are_unique_and_hosts_are_required():
    with pytest.raises(UserError, match=r"^hosts\[1\].name: 'big1' is used by an earlier host"):
        lab(REMOTE, REMOTE)
    with pytest.raises(UserError, match=r"^hosts: expected a list of one or more hosts"):
        parse_lab({"hosts": []})
    with pytest.raises(UserError, match=r"^machines: unknown key; valid keys: hosts"):
        parse_lab({"machines": []})


def test_unknown_host_name_lists_the_valid_ones():
    with pytest.raises(UserError, match=r"^host: invalid value 'nope'; valid choices: big1, local$"):
        lab(REMOTE, {"name": "local"}).host("nope")


def test_unreadable_or_broken_lab_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="^lab: cannot read"):
        load_lab(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: [\n")
    with pytest.raises(UserError, match=r"^lab: .* is not valid YAML at line"):
        load_lab(bad)


def test_a_campaign_gets_every_slot_of_the_lab_alone_and_one_slot_when_a_worker_runs_several():
    import dataclasses

    from orchestrator import wiring
    from orchestrator.campaign.file import parse_campaign
    from orchestrator.campaign.workload import choose_workload
    from orchestrator.hosts.pool import GuestPool

    two = lab(REMOTE, {"name": "local", "slots": [{"cpus": "0"}]})
    campaign = parse_campaign({"name": "c", "repository": "/src/linux", "good": "a", "bad": "b",
                               "workload": "fio-seqread-4k", "metric": {"name": "read_iops", "threshold": "-10%"}})
    choice = choose_workload(campaign)
    never = lambda host: pytest.fail("no guest launches while slots are counted")  # noqa: E731
    alone = wiring.lab_slots(campaign, choice, GuestPool(two, never))
    assert [m.host for m in alone] == ["big1", "big1", "local"]
    assert wiring.lab_slots(campaign, choice, GuestPool(dataclasses.replace(two, campaign_slots=1), never)) == []
    assert len(wiring.lab_slots(campaign, choice, GuestPool(dataclasses.replace(two, campaign_slots=2), never))) == 2


def test_a_worker_with_several_runners_gives_each_campaign_one_slot_and_with_one_runner_the_whole_lab(
        tmp_path, monkeypatch):
    import signal

    from orchestrator import cli
    from orchestrator.queue import worker

    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump({"hosts": [{"name": "local", "slots": [{"cpus": "0"}, {"cpus": "1"}]}]}))
    seen = []
    monkeypatch.setattr(signal, "signal", lambda *_args: None)  # the worker's SIGTERM handler stays out of pytest
    monkeypatch.setattr(worker, "run_worker", lambda store, config, runners: seen.append((runners, config.campaign_slots)) or 0)
    store = f"sqlite:///{tmp_path / 'q.db'}"
    assert cli.main(["worker", "--lab", str(path), "--store", store]) == 0
    assert cli.main(["worker", "--lab", str(path), "--runners", "1", "--store", store]) == 0
    assert seen == [(2, 1), (1, None)]
