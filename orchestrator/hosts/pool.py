"""The guest pool: slots on the lab's hosts, a guest booted on a free one.

The interface the schedulers (bisect engine, compare runner) are built on:

    lease = pool.acquire(host=None)            a free slot (waits for one); InfraError when no host is up
    with pool.boot(lease, spec, kernel) as g:  a guest on that slot, vCPUs pinned to its CPUs
        ...                                    g.exec / g.agent / g.domain, g.host names the host
    pool.release(lease)

    with pool.guest(spec, kernel, host=None) as g:   the three above in one

A failure of the host itself (SSH or libvirt connection lost, libvirt refusing, the host gone)
reaches the caller as HostFailed naming the host, after the pool marked that host down with the
reason: the caller puts its work back in its queue and acquires again; `acquire` never hands
out a slot of a host that is down. Kernel faults (BootFailed, WorkloadFailed) and UserErrors
pass through and leave the host up.

With `locks` (a SlotLeases backend), a slot is also leased against other controller processes:
a slot whose host CPUs another controller's guest holds is skipped, and `acquire` waits
(polling every `locks.poll_s`) until one is free. Two backends: `flock` files of this machine
(orchestrator/hosts/cpulocks.py, where there is no shared database) and rows in the store
(orchestrator/queue/leases.py: controllers and workers on any machine sharing one store, a
freed slot going to the longest-waiting campaign of the highest priority). A backend may also
refuse the wait itself (`waiting` raises: the campaign was cancelled); the pool then holds no
slot of it.

`pool.builds` leases this machine's CPUs for kernel builds through the same backend
(orchestrator/hosts/buildcpus.py): a build of any campaign of this machine waits for the guests
on its CPUs, and a guest for the build, in the backend's turn.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from orchestrator.backends.factory import GuestLauncher
from orchestrator.backends.libvirt_vm import Guest
from orchestrator.errors import HostFailed, InfraError, UserError
from orchestrator.hosts.buildcpus import BuildCpus
from orchestrator.hosts.labfile import Host, Lab, Slot
from orchestrator.hosts.leasing import FOREIGN_POLL_S, SlotLeases
from orchestrator.ports import KernelArtifact
from orchestrator.vm.spec import VmSpec


@dataclass(frozen=True)
class Lease:
    host: Host
    slot: Slot


@dataclass(frozen=True)
class HostStatus:
    name: str
    up: bool
    reason: str
    slots: int
    busy: int


class GuestPool:
    def __init__(self, lab: Lab, launcher_for: Callable[[Host], GuestLauncher], locks: SlotLeases | None = None) -> None:
        self.lab = lab
        self._launcher_for = launcher_for
        self._locks = locks
        self.builds = BuildCpus(lab, locks)  # the CPUs kernel builds of this pool's campaign lease
        self._held: dict[tuple[str, int], Any] = {}
        self._launchers: dict[str, GuestLauncher] = {}
        self._accels: dict[tuple[str, str], str] = {}
        self._down: dict[str, str] = {}
        self._busy: set[tuple[str, int]] = set()
        self._cond = threading.Condition()

    # -- slots -------------------------------------------------------------------------------
    def acquire(self, host: str | None = None, timeout_s: float | None = None) -> Lease:
        """A free slot (on `host` if named), waiting while all are busy. InfraError when the
        wanted host, or every host, is down; also after `timeout_s` without a free slot."""
        hosts = (self.lab.host(host),) if host is not None else self.lab.hosts
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            try:
                while True:
                    up = [h for h in hosts if h.name not in self._down]
                    if not up:
                        raise InfraError("no host is up: " + "; ".join(f"{h.name}: {self._down[h.name]}"
                                                                       for h in hosts))
                    if self._locks is not None:
                        self._locks.waiting(up)
                    lease, foreign = self._first_free(up)
                    if lease is not None:
                        return lease
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise InfraError(f"no free slot within {timeout_s:g} s")
                    if foreign:  # no notify comes from another process: look again soon
                        poll = self._locks.poll_s if self._locks is not None else FOREIGN_POLL_S
                        left = poll if left is None else min(poll, left)
                    self._cond.wait(left)
            finally:
                if self._locks is not None:
                    self._locks.served()

    def _first_free(self, up: list[Host]) -> tuple[Lease | None, bool]:
        """The first slot free here and leased from the backend; whether one was skipped
        because another controller holds it (or another campaign's turn comes first)."""
        foreign = False
        for h in up:
            for slot in h.slots:
                if (h.name, slot.index) in self._busy:
                    continue
                held = self._locks.take(h, slot) if self._locks is not None else []
                if held is None:
                    foreign = True
                    continue
                self._busy.add((h.name, slot.index))
                self._held[(h.name, slot.index)] = held
                return Lease(h, slot), foreign
        return None, foreign

    def release(self, lease: Lease) -> None:
        with self._cond:
            key = (lease.host.name, lease.slot.index)
            self._busy.discard(key)
            if self._locks is not None and key in self._held:
                self._locks.give(self._held.pop(key))
            self._cond.notify_all()

    def mark_down(self, host: str, reason: str) -> None:
        with self._cond:
            self._down.setdefault(host, reason)
            launcher = self._launchers.pop(host, None)
            self._cond.notify_all()
        if launcher is not None:
            try:
                launcher.close()
            except Exception:  # a dead host's connection may fail to close; it is gone either way
                pass

    def status(self) -> list[HostStatus]:
        with self._cond:
            return [HostStatus(h.name, h.name not in self._down, self._down.get(h.name, ""), len(h.slots),
                               sum(1 for n, _ in self._busy if n == h.name)) for h in self.lab.hosts]

    # -- guests ------------------------------------------------------------------------------
    @contextmanager
    def boot(self, lease: Lease, spec: VmSpec, kernel: KernelArtifact, accel: str = "auto", append: str = "",
             timeout_s: float = 120.0) -> Iterator[Guest]:
        """A guest of `spec` on the leased slot; HostFailed (after marking the host down) when
        the host fails, whether while booting or while the caller uses the guest."""
        host = lease.host
        fitted = fit_spec(spec, host, lease.slot)
        try:
            launcher = self.launcher(host)
            chosen = self._accel(host, launcher, accel)
            with launcher.boot(fitted, kernel.image, chosen, kernel.release, append, timeout_s,
                               modules_root=kernel.modules_dir) as guest:
                yield guest
        except HostFailed as exc:
            self.mark_down(exc.host, exc.reason)
            raise
        except InfraError as exc:
            self.mark_down(host.name, str(exc))
            raise HostFailed(host.name, str(exc)) from exc

    @contextmanager
    def guest(self, spec: VmSpec, kernel: KernelArtifact, host: str | None = None, accel: str = "auto",
              append: str = "", timeout_s: float = 120.0) -> Iterator[Guest]:
        lease = self.acquire(host)
        try:
            with self.boot(lease, spec, kernel, accel, append, timeout_s) as guest:
                yield guest
        finally:
            self.release(lease)

    def launcher(self, host: Host) -> GuestLauncher:
        """The host's launcher, connected on first use (SSH, libvirt, orphans swept)."""
        with self._cond:
            if host.name in self._down:
                raise HostFailed(host.name, self._down[host.name])
            launcher = self._launchers.get(host.name)
        if launcher is None:
            launcher = self._launcher_for(host)
            launcher.provider.cleanup_leftovers()
            with self._cond:
                self._launchers[host.name] = launcher
        return launcher

    def close(self) -> None:
        with self._cond:
            launchers = list(self._launchers.values())
            self._launchers.clear()
        for launcher in launchers:
            launcher.close()
        if self._locks is not None:
            self._locks.close()

    def _accel(self, host: Host, launcher: GuestLauncher, wanted: str) -> str:
        key = (host.name, wanted)
        if key not in self._accels:
            self._accels[key] = launcher.choose_accel(wanted).accel
        return self._accels[key]


def fit_spec(spec: VmSpec, host: Host, slot: Slot) -> VmSpec:
    """The guest's shape on this slot: vCPUs pinned to the slot's CPUs, disks in the host's
    disk_dir. A guest that already names host CPUs or a disk directory of this machine cannot
    also follow a lab slot: one-line UserError naming the option."""
    pinning = slot.pinning(spec.vcpus)
    if pinning and spec.pinning:
        raise UserError(f"pin: host {host.name} slot {slot.index} pins the guest to host CPUs "
                        f"{','.join(map(str, slot.cpus))}; drop --pin (or guest.pinning)")
    disks = spec.disks
    if host.remote and disks.directory is not None:
        raise UserError(f"disk-dir: {disks.directory} is a directory of this machine; for host {host.name} "
                        "set disk_dir in the lab file")
    if host.disk_dir is not None and disks.directory is None and not host.remote:
        disks = dataclasses.replace(disks, directory=host.disk_dir)
    return dataclasses.replace(spec, pinning=pinning or spec.pinning, disks=disks).validate()
