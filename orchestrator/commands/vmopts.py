"""Guest-shape options shared by every command that boots guests."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.vm.clocksource import CLOCKS, DEFAULT_CLOCK
from orchestrator.vm.options import GuestOptions
from orchestrator.vm.spec import AIO_MODES, BACKINGS, CACHE_MODES, MACHINES, VmSpec


def add_vm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vcpus", type=int, default=2)
    p.add_argument("--memory", type=int, default=1024, metavar="MiB")
    p.add_argument("--machine", default="pc", help=f"one of {', '.join(MACHINES)}")
    p.add_argument("--topology", metavar="SOCKETS:CORES:THREADS", help="vCPU topology, e.g. 2:4:2 for 16 vCPUs")
    p.add_argument("--pin", metavar="CPUSET,...", help="host CPU set per vCPU, '/'-separated sets allowed: 0,1 or 0-1/2-3")
    p.add_argument("--disks", type=int, default=0, help="number of data disks")
    p.add_argument("--disk-size", type=int, default=1024, metavar="MiB")
    p.add_argument("--controller", default="virtio-scsi",
                   help="virtio-blk, virtio-scsi, lsisas1068, lsisas1078 or lsilogic")
    p.add_argument("--backing", default="raw", help=f"one of {', '.join(BACKINGS)}")
    p.add_argument("--disk-dir", type=Path, help="directory for disk files (e.g. a tmpfs)")
    p.add_argument("--cache", default="none", help=f"one of {', '.join(CACHE_MODES)}")
    p.add_argument("--aio", default="threads", help=f"one of {', '.join(AIO_MODES)}")
    p.add_argument("--queues", type=int, default=0)
    p.add_argument("--iothreads", type=int, default=0)
    p.add_argument("--accel", default="auto", help="auto (probe), kvm or tcg")
    p.add_argument("--clock", default=DEFAULT_CLOCK,
                   help=f"the guest's clocksource: one of {', '.join(CLOCKS)} (default auto: tsc under TCG, the "
                        "kernel's choice under KVM; docs/measurements/noise.md)")
    p.add_argument("--pin-emulator", metavar="CPUSET",
                   help="host CPUs for QEMU's own threads (main loop, I/O threads), e.g. 0")


def guest_options(a: argparse.Namespace) -> GuestOptions:
    """The options `add_vm_options` added, typed (nothing checked yet: `vm_spec()` does)."""
    return GuestOptions(vcpus=a.vcpus, memory_mib=a.memory, machine=a.machine, topology=a.topology, pin=a.pin,
                        disks=a.disks, disk_size_mib=a.disk_size, controller=a.controller, backing=a.backing,
                        disk_dir=a.disk_dir, cache=a.cache, aio=a.aio, queues=a.queues, iothreads=a.iothreads,
                        accel=a.accel, clock=a.clock, pin_emulator=a.pin_emulator)


def spec_from_args(a: argparse.Namespace) -> VmSpec:
    return guest_options(a).vm_spec()
