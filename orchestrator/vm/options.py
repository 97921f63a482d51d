"""A guest's shape as a user states it (the command line's guest options, or a stored
comparison's spec) and the VmSpec it means. Pure: the commands fill it from argparse, the
comparison's plan reads it from its spec, neither layer needs the other."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from orchestrator.errors import UserError
from orchestrator.vm.clocksource import DEFAULT_CLOCK, LEGACY_CLOCK
from orchestrator.vm.spec import DiskSpec, Topology, VmSpec


@dataclass(frozen=True)
class GuestOptions:
    """The options every command that boots guests takes (`--vcpus`, `--disks`, ...), typed;
    `vm_spec()` checks them and gives the guest's VmSpec. `accel` is the accelerator asked for
    (auto, kvm, tcg); it is checked where the accelerator is chosen."""

    vcpus: int = 2
    memory_mib: int = 1024
    machine: str = "pc"
    topology: str | None = None
    pin: str | None = None
    disks: int = 0
    disk_size_mib: int = 1024
    controller: str = "virtio-scsi"
    backing: str = "raw"
    disk_dir: Path | None = None
    cache: str = "none"
    aio: str = "threads"
    queues: int = 0
    iothreads: int = 0
    accel: str = "auto"
    clock: str = DEFAULT_CLOCK
    pin_emulator: str | None = None

    def vm_spec(self) -> VmSpec:
        disks = DiskSpec(count=self.disks, size_mib=self.disk_size_mib, controller=self.controller,
                         backing=self.backing, directory=self.disk_dir, cache=self.cache, aio=self.aio,
                         queues=self.queues, iothreads=self.iothreads)
        return VmSpec(vcpus=self.vcpus, memory_mib=self.memory_mib, machine=self.machine, disks=disks,
                      topology=parse_topology(self.topology), pinning=parse_pinning(self.pin), clock=self.clock,
                      emulator_pin=self.pin_emulator or "").validate()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["disk_dir"] = None if self.disk_dir is None else str(self.disk_dir)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GuestOptions":
        """The options as `to_dict` wrote them; a key it does not know is refused by name. Options
        stored before the guest's clock was one keep the kernel's own choice of clock."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"guest: unknown option {unknown[0]!r}; known: {', '.join(sorted(known))}")
        values = {"clock": LEGACY_CLOCK, **data}
        if values.get("disk_dir") is not None:
            values["disk_dir"] = Path(values["disk_dir"])
        return cls(**values)


def parse_topology(text: str | None) -> Topology | None:
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise UserError(f"topology: expected SOCKETS:CORES:THREADS with positive numbers, e.g. 2:4:2, got {text!r}")
    return Topology(*(int(p) for p in parts))


def parse_pinning(text: str | None) -> tuple[str, ...]:
    """'0,1,2,3' pins vCPU i to host CPU i-th entry; '/' separates sets that contain commas."""
    if not text:
        return ()
    sets = tuple(text.split("/")) if "/" in text else tuple(text.split(","))
    if not all(re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", s) for s in sets):
        raise UserError(f"pin: expected host CPU sets like 0,1,2,3 or 0-1/2-3, got {text!r}")
    return sets
