"""A real second host for tests: sshd on 127.0.0.1 on a free port, with a client key and a
host key generated in a temporary directory. Root logs in by key only; nothing in ~/.ssh is
read or written (AuthorizedKeysFile and the known_hosts file live in the temp directory).
`cut()` stops the daemon and every session it serves, as a host vanishing would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.hosts.labfile import Host, Lab, parse_lab
from tests.conftest import require

SSHD = Path("/usr/sbin/sshd")


@dataclass
class SshServer:
    directory: Path
    port: int
    key: Path
    known_hosts: Path
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        config = self.directory / "sshd_config"
        self.proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)],
                                     stderr=open(self.directory / "sshd.log", "ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on {self.port}: {(self.directory / 'sshd.log').read_text()}")

    def cut(self) -> None:
        """Kill the listening daemon and each per-connection sshd it forked (by pid)."""
        if self.proc is None:
            return
        for pid in [*_descendants(self.proc.pid), self.proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.proc = None

    def cut_after_runs(self, db: Path, runs: int, host: str = "sshhost", timeout_s: float = 1800) -> threading.Thread:
        """A thread that cuts the host once the store `db` (SQLite) holds `runs` runs measured on
        it (a bisection's run names its lab host at the top, a comparison's in its result)."""
        def watch() -> None:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                try:  # read-only: opening a Store here would race the controller creating the tables
                    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                        raws = [json.loads(raw) for (raw,) in conn.execute("SELECT raw FROM runs")]
                    there = [r for r in raws if (r.get("lab_host") or r.get("result", {}).get("lab_host")) == host]
                    if len(there) >= runs:
                        self.cut()
                        return
                except sqlite3.Error:  # no database or no runs table yet
                    pass
                time.sleep(0.3)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def lab_dict(self, name: str = "sshhost", **extra: object) -> dict:
        return {"name": name, "ssh": f"root@127.0.0.1:{self.port}", "key": str(self.key),
                "known_hosts": str(self.known_hosts), "work_dir": str(self.directory / "work"), **extra}

    def lab(self, name: str = "sshhost", **extra: object) -> Lab:
        return parse_lab({"hosts": [self.lab_dict(name, **extra)]})

    def host(self, name: str = "sshhost", **extra: object) -> Host:
        return self.lab(name, **extra).hosts[0]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory: pytest.TempPathFactory):
    require(SSHD.is_file(), "openssh-server not installed (make setup)")
    require(shutil.which("ssh-keygen") is not None, "ssh-keygen not installed (make setup)")
    require(os.geteuid() == 0, "the SSH host tests log in as root")
    d = tmp_path_factory.mktemp("sshhost")
    for name in ("client_key", "host_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    shutil.copy(d / "client_key.pub", d / "authorized_keys")
    port = _free_port()
    (d / "sshd_config").write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {d / 'host_key'}
PidFile none
AuthorizedKeysFile {d / 'authorized_keys'}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
""")
    host_key = (d / "host_key.pub").read_text().split()
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    server = SshServer(d, port, d / "client_key", d / "known_hosts")
    server.start()
    yield server
    server.cut()


@pytest.fixture
def live_ssh_server(ssh_server: SshServer) -> SshServer:
    """The server, started again if an earlier test cut it."""
    if ssh_server.proc is None:
        ssh_server.start()
    return ssh_server
