"""Boot time from domain start to the agent's hello, per kernel: `make bench-boot`.

Usage: python bench/boot_time.py [--boots N] [--accel tcg|kvm|auto] KERNEL...
KERNEL is `distro` (the newest distribution kernel, with its modules in the image) or a path
to a bzImage with the guest drivers built in (e.g. one built from kconfigs/guest-base.config).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from orchestrator.backends import host
from orchestrator.backends.factory import real_launcher
from orchestrator.vm.spec import DiskSpec, VmSpec


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--boots", type=int, default=5)
    p.add_argument("--accel", default="auto")
    p.add_argument("kernels", nargs="+")
    a = p.parse_args()
    launcher = real_launcher()
    accel = launcher.choose_accel(a.accel).accel
    spec = VmSpec(vcpus=2, disks=DiskSpec(count=1, size_mib=64, controller="virtio-scsi"))
    print(f"accelerator: {accel}; guest: 2 vCPUs, 1 GiB, 1 virtio-scsi disk; {a.boots} boots per kernel")
    print(f"{'kernel':<40} {'mean':>6} {'min':>6} {'max':>6}  guest uptime at hello (mean)")
    for name in a.kernels:
        if name == "distro":
            distro = host.find_distro_kernel()
            if distro is None:
                print("no distribution kernel installed", file=sys.stderr)
                return 1
            kernel, modules, label = distro.image, distro.release, f"distro {distro.release}"
        else:
            kernel, modules, label = Path(name), None, name
        times, uptimes = [], []
        for _ in range(a.boots):
            with launcher.boot(spec, kernel, accel, modules) as guest:
                times.append(guest.boot_seconds)
                uptimes.append(float(guest.hello["uptime_s"]))
        print(f"{label:<40} {statistics.mean(times):6.2f} {min(times):6.2f} {max(times):6.2f}  "
              f"{statistics.mean(uptimes):.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
