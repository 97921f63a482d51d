"""Boots one kernel in a campaign's guest shape, one variant after another, and prints each
variant's noise (bench/noise/__init__.py; docs/measurements/noise.md).

    python -m bench.noise SHAPE --kernel BZIMAGE [--variants kernel tsc ...] [--rounds 6]
        [--runs N] [--metric NAME ...] [--out FILE.json]

SHAPE is a shipped campaign's guest and workload: demo, blk8 (the demo's workload on 8
virtio-blk disks), scsi-mq (its CPU-cost campaign), netperf, dbench; or a campaign file's
path. KERNEL is a bzImage with the guest's drivers built in (`vmbisect build`), or `distro`
(the newest distribution kernel, its modules in the initramfs). Prints figures; never fails
on a slow or noisy host. Run it on a quiet host: each boot's row says how many host CPUs
other work took while it ran.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.noise import VARIANTS, guest_of, order, rows, table, variants
from orchestrator import paths
from orchestrator.campaign.file import Campaign, parse_campaign
from orchestrator.campaign.workload import choose_workload
from orchestrator.errors import UserError
from orchestrator.vm.spec import DiskSpec

SHAPES = {"demo": "demo", "blk8": "demo", "scsi-mq": "scsi-mq", "netperf": "netperf", "dbench": "dbench"}
DEFAULT_VARIANTS = ("kernel", "tsc")
CPU_COSTS = ("guest_cpu_us_per_op", "guest_run_us_per_op", "guest_nonidle_us_per_op", "host_cpu_us_per_op",
             "host_vcpu_us_per_op")


def campaign_of(shape: str) -> Campaign:
    import yaml

    path = Path(shape) if shape not in SHAPES else paths.REPO_ROOT / "examples" / SHAPES[shape] / "campaign.yaml"
    if not path.is_file():
        raise UserError(f"shape: no campaign file {path}; valid choices: {', '.join(SHAPES)} or a file")
    raw = yaml.safe_load(path.read_text())
    raw["repository"] = str(paths.REPO_ROOT)  # only the guest and the workload are used
    c = parse_campaign(raw, path.parent, path)
    if shape == "blk8":
        c = dataclasses.replace(c, guest=dataclasses.replace(
            c.guest, disks=DiskSpec(count=8, size_mib=256, controller="virtio-blk")))
    return c


def kernel_artifact(text: str) -> Any:
    from orchestrator.hosts.push import file_sha256
    from orchestrator.ports import KernelArtifact

    if text == "distro":
        from orchestrator.backends.host import find_distro_kernel

        distro = find_distro_kernel()
        if distro is None:
            raise UserError("kernel: no distribution kernel with its modules in /boot and /lib/modules")
        return KernelArtifact(distro.image, file_sha256(distro.image), distro.release)
    path = Path(text)
    if not path.is_file():
        raise UserError(f"kernel: no such file {path}")
    return KernelArtifact(path, file_sha256(path), None)


def host_busy() -> tuple[float, float]:
    """(busy seconds of all host CPUs, monotonic seconds) now, from /proc/stat."""
    import time

    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK"), time.monotonic()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", nargs="?", help="what to boot (not with --table)")
    ap.add_argument("--kernel")
    ap.add_argument("--table", type=Path, metavar="FILE.json", help="print the table of a run saved with --out again")
    ap.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), metavar="NAME",
                    help=f"first is the reference; choices: {', '.join(VARIANTS)}")
    ap.add_argument("--rounds", type=int, default=6, help="boots per variant")
    ap.add_argument("--runs", type=int, help="runs per boot (default: the campaign's)")
    ap.add_argument("--metric", nargs="*", default=[], help="metrics to table beside the campaign's and CPU costs")
    ap.add_argument("--out", type=Path, help="also write every run's metrics as JSON here")
    a = ap.parse_args()
    try:
        if a.table is not None:
            return retable(a.table, a.metric)
        if a.shape is None or a.kernel is None:
            raise UserError("shape, kernel: both are needed to boot (or --table FILE.json)")
        return run(a)
    except UserError as exc:
        print(f"bench.noise: {exc}", file=sys.stderr)
        return 2


def retable(path: Path, extra: list[str]) -> int:
    """The table of a run saved with --out, from its every run's metrics."""
    doc = json.loads(path.read_text())
    data: dict[str, dict[str, list[list[float]]]] = {}
    metric = doc.get("metric", "")
    for boot in doc["boots"]:
        per = data.setdefault(boot["variant"], {})
        for name in {k for r in boot["runs"] for k in r}:
            values = [r[name] for r in boot["runs"] if name in r]
            per.setdefault(name, []).append(values)
    names = [m for m in (metric, *CPU_COSTS, *extra) if m]
    print("\n".join(table([r for m in names for r in rows(data, m)])))
    return 0


