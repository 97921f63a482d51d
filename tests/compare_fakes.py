"""Fakes for `vmbisect compare`'s ports: a guest with a pretend sysfs, a launcher, a workload
run whose IOPS depend on the disk's I/O scheduler. Tests only, never what a user gets."""

from __future__ import annotations

import random
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from orchestrator.agent.protocol import ExecResult
from orchestrator.compare.runner import Kernel
from orchestrator.compare.variant import Variant
from orchestrator.errors import WorkloadFailed
from orchestrator.workloads.result import Metric, RunResult

SCHEDULERS = ("mq-deadline", "kyber", "bfq", "none")
IOPS = {"none": 12000.0, "mq-deadline": 8000.0, "bfq": 6000.0, "kyber": 11000.0}


class FakeAgent:
    def __init__(self, sysfs: dict[str, str]) -> None:
        self.sysfs = sysfs

    def get(self, path: str) -> bytes:
        if path not in self.sysfs:
            raise WorkloadFailed(f"agent get failed: open {path}: no such file or directory")
        value = self.sysfs[path]
        if path.endswith("/scheduler"):
            return (" ".join(f"[{s}]" if s == value else s for s in SCHEDULERS) + "\n").encode()
        return (value + "\n").encode()


class FakeGuest:
    def __init__(self, disks: list[str]) -> None:
        self.hello = {"block_devices": [{"name": d} for d in disks]}
        self.boot_seconds = 0.01
        self.sysfs = {f"/sys/block/{d}/queue/scheduler": "mq-deadline" for d in disks}
        self.sysfs["/sys/kernel/knob"] = "0"
        self.agent = FakeAgent(self.sysfs)
        self.domain = None
        self.commands: list[list[str]] = []

    def exec(self, argv: list[str], **_kwargs: Any) -> ExecResult:
        self.commands.append(argv)
        if argv[:2] == ["sh", "-c"]:
            value, path = argv[4], argv[5]
            if path.endswith("/scheduler") and value not in SCHEDULERS:
                return ExecResult(1, "", False, b"", b"sh: write error: Invalid argument\n", 0.0)
            self.sysfs[path] = value
        return ExecResult(0, "", False, b"", b"", 0.0)


class FakeLauncher:
    def __init__(self, disks: int = 2) -> None:
        self.disks = [f"sd{chr(ord('a') + i)}" for i in range(disks)]
        self.booted: list[Path] = []
        self.guests: list[FakeGuest] = []

    @contextmanager
    def boot(self, spec: Any, kernel: Path, accel: str, modules_release: str | None = None, append: str = "",
             timeout_s: float = 60.0) -> Iterator[FakeGuest]:
        self.booted.append(kernel)
        guest = FakeGuest(self.disks)
        self.guests.append(guest)
        yield guest


class FakeKernels:
    def kernel(self, variant: Variant) -> Kernel:
        return Kernel(Path(variant.kernel or f"/built/{variant.commit}"), None, variant.source())


class FakeWorkload:
    """IOPS by the scheduler of the first disk, 2% noise; raises after `crash_after` runs."""

    def __init__(self, seed: int = 0, crash_after: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.crash_after = crash_after
        self.calls: list[tuple[str, Any]] = []

    def __call__(self, guest: Any, workload: Any, params: Any, accel: str) -> RunResult:
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise KeyboardInterrupt("controller killed")
        guest.exec(["fio", "job"])
        sched = guest.agent.sysfs["/sys/block/sda/queue/scheduler"]
        self.calls.append((sched, dict(params)))
        iops = IOPS[sched] * self.rng.gauss(1.0, 0.02) * (1 + 0.1 * int(params.get("numjobs", 1)))
        metrics = {"iops": Metric("iops", iops, "IO/s", "higher"),
                   "read_iops": Metric("read_iops", iops, "IO/s", "higher")}
        return RunResult("fio", dict(params), metrics, {"fio.json": "{}"}, ({}, {}), ({}, {}), 5.0)
