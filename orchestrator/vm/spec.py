"""The shape of a guest: vCPUs, memory, topology, disks and their controller.

A VmSpec is a frozen value; `validate()` turns bad input into one-line UserErrors naming the
field and the valid choices. Rendering it to libvirt XML lives in domain_xml.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import UserError, choices_error
from orchestrator.vm.clocksource import DEFAULT_CLOCK, check_clock

# controller name -> (libvirt bus for <target>, libvirt <controller model> or None, disks per controller)
CONTROLLERS: dict[str, tuple[str, str | None, int]] = {
    "virtio-blk": ("virtio", None, 0),
    "virtio-scsi": ("scsi", "virtio-scsi", 256),
    "lsisas1068": ("scsi", "lsisas1068", 8),
    "lsisas1078": ("scsi", "lsisas1078", 64),
    "lsilogic": ("scsi", "lsilogic", 7),
}

BACKINGS = ("raw", "qcow2", "block")
CACHE_MODES = ("none", "writeback", "writethrough", "directsync", "unsafe")
AIO_MODES = ("threads", "native", "io_uring")
MACHINES = ("pc", "q35")
ACCELS = ("kvm", "tcg")
# Upper bounds (docs/campaign.md, "Limits"): past them QEMU or the host refuses anyway, late.
MAX_VCPUS = 255           # QEMU's limit for the pc machine (q35 allows 288)
MAX_MEMORY_MIB = 1 << 20  # 1 TiB
MAX_DISKS = 256           # one virtio-scsi controller's targets; far beyond any report we reproduce
MAX_DISK_MIB = 1 << 20    # 1 TiB per disk (sparse files: the size is not allocated up front)
MAX_QUEUES = 255          # no more queues than the most vCPUs
MAX_IOTHREADS = 64
CPUSET = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")


@dataclass(frozen=True)
class Topology:
    sockets: int
    cores: int
    threads: int

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores * self.threads


@dataclass(frozen=True)
class DiskSpec:
    """`count` data disks of `size_mib` each behind `controller`.

    backing `raw` and `qcow2` create files in `directory` (point it at a tmpfs to take the
    host disk out of the measurement); `block` uses `devices`, one host block device per disk.
    """

    count: int = 0
    size_mib: int = 1024
    controller: str = "virtio-scsi"
    backing: str = "raw"
    directory: Path | None = None
    devices: tuple[str, ...] = ()
    cache: str = "none"
    aio: str = "threads"
    queues: int = 0
    iothreads: int = 0


@dataclass(frozen=True)
class VmSpec:
    vcpus: int = 2
    memory_mib: int = 1024
    topology: Topology | None = None
    pinning: tuple[str, ...] = ()
    machine: str = "pc"
    disks: DiskSpec = field(default_factory=DiskSpec)
    clock: str = DEFAULT_CLOCK
    # host CPUs of QEMU's own threads (main loop, I/O threads): apart from the vCPUs' if set
    emulator_pin: str = ""

    def validate(self) -> "VmSpec":
        if self.vcpus < 1:
            raise UserError(f"vcpus: must be at least 1, got {self.vcpus}")
        if self.vcpus > MAX_VCPUS:
            raise UserError(f"vcpus: must be at most {MAX_VCPUS}, got {self.vcpus}")
        if self.memory_mib < 128:
            raise UserError(f"memory: must be at least 128 MiB, got {self.memory_mib}")
        if self.memory_mib > MAX_MEMORY_MIB:
            raise UserError(f"memory: must be at most {MAX_MEMORY_MIB} MiB (1 TiB), got {self.memory_mib}")
        if self.machine not in MACHINES:
            raise choices_error("machine", self.machine, MACHINES)
        if self.topology is not None and self.topology.cpus != self.vcpus:
            t = self.topology
            raise UserError(
                f"topology: {t.sockets} sockets x {t.cores} cores x {t.threads} threads = "
                f"{t.cpus} CPUs, but vcpus is {self.vcpus}"
            )
        if self.pinning and len(self.pinning) != self.vcpus:
            raise UserError(
                f"pinning: needs one host CPU set per vCPU ({self.vcpus}), got {len(self.pinning)}"
            )
        if self.emulator_pin and not CPUSET.fullmatch(self.emulator_pin):
            raise UserError(f"emulator pinning: expected a host CPU set like 0 or 0-1,3, got {self.emulator_pin!r}")
        check_clock(self.clock)
        _validate_disks(self.disks)
        return self


def _validate_disks(d: DiskSpec) -> None:
    if d.controller not in CONTROLLERS:
        raise choices_error("controller", d.controller, CONTROLLERS)
    if d.count < 0:
        raise UserError(f"disks: must be 0 or more, got {d.count}")
    if d.count > MAX_DISKS:
        raise UserError(f"disks: must be at most {MAX_DISKS}, got {d.count}")
    if d.count > 0 and d.size_mib < 1:
        raise UserError(f"disk size: must be at least 1 MiB, got {d.size_mib}")
    if d.size_mib > MAX_DISK_MIB:
        raise UserError(f"disk size: must be at most {MAX_DISK_MIB} MiB (1 TiB), got {d.size_mib}")
    if d.backing not in BACKINGS:
        raise choices_error("backing", d.backing, BACKINGS)
    if d.backing == "block" and len(d.devices) != d.count:
        raise UserError(f"devices: backing 'block' needs {d.count} host block devices, got {len(d.devices)}")
    if d.cache not in CACHE_MODES:
        raise choices_error("cache", d.cache, CACHE_MODES)
    if d.aio not in AIO_MODES:
        raise choices_error("aio", d.aio, AIO_MODES)
    if d.aio == "native" and d.cache not in ("none", "directsync"):
        raise UserError("aio: 'native' needs cache 'none' or 'directsync' (O_DIRECT)")
    if d.queues < 0 or d.iothreads < 0:
        raise UserError("queues/iothreads: must be 0 (default) or more")
    if d.queues > MAX_QUEUES:
        raise UserError(f"queues: must be at most {MAX_QUEUES}, got {d.queues}")
    if d.iothreads > MAX_IOTHREADS:
        raise UserError(f"iothreads: must be at most {MAX_IOTHREADS}, got {d.iothreads}")
    if d.iothreads and d.controller not in ("virtio-blk", "virtio-scsi"):
        raise UserError(f"iothreads: only virtio-blk and virtio-scsi use iothreads, not {d.controller}")


def disk_names(controller: str, count: int) -> list[str]:
    """Target device names libvirt is given: vda.. for virtio-blk, sda.. for SCSI."""
    prefix = "vd" if CONTROLLERS[controller][0] == "virtio" else "sd"
    return [prefix + _letters(i) for i in range(count)]


def _letters(i: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: the kernel's disk naming."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(ord("a") + r) + s
    return s
