"""Leases of a lab host's CPUs across controller processes of this machine.

The pool keeps two guests of one controller off the same slot; two controllers started at once
with lab files that name the same host would still put guests on the same cores (or one slot
twice), and both measurements would be worth nothing. A slot is therefore leased by taking an
exclusive, non-blocking `flock` on one file per host CPU it pins (a slot that pins none: one file
for the slot), under `<data dir>/cpus/<machine>/`. `<machine>` is the SSH target's host and port
(user and lab file do not matter) or, for this machine, its libvirt URI, so lab files that
name a host differently still meet on its CPUs, and overlapping CPU sets exclude each other.
The kernel drops the locks when a controller dies: a killed controller leaves no stale lease.

Limits: controllers on different machines driving one lab host do not see each other's locks:
these leases are for a controller without a shared database. With a store (a campaign's run:
kinds/run.py), slots are leased in the store instead (orchestrator/queue/leases.py; these
locks are still taken beside those rows, so two stores on one machine still exclude each
other). The implicit local host of a run without a lab file takes no lease (what vmbisect did
before labs); a queue worker always has a lab file.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.hosts.lab import Host, Slot

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def machine_key(host: Host) -> str:
    """The machine a lab host is, as a file name: its SSH host and port, or its libvirt URI."""
    where = f"{host.ssh.host}-{host.ssh.port}" if host.ssh is not None else f"local-{host.uri}"
    return _UNSAFE.sub("_", where).strip("_") or "local"


class CpuLocks:
    """The pool's SlotLeases backend (orchestrator/hosts/pool.py) where there is no shared
    database: no turn order among waiting campaigns, and nothing to stop a wait."""

    poll_s = 1.0

    def __init__(self, root: Path) -> None:
        self.root = root

    def waiting(self, hosts: Sequence[Host]) -> None:
        pass

    def served(self) -> None:
        pass

    def close(self) -> None:
        pass

    def files(self, host: Host, slot: Slot) -> list[Path]:
        where = self.root / machine_key(host)
        if not slot.cpus:
            return [where / f"slot{slot.index}.lock"]
        return [where / f"cpu{cpu}.lock" for cpu in sorted(set(slot.cpus))]

    def take(self, host: Host, slot: Slot) -> list[int] | None:
        """The slot's locks held (their file descriptors), or None when another controller holds
        one of them (nothing is kept then)."""
        held: list[int] = []
        for path in self.files(host, slot):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BaseException as exc:
                self.give([*held, fd])
                if isinstance(exc, BlockingIOError):  # another controller holds it
                    return None
                raise
            held.append(fd)
        return held

    @staticmethod
    def give(held: list[int]) -> None:
        for fd in held:
            os.close(fd)  # closing the descriptor releases its flock
