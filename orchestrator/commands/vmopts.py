"""Guest-shape options shared by every command that boots guests."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.vm.spec import AIO_MODES, BACKINGS, CACHE_MODES, MACHINES, DiskSpec, Topology, VmSpec


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


def spec_from_args(a: argparse.Namespace) -> VmSpec:
    disks = DiskSpec(count=a.disks, size_mib=a.disk_size, controller=a.controller, backing=a.backing,
                     directory=a.disk_dir, cache=a.cache, aio=a.aio, queues=a.queues, iothreads=a.iothreads)
    return VmSpec(vcpus=a.vcpus, memory_mib=a.memory, machine=a.machine, disks=disks,
                  topology=parse_topology(a.topology), pinning=parse_pinning(a.pin)).validate()


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
