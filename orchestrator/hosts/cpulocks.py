"""Leases of a lab host's CPUs across controller processes of this machine.

The pool keeps two guests of one controller off the same slot; two controllers started at once
with lab files that name the same host would still put guests on the same cores (or one slot
twice), and both measurements would be worth nothing. A slot is therefore leased by taking an
exclusive, non-blocking `flock` on one file per host CPU it uses (`units`: the CPUs it pins; an
unpinned slot of this machine uses all of them; an unpinned slot of a remote host, whose CPUs
are not known here: one file for the slot), under `<data dir>/cpus/<machine>/`. `<machine>` is
the SSH target's host and port (user and lab file do not matter) or, for this machine, its
libvirt URI, so lab files that name a host differently still meet on its CPUs, and overlapping
CPU sets exclude each other. A kernel build leases this machine's CPUs it runs on the same way
(orchestrator/hosts/buildcpus.py). The kernel drops the locks when a controller dies: a killed
controller leaves no stale lease.

Turns: a process that finds a slot's CPUs taken keeps `turn.lock` of that machine while it
waits, and nobody takes CPUs of a machine whose turn another waiter holds; so the CPUs a guest
gives back after its boot go to the process that waited (a build, another controller's guest),
not back to the process that just had them, and no waiter starves. Waiters of one machine are
served one at a time, not in a strict order among themselves.

Limits: controllers on different machines driving one lab host do not see each other's locks:
these leases are for a controller without a shared database. With a store (a campaign's run:
kinds/run.py), slots are leased in the store instead (orchestrator/queue/leases.py; these
locks are still taken beside those rows, so two stores on one machine still exclude each
other).
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

from orchestrator.hosts.labfile import Host, Slot

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def machine_key(host: Host) -> str:
    """The machine a lab host is, as a file name: its SSH host and port, or its libvirt URI."""
    where = f"{host.ssh.host}-{host.ssh.port}" if host.ssh is not None else f"local-{host.uri}"
    return _UNSAFE.sub("_", where).strip("_") or "local"


def this_machines_cpus() -> tuple[int, ...]:
    return tuple(range(os.cpu_count() or 1))


def units(host: Host, slot: Slot) -> list[str]:
    """What a guest of `slot` leases: `cpu<N>` for each host CPU it may run on (every CPU of this
    machine for an unpinned slot of a local host), `slot<N>` for an unpinned remote slot."""
    cpus = slot.cpus or (() if host.remote else this_machines_cpus())
    return [f"cpu{c}" for c in sorted(set(cpus))] if cpus else [f"slot{slot.index}"]


class CpuLocks:
    """The pool's SlotLeases backend (orchestrator/hosts/pool.py) where there is no shared
    database: turns (the module's docstring), no priorities, and nothing to stop a wait."""

    poll_s = 1.0

    def __init__(self, root: Path) -> None:
        self.root = root
        self._turns: dict[tuple[Path, int], int] = {}  # (machine directory, thread) -> turn.lock held
        self._mutex = threading.Lock()

    def waiting(self, hosts: Sequence[Host]) -> None:
        pass

    def served(self) -> None:
        """This thread's wait ended: the turns it kept are given up."""
        me = threading.get_ident()
        with self._mutex:
            mine = [key for key in self._turns if key[1] == me]
            fds = [self._turns.pop(key) for key in mine]
        self.give(fds)

    def close(self) -> None:
        with self._mutex:
            fds = list(self._turns.values())
            self._turns.clear()
        self.give(fds)

    def files(self, host: Host, slot: Slot) -> list[Path]:
        where = self.root / machine_key(host)
        return [where / f"{unit}.lock" for unit in units(host, slot)]

    def take(self, host: Host, slot: Slot) -> list[int] | None:
        """The slot's locks held (their file descriptors), or None when another controller holds
        one of them or another waiter has the machine's turn (nothing is kept then but this
        thread's turn)."""
        where = self.root / machine_key(host)
        where.mkdir(parents=True, exist_ok=True)
        key = (where, threading.get_ident())
        with self._mutex:
            turn = self._turns.get(key)
        fresh = turn is None
        if fresh:
            turn = _try_lock(where / "turn.lock")
            if turn is None:  # another waiter's turn
                return None
        assert turn is not None
        held: list[int] = []
        for path in self.files(host, slot):
            fd = _try_lock(path)
            if fd is None:  # another controller holds it: wait with the turn
                self.give(held)
                if fresh:
                    with self._mutex:
                        self._turns[key] = turn
                return None
            held.append(fd)
        if not fresh:
            with self._mutex:
                self._turns.pop(key, None)
        self.give([turn])
        return held

    @staticmethod
    def give(held: list[int]) -> None:
        for fd in held:
            os.close(fd)  # closing the descriptor releases its flock


def _try_lock(path: Path) -> int | None:
    """An exclusive flock on `path` (its descriptor), or None when another holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd
