"""The host's libvirtd stopped and started again the way scripts/setup.sh starts it where no
init system runs (scripts/start-libvirt.sh), for the tests marked `libvirtd_restart`.

Restarting libvirtd drops every client's connection (QEMU processes survive it), so those tests
run in a pytest process of their own, after every other guest test (tests/integration/conftest.py
orders them last; `make test` gives them their own process), and refuse to run while a guest
that is not theirs is active: on a shared machine, run them when no other guest runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import libvirt

from orchestrator.backends.libvirt_vm import DEFAULT_URI, owner_pid

START = Path(__file__).resolve().parents[2] / "scripts" / "start-libvirt.sh"


def libvirtd_pids() -> list[int]:
    """Running libvirtd processes (a killed one may linger as a zombie until init reaps it)."""
    out = subprocess.run(["pgrep", "-x", "-r", "D,R,S,T", "libvirtd"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def why_not_restartable() -> str | None:
    """Why libvirtd cannot be restarted by a test here, or None."""
    if os.geteuid() != 0:
        return "restarting libvirtd needs root"
    if Path("/run/systemd/system").is_dir():
        return "systemd manages libvirtd on this host; these tests restart the daemon scripts/setup.sh starts"
    if len(libvirtd_pids()) != 1:
        return f"expected one libvirtd process, found {len(libvirtd_pids())}"
    others = active_domains()
    if others:
        return f"other guests run on this libvirtd ({', '.join(others)}); a restart would cut their connections"
    return None


def active_domains() -> list[str]:
    """Names of the running domains, through a connection of its own."""
    conn = libvirt.open(DEFAULT_URI)
    try:
        return [d.name() for d in conn.listAllDomains(libvirt.VIR_CONNECT_LIST_DOMAINS_ACTIVE)]
    finally:
        conn.close()


def domains_of(pid: int) -> list[str]:
    return [name for name in active_domains() if owner_pid(name) == pid]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"  # exited; its parent (init) has not reaped it yet


def stop_libvirtd(how: str, grace_s: float = 10.0) -> None:
    """`killed`: SIGKILL, as a crash; the guests' QEMU processes keep running. `stopped`:
    SIGTERM, as an administrator's restart; libvirt 9.0 then destroys the guests its clients
    started with VIR_DOMAIN_START_AUTODESTROY, and its shutdown may hang afterwards (measured
    here: still alive 60 s later), so it is killed after `grace_s` as an init system would."""
    (pid,) = libvirtd_pids()
    os.kill(pid, signal.SIGKILL if how == "killed" else signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while not _gone(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
        time.sleep(0.1)


def start_libvirtd() -> None:
    done = subprocess.run(["bash", str(START)], capture_output=True, text=True)
    assert done.returncode == 0, f"{START} failed: {done.stdout}{done.stderr}"


def restart_libvirtd(how: str) -> None:
    stop_libvirtd(how)
    start_libvirtd()
