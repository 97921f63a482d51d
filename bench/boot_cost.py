"""Where one boot of a bisection goes: `make bench-boot-cost` (docs/boot-time.md, "Per-boot cost").

Boots KERNEL N times in the demo's guest shape (2 vCPUs, 1 GiB, one virtio-scsi disk) and runs
the demo's workload in each (fio 4k random reads QD16, ramp 1 s + 5 s, 3 runs per boot), as a
bisection step does, and prints the median seconds of every phase: the provider's (cleanup of
dead controllers' leftovers, staging, disk files, waiting for a quiet host, define, start to the
agent's hello, teardown) and the session's (preparing the workload, each run).

Usage: python bench/boot_cost.py [--boots N] [--runs R] [--accel tcg|kvm|auto] KERNEL
KERNEL is `distro` (the newest distribution kernel, its modules in the image) or a bzImage path.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from orchestrator.backends import host
from orchestrator.backends.factory import real_launcher
from orchestrator.vm.spec import DiskSpec, VmSpec
from orchestrator.workloads import runner
from orchestrator.workloads.definition import load_all, resolve

RAMP_S, RUNTIME_S = 1, 5
PARAMS = {"rw": "randread", "bs": "4k", "iodepth": 16, "ramp_time": RAMP_S, "runtime": RUNTIME_S}
ORDER = ("cleanup", "stage", "disks", "settle", "define", "to_agent", "prepare", "runs", "destroy", "files")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--boots", type=int, default=5)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--accel", default="auto")
    p.add_argument("kernel")
    a = p.parse_args()
    launcher = real_launcher()
    accel = launcher.choose_accel(a.accel).accel
    if a.kernel == "distro":
        distro = host.find_distro_kernel()
        if distro is None:
            print("no distribution kernel installed", file=sys.stderr)
            return 1
        kernel, modules = distro.image, distro.release
    else:
        kernel, modules = Path(a.kernel), None
    plan = resolve(load_all(), "fio", [f"{k}={v}" for k, v in PARAMS.items()])
    workload, params = plan.workload, plan.points[0]
    spec = VmSpec(vcpus=2, memory_mib=1024, disks=DiskSpec(count=1, size_mib=256, controller="virtio-scsi"))
    seen: dict[str, list[float]] = {}
    totals: list[float] = []
    for _ in range(a.boots):
        started = time.monotonic()
        with launcher.boot(spec, kernel, accel, modules) as guest:
            t = time.monotonic()
            runner.prepare(guest, workload)
            prepare = time.monotonic() - t
            t = time.monotonic()
            for _ in range(a.runs):
                runner.run(guest, workload, params, accel)
            runs = time.monotonic() - t
            phases = guest.phases
        totals.append(time.monotonic() - started)
        for name, seconds in {**phases, "prepare": prepare, "runs": runs}.items():
            seen.setdefault(name, []).append(seconds)
    fio_s = a.runs * (RAMP_S + RUNTIME_S)
    print(f"kernel {a.kernel}, accelerator {accel}, {a.boots} boots of {a.runs} fio runs ({fio_s} s of fio each)")
    print(f"{'phase':<10} {'median s':>9} {'min':>7} {'max':>7}")
    for name in (*ORDER, *sorted(set(seen) - set(ORDER) - {"guest"})):
        if name in seen:
            v = seen[name]
            print(f"{name:<10} {statistics.median(v):9.2f} {min(v):7.2f} {max(v):7.2f}")
    print(f"{'boot':<10} {statistics.median(totals):9.2f} {min(totals):7.2f} {max(totals):7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
