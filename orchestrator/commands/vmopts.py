"""Guest-shape options shared by every command that boots guests."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.vm.spec import AIO_MODES, BACKINGS, CACHE_MODES, MACHINES, DiskSpec, VmSpec


def add_vm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vcpus", type=int, default=2)
    p.add_argument("--memory", type=int, default=1024, metavar="MiB")
    p.add_argument("--machine", default="pc", help=f"one of {', '.join(MACHINES)}")
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
    return VmSpec(vcpus=a.vcpus, memory_mib=a.memory, machine=a.machine, disks=disks).validate()
