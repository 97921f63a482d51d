"""The SSH layer against a real sshd on 127.0.0.1: commands as argument lists, host keys
checked, content-addressed pushes, libvirt's remote driver over the derived URI, and a host
that vanishes surfacing as HostFailed naming it. No guest boots here."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path, PurePosixPath

import pytest

from orchestrator.backends.libvirt_vm import LibvirtProvider
from orchestrator.errors import HostFailed
from orchestrator.hosts.push import push, remote_sha256
from orchestrator.hosts.remote import RemoteSite
from orchestrator.hosts.ssh import SshHost


@pytest.fixture
def ssh(live_ssh_server):
    host = SshHost("sshhost", live_ssh_server.host().ssh)
    yield host
    host.close()


def test_arguments_reach_the_host_exactly_as_given_never_through_a_shell(ssh):
    argv = ["printf", "%s|", "a b", "$(id -u)", "'q'", "; rm -rf /", "*"]
    done = ssh.run(argv)
    assert done.exit_code == 0 and done.text == "a b|$(id -u)|'q'|; rm -rf /|*|"


def test_a_failing_command_names_the_host_and_the_error(ssh):
    with pytest.raises(HostFailed, match=r"^host sshhost: ls exited 2: .*No such file") as err:
        ssh.run(["ls", "/no/such/dir"])
    assert err.value.host == "sshhost"
    assert ssh.run(["false"], check=False).exit_code == 1


def test_an_unknown_host_key_is_refused_with_the_command_that_adds_it(live_ssh_server, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    target = dataclasses.replace(live_ssh_server.host().ssh, known_hosts=empty)
    with pytest.raises(HostFailed, match=rf"not found in known_hosts; add it with: ssh-keyscan -p "
                                         rf"{live_ssh_server.port} 127.0.0.1 >> {empty}"):
        SshHost("sshhost", target).connect()


def test_a_key_the_host_does_not_accept_is_refused(live_ssh_server, tmp_path):
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    target = dataclasses.replace(live_ssh_server.host().ssh, key=tmp_path / "other")
    with pytest.raises(HostFailed, match="^host sshhost: root@127.0.0.1:.*: authentication refused for key"):
        SshHost("sshhost", target).connect()


def test_push_transfers_once_verifies_and_leaves_no_partial_file(ssh, tmp_path):
    blob = tmp_path / "bzImage"
    blob.write_bytes(b"kernel" * 100_000)
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    where = PurePosixPath(tmp_path / "remote" / "images")
    first = push(ssh, blob, where, suffix=".kernel")
    again = push(ssh, blob, where, suffix=".kernel")
    assert first.transferred and not again.transferred
    assert first.path == again.path == where / f"{digest}.kernel"
    assert remote_sha256(ssh, first.path) == digest
    assert [n for n, _ in ssh.listdir(where)] == [f"{digest}.kernel"]


def test_push_replaces_a_corrupted_copy_on_the_host(ssh, tmp_path):
    blob = tmp_path / "initrd"
    blob.write_bytes(b"image" * 1000)
    where = PurePosixPath(tmp_path / "remote")
    pushed = push(ssh, blob, where)
    Path(pushed.path).write_bytes(b"bit rot")  # the "remote" host is this machine
    again = push(ssh, blob, where)
    assert again.transferred and Path(again.path).read_bytes() == blob.read_bytes()


def test_libvirt_answers_over_the_derived_libssh_uri(live_ssh_server, ssh):
    host = live_ssh_server.host()
    provider = LibvirtProvider(host.uri, site=RemoteSite(host, ssh))
    try:
        assert provider.conn.getURI().startswith("qemu+libssh://root@127.0.0.1")
        assert provider.conn.isAlive() == 1
    finally:
        provider.close()


def test_libvirt_refuses_a_host_whose_key_is_not_known(live_ssh_server, ssh, tmp_path):
    from orchestrator.hosts.labfile import derived_uri

    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = live_ssh_server.host()
    uri = derived_uri(dataclasses.replace(host.ssh, known_hosts=empty))
    with pytest.raises(HostFailed, match=r"^host sshhost: cannot connect to libvirt at qemu\+libssh://root@127"):
        LibvirtProvider(uri, site=RemoteSite(host, ssh))


def test_a_host_that_vanishes_is_host_failed_naming_it(live_ssh_server, ssh):
    assert ssh.run(["true"]).exit_code == 0
    live_ssh_server.cut()
    with pytest.raises(HostFailed, match="^host sshhost: ") as err:
        ssh.run(["true"])
    assert err.value.host == "sshhost"
