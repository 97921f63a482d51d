"""A comparison's plan from its options, checked before any build or guest: variants, the
workload and its sweep points, the guest shape, repetitions and the metrics asked about."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from orchestrator.compare.schedule import default_boots
from orchestrator.compare.spec import CompareSpec
from orchestrator.compare.variant import Variant, boot_groups, parse_variants
from orchestrator.direction import Direction
from orchestrator.errors import UserError, choices_error
from orchestrator.metrictable.tabulate import Point
from orchestrator.vm.spec import ACCELS, VmSpec
from orchestrator.workloads.definition import WorkloadDef, load_all, resolve
from orchestrator.workloads.params import ParamValue


@dataclass(frozen=True)
class SweepPoint:
    point: Point
    params: Mapping[str, ParamValue]


@dataclass(frozen=True)
class ComparePlan:
    title: str
    variants: tuple[Variant, ...]
    groups: tuple[tuple[Variant, ...], ...]
    workload: WorkloadDef
    workload_label: str
    points: tuple[SweepPoint, ...]
    swept: str | None
    spec: VmSpec
    reps: int
    boots: int
    primary: tuple[str, ...]
    alpha: float
    repo: Path | None
    recipe: tuple[str, ...]
    timeout_s: float
    all_metrics: bool
    accel: str
    lab: Path | None = None  # the lab file; None: this machine
    host: str | None = None  # the lab host asked for
    params: tuple[str, ...] = ()  # the workload parameters as given (KEY=VALUE), swept ones too


def _sweep_dims(workloads: Mapping[str, WorkloadDef], name: str, params: list[str],
                sweeps: list[str]) -> list[tuple[str, list[str]]]:
    base = resolve(workloads, name, params)
    dims: dict[str, list[str]] = {}
    if base.swept:
        dims[base.swept] = [str(p[base.swept]) for p in base.points]
    for item in sweeps:
        key, sep, text = item.partition("=")
        values = [v for v in text.split(",") if v]
        if not sep or not values:
            raise UserError(f"sweep: expected KEY=V1,V2,..., got {item!r}")
        if key not in base.workload.params:
            raise choices_error(f"sweep: {base.workload.name} parameter", key, base.workload.params)
        dims[key] = values
    return list(dims.items())


def _numeric(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def sweep_points(workloads: Mapping[str, WorkloadDef], name: str, params: list[str],
                 sweeps: list[str]) -> tuple[WorkloadDef, tuple[SweepPoint, ...], str | None]:
    """Every combination of the swept values (a preset's sweep, --param k=a,b, --sweep k=a,b;
    several sweeps multiply), each resolved and checked like a single run."""
    dims = _sweep_dims(workloads, name, params, sweeps)
    fixed = [p for p in params if p.partition("=")[0] not in dict(dims)]
    points = []
    for combo in itertools.product(*(values for _k, values in dims)):
        pairs = list(zip((k for k, _v in dims), combo))
        plan = resolve(workloads, name, fixed + [f"{k}={v}" for k, v in pairs])
        label = " ".join(f"{k}={v}" for k, v in pairs)
        x = _numeric(str(plan.points[0][dims[0][0]])) if len(dims) == 1 else None
        points.append(SweepPoint(Point(label, x), plan.points[0]))
    workload = resolve(workloads, name, fixed).workload
    return workload, tuple(points), " x ".join(k for k, _v in dims) or None


def headline_metric(workload: WorkloadDef, params: Mapping[str, ParamValue]) -> str:
    """The metric a workload is judged by when none is named: netperf's transactions for
    TCP_RR, else its first higher-is-better metric."""
    if workload.name == "netperf" and str(params.get("test", "")).upper() == "TCP_RR":
        return "transactions"
    return next(m.name for m in workload.metrics.values() if m.direction == Direction.HIGHER)


def plan_from_spec(a: CompareSpec) -> ComparePlan:
    """The checked plan of a comparison; the same spec gives the same plan (resume relies on it)."""
    for field in ("reps", "boots"):
        value = getattr(a, field)
        if value is not None and value < 1:
            raise UserError(f"{field}: must be at least 1, got {value}")
    if not 0 < a.alpha < 0.5:
        raise UserError(f"alpha: must be between 0 and 0.5, got {a.alpha}")
    variants = parse_variants(list(a.variants), a.kernel, a.initrd_modules_from, a.append)
    if any(v.commit for v in variants) and a.repo is None:
        raise UserError("repo: a variant names a commit; give --repo PATH of the kernel git repository")
    workloads = load_all()
    workload, points, swept = sweep_points(workloads, a.workload, list(a.params), list(a.sweeps))
    spec = a.guest.vm_spec()
    if a.guest.accel not in ("auto", *ACCELS):
        raise choices_error("accel", a.guest.accel, ("auto", *ACCELS))
    if spec.disks.count < workload.needs_disks:
        raise UserError(f"disks: {workload.name} needs at least {workload.needs_disks} data disk(s); add --disks N")
    if any(v.sched or any("{disk}" in p for p, _v in v.sysfs) for v in variants) and spec.disks.count == 0:
        raise UserError("disks: a variant sets a disk setting (sched or {disk}) but the guest has no data disks; "
                        "add --disks N")
    primary = tuple(a.metrics) or (headline_metric(workload, points[0].params),)
    for m in primary:
        if m not in workload.metrics:
            raise choices_error("metric", m, sorted(workload.metrics))
    groups = tuple(tuple(g) for g in boot_groups(variants))
    reps = a.reps
    boots = a.boots if a.boots is not None else default_boots(len(groups), reps)
    if boots > reps:
        raise UserError(f"boots: at most --reps ({reps}) boots per variant, got {boots}")
    title = a.title or f"{a.workload}: " + " vs ".join(v.name for v in variants)
    return ComparePlan(title, variants, groups, workload, a.workload, points, swept, spec, reps, boots, primary,
                       a.alpha, a.repo, tuple(a.config), a.timeout_s, a.all_metrics, a.guest.accel, a.lab, a.host,
                       tuple(a.params))
