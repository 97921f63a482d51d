"""`vmbisect measure`: boot a kernel, run a workload N times, print per-metric statistics.

Each boot runs every sweep point `--reps` times; `--boots` repeats that on fresh guests.
Filesystems (dbench) are made fresh before every repetition; raw disks (fio) are reused.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from orchestrator.commands.argtypes import count, existing_file, seconds
from orchestrator.commands.labopts import add_lab_options, lab_from_args
from orchestrator.commands.vmopts import add_vm_options, spec_from_args
from orchestrator.errors import UserError
from orchestrator.stats import Summary, summarize
from orchestrator.vm.spec import VmSpec
from orchestrator.workloads.definition import RunPlan, WorkloadDef, load_all, resolve
from orchestrator.workloads.result import RunResult


def add_parser(sub: Any) -> None:
    m = sub.add_parser("measure", help="boot a kernel and run a workload N times; per-metric statistics")
    m.add_argument("--kernel", required=True, type=existing_file, help="bzImage / vmlinuz to boot")
    m.add_argument("--initrd-modules-from", metavar="RELEASE",
                   help="put this host kernel release's driver modules into the initramfs")
    m.add_argument("--workload", required=True, help="a workload (fio, dbench, netperf) or preset name")
    m.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="override a parameter; KEY=a,b,c sweeps it (repeatable)")
    m.add_argument("--reps", type=count(1, 1000), default=3, help="repetitions per sweep point and boot (default 3)")
    m.add_argument("--boots", type=count(1, 100), default=1, help="fresh guests to repeat the repetitions on (default 1)")
    add_vm_options(m)
    add_lab_options(m)
    m.add_argument("--append", default="", help="extra kernel command line")
    m.add_argument("--timeout", type=seconds(1), default=120.0, help="seconds to wait for the agent (default 120)")
    m.add_argument("--all-metrics", action="store_true", help="table every metric, per disk and vCPU and the kernel counters too")
    m.add_argument("--json", action="store_true", help="print every sample with its raw outputs as JSON")


def plan_from_args(a: argparse.Namespace) -> tuple[RunPlan, VmSpec]:
    """Everything checked before a guest starts: workload, parameters, disks (counts and the
    kernel file are checked by their argparse types)."""
    plan = resolve(load_all(), a.workload, a.param)
    spec = spec_from_args(a)
    if spec.disks.count < plan.workload.needs_disks:
        raise UserError(f"disks: {plan.workload.name} needs at least {plan.workload.needs_disks} data disk(s); "
                        f"add --disks N")
    for point in plan.points:
        wanted = point.get("disks", "all")
        if wanted != "all" and int(wanted) > spec.disks.count:
            raise UserError(f"param: {plan.workload.name} disks={wanted} but the guest gets {spec.disks.count} "
                            f"(--disks); valid choices: all, 1..{spec.disks.count}")
        if int(point.get("disk", 0)) >= max(spec.disks.count, 1):
            raise UserError(f"param: {plan.workload.name} disk={point['disk']} but the guest gets "
                            f"{spec.disks.count} (--disks); valid choices: 0..{spec.disks.count - 1}")
    return plan, spec


def run(a: argparse.Namespace) -> int:
    from orchestrator.hosts.push import file_sha256
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.ports import KernelArtifact

    plan, spec = plan_from_args(a)
    lab = lab_from_args(a)
    kernel = KernelArtifact(a.kernel, file_sha256(a.kernel), a.initrd_modules_from)
    samples: list[tuple[int, str, RunResult]] = []
    boots: list[dict[str, Any]] = []
    from orchestrator.wiring import open_pool

    pool = open_pool(lab)
    # Every boot on one host: samples from hosts of different speed are never mixed.
    measurer = PoolMeasurer(pool, spec, plan.workload, plan.points[0], plan.workload.kernel_needs_all(plan.points),
                            a.accel, a.append, a.timeout, host=a.host, one_host=True)
    try:
        measurer.check(kernel)
        for boot in range(a.boots):
            with measurer.boot(kernel) as session:
                guest = session.guest
                boots.append({"host": session.host, "hello": guest.hello, "boot_seconds": session.boot_seconds,
                              "accel": guest.accel})
                for point in plan.points:
                    for _ in range(a.reps):
                        samples.append((boot, plan.point_label(point), session.run(point)))
    finally:
        pool.close()
    if a.json:
        json.dump(to_json(plan, boots, samples), sys.stdout, indent=1)
        print()
    else:
        print_table(plan, [(p, s) for _b, p, s in samples], a.all_metrics, boots[0]["host"] if a.lab else "")
    return 0


def table_rows(workload: WorkloadDef, samples: list[tuple[str, RunResult]],
               all_metrics: bool) -> list[tuple[str, str, str, str, Summary]]:
    """(point, metric, unit, direction, Summary) in first-seen order; instance metrics
    (per disk, per vCPU: names with a suffix beyond their definition) only with all_metrics."""
    from orchestrator.workloads.system import METRICS

    defined = {**workload.metrics, **METRICS}
    values: dict[tuple[str, str], list[float]] = {}
    meta: dict[str, tuple[str, str]] = {}
    for point, result in samples:
        for name, m in result.metrics.items():
            if name not in defined and not all_metrics:
                continue
            values.setdefault((point, name), []).append(m.value)
            meta[name] = (m.unit, m.direction)
    return [(point, name, *meta[name], summarize(v)) for (point, name), v in values.items()]


def print_table(plan: RunPlan, samples: list[tuple[str, RunResult]], all_metrics: bool, host: str = "") -> None:
    from rich.console import Console
    from rich.table import Table

    from orchestrator.commands.listing import plain

    swept = plan.swept is not None
    title = f"vmbisect measure {plan.label}" + (f" on host {host}" if host else "")
    columns = (["point"] if swept else []) + ["metric", "unit", "better", "n", "mean", "stddev", "coeffvar%",
                                              "min", "max"]
    rows = [([point] if swept else []) + [name, unit, direction, str(s.n), _num(s.mean), _num(s.stddev),
                                         f"{100 * s.cov:.2f}", _num(s.min), _num(s.max)]
            for point, name, unit, direction, s in table_rows(plan.workload, samples, all_metrics)]
    notes = [f"note: {note}" for note in sorted({n for _p, r in samples for n in r.notes})]
    if not sys.stdout.isatty():  # every value whole (--json for scripts)
        print("\n".join([title, *plain(columns, rows), *notes]))
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="left" if col in ("point", "metric", "unit", "better") else "right",
                         no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console = Console()
    console.print(table)
    for note in notes:
        console.print(note, markup=False)


def _num(x: float) -> str:
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:.0f}"


def to_json(plan: RunPlan, boots: list[dict[str, Any]], samples: list[tuple[int, str, RunResult]]) -> dict[str, Any]:
    return {
        "workload": plan.workload.name,
        "label": plan.label,
        "swept": plan.swept,
        "boots": boots,
        "samples": [{"boot": b, "point": p, **r.to_json()} for b, p, r in samples],
        "summary": [{"point": p, "metric": n, "unit": u, "direction": d, **s.__dict__}
                    for p, n, u, d, s in table_rows(plan.workload, [(p, r) for _b, p, r in samples], True)],
    }
