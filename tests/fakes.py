"""Fakes of the engine's build and VM ports: tests only, never what a user gets."""

from __future__ import annotations

import hashlib
import random
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping

from orchestrator.errors import BootFailed, BuildFailed, InfraError, WorkloadFailed
from orchestrator.ports import BuiltKernel, RunResult


class FakeBuilder:
    def __init__(self, broken: set[str] = frozenset(), same_image: set[str] = frozenset()) -> None:
        self.broken, self.same_image = broken, same_image
        self.built: list[str] = []

    def build(self, commit: str) -> BuiltKernel:
        self.built.append(commit)
        if commit in self.broken:
            raise BuildFailed("drivers/scsi/sd.c:12:3: error: expected ';' before '}' token")
        key = "same" if commit in self.same_image else commit
        return BuiltKernel(commit, Path(f"/fake/{commit}"), hashlib.sha256(key.encode()).hexdigest())


class FakeSession:
    def __init__(self, value: float, noise: float, rng: random.Random, metric: str, fails: str = "") -> None:
        self.boot_seconds = 0.01
        self.value, self.noise, self.rng, self.metric, self.fails = value, noise, rng, metric, fails

    def run(self) -> RunResult:
        if self.fails:
            raise WorkloadFailed(self.fails)
        return RunResult({self.metric: self.rng.gauss(self.value, self.value * self.noise)}, {"fake": True})


class FakeMeasurer:
    """The metric is `value_of(commit)` with relative gaussian noise; the workload fails with
    the given message at the commits of `workload_fails`."""

    def __init__(self, value_of: Callable[[str], float], noise: float = 0.03, seed: int = 0,
                 boot_broken: set[str] = frozenset(), infra_after: int | None = None, metric: str = "iops",
                 workload_fails: Mapping[str, str] | None = None) -> None:
        self.value_of, self.noise, self.rng = value_of, noise, random.Random(seed)
        self.workload_fails = dict(workload_fails or {})
        self.boot_broken, self.infra_after, self.metric = boot_broken, infra_after, metric
        self.boots = 0

    @contextmanager
    def boot(self, kernel: BuiltKernel) -> Iterator[FakeSession]:
        self.boots += 1
        if self.infra_after is not None and self.boots > self.infra_after:
            raise InfraError("libvirt could not start the guest: fake host failure")
        if kernel.commit in self.boot_broken:
            raise BootFailed("guest kernel failed to boot: Kernel panic - not syncing: fake", "console tail")
        yield FakeSession(self.value_of(kernel.commit), self.noise, self.rng, self.metric,
                          self.workload_fails.get(kernel.commit, ""))
