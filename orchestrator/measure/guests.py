"""The measurer over the guest pool: a guest of a kernel on a free slot of a lab host (this
machine alone without a lab), the workload's tools prepared in it, and a session whose `run`
is one repetition of the workload, returning the one RunResult, and whose `clock` is the
guest's clocksource at its start and around each run. Every scheduler measures through it
(orchestrator/ports.py)."""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack, contextmanager
from typing import Any, Iterator, Mapping

from orchestrator.backends.host import host_cpu
from orchestrator.backends.libvirt_vm import Guest
from orchestrator.errors import HostFailed
from orchestrator.hosts.pool import GuestPool
from orchestrator.ports import KernelArtifact, RunResult
from orchestrator.vm.spec import VmSpec
from orchestrator.workloads import clock, kneeds, runner
from orchestrator.workloads.definition import WorkloadDef


class NicedGuest:
    """A guest whose commands start at nice value N, set by the agent before the command's
    first instruction and inherited by its children (the agent protocol's exec `nice`: no
    `nice` tool needed in the guest); everything else passes through."""

    def __init__(self, guest: Any, nice: int) -> None:
        self._guest, self._nice = guest, nice

    def exec(self, argv: list[str], **kwargs: Any) -> Any:
        return self._guest.exec(argv, **kwargs, nice=self._nice)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._guest, name)


class PoolSession:
    def __init__(self, guest: Guest, workload: WorkloadDef, params: Mapping[str, Any], run_s: float | None) -> None:
        self.guest, self.workload, self.params, self.run_s = guest, workload, params, run_s
        self.boot_seconds = guest.boot_seconds
        self.host = guest.host
        self.host_state, self.phases = guest.host_state, guest.phases  # stored with the boot (judge.boot_facts)
        self.accel, self.host_cpu = guest.accel, host_cpu(guest.domain)  # stored with the boot, for the report
        self._clocks: list[tuple[str, str]] = []  # each run's clocksource before and after

    @property
    def clock(self) -> dict[str, Any]:
        """The guest's clock so far (workloads/clock.py BootClock), stored with the boot."""
        return clock.from_hello(self.guest.hello, self._clocks).to_dict()

    @property
    def load(self) -> Any:
        """The whole boot's load on its host CPUs (backends/quiet.py BootLoad), once the guest ended."""
        return self.guest.load

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        target = self.guest if nice is None else NicedGuest(self.guest, nice)
        result = runner.run(target, self.workload, self.params if params is None else params, self.guest.accel,
                            self.run_s)
        self._clocks.append(clock.of_run(result.snapshots))
        return dataclasses.replace(result, lab_host=self.host)


class PoolMeasurer:
    """Guests of `spec` running `workload`: with `params` unless a run names its own, the
    kernel command line `append` unless a boot names its own, on lab host `host` (None: any
    free slot), `accel` chosen per host. `needs`: kernel options the workload needs (checked
    once per image before its first boot). `one_host`: every guest after the first on the
    first one's host, so no two of its samples come from hosts of different speed. `pinned`:
    the user asked for `host` (default: whenever one is given), so it never moves on."""

    def __init__(self, pool: GuestPool, spec: VmSpec, workload: WorkloadDef, params: Mapping[str, Any],
                 needs: Mapping[str, str], accel: str = "auto", append: str = "", boot_timeout_s: float = 120.0,
                 run_s: float | None = None, host: str | None = None, one_host: bool = False,
                 pinned: bool | None = None) -> None:
        self.pool, self.spec, self.workload, self.params, self.needs = pool, spec, workload, params, needs
        self.accel, self.append, self.boot_timeout_s, self.run_s, self.host = accel, append, boot_timeout_s, run_s, host
        self.one_host, self.pinned = one_host, host is not None if pinned is None else pinned
        self._checked: set[str] = set()

    def move_on(self) -> bool:
        if self.pinned:
            return False
        self.host = None
        return True

    def check(self, kernel: KernelArtifact) -> None:
        if kernel.sha256 not in self._checked:
            described = f"the kernel built at {kernel.commit[:12]}" if kernel.commit else kernel.description
            kneeds.check_kernel(self.workload.name, self.needs, kernel.image, described)
            self._checked.add(kernel.sha256)

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[PoolSession]:
        """A guest on a free slot. A host that fails while the guest boots is marked down by
        the pool and the boot goes to another host, as long as this measurer is not yet tied
        to one (no `host`, and no guest of it ran yet): nothing was measured there."""
        self.check(kernel)
        while True:
            stack = ExitStack()
            try:
                guest = stack.enter_context(self.pool.guest(
                    self.spec, kernel, self.host, self.accel, self.append if append is None else append,
                    self.boot_timeout_s))
            except HostFailed:
                if self.host is not None:
                    raise
                continue  # that host is down now: the next slot is on another, or no host is up
            with stack:
                if self.one_host:
                    self.host = guest.host
                runner.prepare(guest, self.workload)
                yield PoolSession(guest, self.workload, self.params, self.run_s)
            return
