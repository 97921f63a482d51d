"""The CPUs a kernel build runs on, leased the way a guest's slot is.

A build on the controller takes this machine's cores as surely as a guest does, and a guest
measured beside a compile reads half of what it reads alone. So a build leases the CPUs it runs
on through the same backend as the guests (orchestrator/hosts/pool.py SlotLeases: rows in the
store in fair order, orchestrator/queue/leases.py, or flock files with turns,
orchestrator/hosts/cpulocks.py), as a slot of its own (`BUILD_SLOT`) of this machine: the
lab's `build_cpus` when it names some (CPUs no local slot uses, so builds and guests of one lab
never wait for each other), else every CPU of this machine. The build's processes are pinned to
those CPUs (orchestrator/kbuild/builder.py). This machine is leased under every name the lab
gives it (each local host's libvirt URI) and under the default one, so a build meets the guests
of any lab file, campaign file or worker on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from orchestrator.hosts.cpulocks import this_machines_cpus
from orchestrator.hosts.labfile import LOCAL_URI, Host, Lab, Slot

if TYPE_CHECKING:
    from orchestrator.hosts.leasing import SlotLeases

# The slot number a build's lease carries (a lab's slots count from 0).
BUILD_SLOT = -1
BUILD_HOST = "build"


def build_hosts(lab: Lab) -> tuple[Host, ...]:
    """This machine as each local host of `lab` (and the default URI) names it, with one slot:
    the CPUs builds run on."""
    cpus = lab.build_cpus or this_machines_cpus()
    uris = dict.fromkeys([LOCAL_URI, *(h.uri for h in lab.hosts if not h.remote)])
    return tuple(Host(BUILD_HOST, uri, (Slot(BUILD_SLOT, cpus),)) for uri in uris)


class BuildCpus:
    """`hold()`: the CPUs of this machine a build may use, leased from `locks` for as long as
    the build runs (waiting, in the backend's turn, while guests or other builds hold them)."""

    def __init__(self, lab: Lab, locks: "SlotLeases | None") -> None:
        self.hosts = build_hosts(lab)
        self.cpus = self.hosts[0].slots[0].cpus
        self.locks = locks

    @contextmanager
    def hold(self, on_wait: Callable[[], None] = lambda: None) -> Iterator[tuple[int, ...]]:
        if self.locks is None:
            yield self.cpus
            return
        held = self._take(on_wait)
        try:
            yield self.cpus
        finally:
            for h in held:
                self.locks.give(h)

    def _take(self, on_wait: Callable[[], None]) -> list[Any]:
        assert self.locks is not None
        told = False
        try:
            while True:
                self.locks.waiting(self.hosts)
                held: list[Any] = []
                for host in self.hosts:
                    got = self.locks.take(host, host.slots[0])
                    if got is None:
                        break
                    held.append(got)
                else:
                    return held
                for h in held:
                    self.locks.give(h)
                if not told:
                    on_wait()
                    told = True
                time.sleep(self.locks.poll_s)
        finally:
            self.locks.served()
