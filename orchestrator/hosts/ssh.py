"""SSH to a lab host with paramiko: commands as argument lists, files over SFTP.

Never a shell string built from fields: every command is an argument list quoted with
shlex.join for the remote login shell. The host key must already be in the host's
known_hosts file (docs/hosts.md); an unknown or changed key is refused, never learned.
Every failure of the connection itself is a HostFailed naming the host.
"""

from __future__ import annotations

import shlex
import socket
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import paramiko

from orchestrator.errors import HostFailed
from orchestrator.hosts.labfile import SshTarget

CONNECT_TIMEOUT_S = 15.0
KEEPALIVE_S = 5
# What a lost connection looks like from paramiko and the socket layer.
LINK_ERRORS = (paramiko.SSHException, OSError, EOFError, socket.timeout)


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode(errors="replace")


class SshHost:
    """One SSH connection to one lab host; opened on first use, reopened after close()."""

    def __init__(self, name: str, target: SshTarget, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.name = name
        self.target = target
        self.timeout_s = timeout_s
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None

    def connect(self) -> paramiko.SSHClient:
        if self._client is not None:
            transport = self._client.get_transport()
            if transport is not None and transport.is_active():
                return self._client
            self.close()
        t = self.target
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(str(t.known_hosts))
        except OSError as exc:
            raise HostFailed(self.name, f"cannot read known_hosts {t.known_hosts}: {exc.strerror}") from exc
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(t.host, port=t.port, username=t.user, key_filename=str(t.key), look_for_keys=False,
                           allow_agent=False, timeout=self.timeout_s, banner_timeout=self.timeout_s,
                           auth_timeout=self.timeout_s)
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostFailed(self.name, f"{t}: host key differs from the one in {t.known_hosts}") from exc
        except paramiko.AuthenticationException as exc:
            client.close()
            raise HostFailed(self.name, f"{t}: authentication refused for key {t.key}") from exc
        except paramiko.SSHException as exc:
            client.close()
            hint = ""
            if "not found in known_hosts" in str(exc):
                hint = f"; add it with: ssh-keyscan -p {t.port} {t.host} >> {t.known_hosts}"
            raise HostFailed(self.name, f"{t}: {exc}{hint}") from exc
        except (OSError, EOFError) as exc:
            client.close()
            raise HostFailed(self.name, f"cannot reach {t}: {exc}") from exc
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(KEEPALIVE_S)
        self._client = client
        return client

    def close(self) -> None:
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def run(self, argv: list[str], stdin: bytes = b"", timeout_s: float = 120.0, check: bool = True) -> Completed:
        """Run one command; check=True turns a non-zero exit into HostFailed with its stderr."""
        command = shlex.join(argv)
        try:
            transport = self.connect().get_transport()
            assert transport is not None
            chan = transport.open_session(timeout=self.timeout_s)
            chan.settimeout(timeout_s)
            chan.exec_command(command)
            if stdin:
                chan.sendall(stdin)
            chan.shutdown_write()
            out, err = _drain(chan)
            code = chan.recv_exit_status()
            chan.close()
        except LINK_ERRORS as exc:
            self.close()
            raise HostFailed(self.name, f"ssh connection lost running {argv[0]}: {exc or type(exc).__name__}") from exc
        done = Completed(tuple(argv), code, out, err)
        if check and code != 0:
            detail = (err or out).decode(errors="replace").strip().splitlines()
            raise HostFailed(self.name, f"{argv[0]} exited {code}" + (f": {detail[-1]}" if detail else ""))
        return done

    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            try:
                self._sftp = self.connect().open_sftp()
            except LINK_ERRORS as exc:
                self.close()
                raise HostFailed(self.name, f"sftp unavailable: {exc}") from exc
        return self._sftp

    def put(self, local: Path, remote: PurePath) -> None:
        self._sftp_call("upload " + local.name, lambda s: s.put(str(local), str(remote), confirm=True))

    def get(self, remote: PurePath, local: Path) -> None:
        self._sftp_call("download " + remote.name, lambda s: s.get(str(remote), str(local)))

    def read_bytes(self, remote: PurePath) -> bytes | None:
        """The file's contents, or None when it does not exist (yet)."""
        def read(s: paramiko.SFTPClient) -> bytes | None:
            try:
                with s.open(str(remote), "rb") as f:
                    return bytes(f.read())
            except FileNotFoundError:
                return None
        return self._sftp_call("read " + remote.name, read)

    def rename(self, old: PurePath, new: PurePath) -> None:
        self._sftp_call("rename " + old.name, lambda s: s.posix_rename(str(old), str(new)))

    def listdir(self, remote: PurePath) -> list[tuple[str, bool]]:
        """(name, is a directory) of every entry; [] when the directory does not exist."""
        def listing(s: paramiko.SFTPClient) -> list[tuple[str, bool]]:
            try:
                return [(a.filename, stat.S_ISDIR(a.st_mode or 0)) for a in s.listdir_attr(str(remote))]
            except FileNotFoundError:
                return []
        return self._sftp_call("list " + str(remote), listing)

    def _sftp_call(self, what: str, fn: Any) -> Any:
        try:
            return fn(self.sftp())
        except LINK_ERRORS as exc:
            self.close()
            raise HostFailed(self.name, f"ssh connection lost during {what}: {exc or type(exc).__name__}") from exc


def _drain(chan: paramiko.Channel) -> tuple[bytes, bytes]:
    """stdout to its end, then stderr (paramiko buffers it meanwhile; our commands say little)."""
    out = chan.makefile("rb").read()
    err = chan.makefile_stderr("rb").read()
    return bytes(out), bytes(err)