def run(a: argparse.Namespace) -> int:
    from orchestrator.hosts.lab import local_lab
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.wiring import open_pool

    c = campaign_of(a.shape)
    chosen = variants(a.variants)
    choice = choose_workload(c)
    kernel = kernel_artifact(a.kernel)
    runs = a.runs or c.runs_per_boot
    host_cpus = os.cpu_count() or 1
    metrics = [c.metric.name, *CPU_COSTS, *a.metric]
    data: dict[str, dict[str, list[list[float]]]] = {v.name: {} for v in chosen}
    facts: list[dict[str, Any]] = []
    pool = open_pool(local_lab())
    print(f"shape {a.shape}: {c.guest.vcpus} vCPUs, {c.guest.disks.count} x {c.guest.disks.controller}, "
          f"{choice.workload.name} {dict(choice.params)}; {runs} runs a boot, {a.rounds} boots a variant; "
          f"kernel {kernel.image}", flush=True)
    try:
        for round_no in range(a.rounds):
            for name in order([v.name for v in chosen], round_no):
                v = VARIANTS[name]
                spec = guest_of(v, c.guest, host_cpus)
                append = " ".join(w for w in (c.append, v.append) if w)
                measurer = PoolMeasurer(pool, spec, choice.workload, choice.params,
                                        choice.workload.kernel_needs(choice.params), c.accel, append,
                                        c.timeouts.boot_s, c.timeouts.run_s, one_host=True)
                with measurer.boot(kernel) as session:
                    clock = session.guest.agent.get(
                        "/sys/devices/system/clocksource/clocksource0/current_clocksource").decode().strip()
                    b0 = host_busy()
                    results = [session.run() for _ in range(runs)]
                    b1 = host_busy()
                # the host CPUs busy during the runs beyond the guest's own QEMU (an upper bound:
                # the short gaps between runs count as others' time)
                guest_cpu = sum(r.metrics["host_cpu"].value for r in results if "host_cpu" in r.metrics)
                others = max(0.0, (b1[0] - b0[0] - guest_cpu) / (b1[1] - b0[1]))
                for m in metrics:
                    values = [r.metrics[m].value for r in results if m in r.metrics]
                    if values:
                        data[name].setdefault(m, []).append(values)
                main = [round(r.metrics[c.metric.name].value, 4) for r in results if c.metric.name in r.metrics]
                facts.append({"round": round_no, "variant": name, "clocksource": clock, "accel": session.guest.accel,
                              "other_busy_cpus": round(others, 2), c.metric.name: main,
                              "runs": [{k: m.value for k, m in r.metrics.items()} for r in results]})
                print(f"round {round_no + 1} {name}: clocksource {clock}, {c.metric.name} {main}, "
                      f"other busy host CPUs {others:.2f}", flush=True)
    finally:
        pool.close()
    print()
    print("\n".join(table([r for m in metrics for r in rows(data, m)])))
    if a.out:
        a.out.write_text(json.dumps({"shape": a.shape, "kernel": str(kernel.image), "metric": c.metric.name,
                                     "boots": facts}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
