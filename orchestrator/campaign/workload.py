"""A bisection's workload: the campaign's workload as one parameter set, the metric it
bisects with its direction, and the metrics it watches (the engine's kernels and guests come
from the one measurement layer, orchestrator/wiring.py).

A campaign may bisect any metric a run records in its guest and judges, the workload's own
or a system one (orchestrator/workloads/system.py: CPU per operation and per byte, context
switches and interrupts per operation, iostat's await per disk, busy time per vCPU, the
busiest vCPU's share): every run stores all of them (RunResult.values), so the judge, the
confirmation, the revert, the reports and the dashboard read a system metric from the stored
runs as they read a workload's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from orchestrator.campaign.file import Campaign
from orchestrator.errors import UserError, choices_error
from orchestrator.vm.spec import VmSpec, disk_names
from orchestrator.workloads import system
from orchestrator.workloads.definition import MetricDef, WorkloadDef, load_all, resolve


@dataclass(frozen=True)
class WorkloadChoice:
    workload: WorkloadDef
    params: Mapping[str, Any]
    direction: str
    metric: MetricDef  # the bisected metric's definition, its direction the campaign's if it gives one
    watched: tuple[MetricDef, ...] = ()  # metric.watch: reported for the culprit, never judged


def recorded(workload: WorkloadDef, guest: VmSpec) -> dict[str, MetricDef]:
    """Every metric a run of `workload` records in `guest`, by the name it is stored under: the
    workload's own, the system ones, per-disk ones for each data disk (`iostat_await.sda`) and
    per-vCPU ones for each vCPU (`guest_vcpu_busy.0`)."""
    instances = {"disk": disk_names(guest.disks.controller, guest.disks.count),
                 "vcpu": [str(i) for i in range(guest.vcpus)]}
    out = dict(workload.metrics)
    for m in system.METRICS.values():
        if m.per:
            out |= {f"{m.name}.{i}": dataclasses.replace(m, name=f"{m.name}.{i}") for i in instances[m.per]}
        else:
            out[m.name] = m
    return out


def unavailable(m: MetricDef, guest: VmSpec, accel: str) -> str:
    """Why a run of this campaign never records `m` ("" when it does)."""
    if m.accel and accel not in ("auto", m.accel):
        return (f"{m.name} is recorded only under {m.accel.upper()} and the campaign says accel: {accel}; "
                "host_cpu_us_per_op or guest_cpu_us_per_op measure the CPU per operation there")
    if guest.vcpus < m.min_vcpus:
        return f"{m.name} needs at least {m.min_vcpus} vCPUs, the guest has {guest.vcpus} (guest.vcpus)"
    return ""


def judgeable(defs: Mapping[str, MetricDef]) -> list[str]:
    """The names a bisection can judge: those with a better direction."""
    return [n for n, m in defs.items() if m.direction in ("higher", "lower")]


def listed(names: list[str]) -> str:
    """Names for an error line, each per-instance family as one `base.{a,b,c}`."""
    families: dict[str, list[str]] = {}
    for n in names:
        base, dot, inst = n.rpartition(".")
        key = base if dot and base in system.METRICS else n
        families.setdefault(key, []).append(inst if key != n else "")
    return ", ".join(k if insts == [""] else f"{k}.{{{','.join(insts)}}}" for k, insts in families.items())


def choose_metric(campaign: Campaign, workload: WorkloadDef) -> tuple[MetricDef, tuple[MetricDef, ...]]:
    """The bisected metric (direction the campaign's, else its own) and the watched ones, or a
    one-line error naming the field and the metrics that can be used."""
    every = recorded(workload, campaign.guest)
    defs = {n: m for n, m in every.items() if not unavailable(m, campaign.guest, campaign.accel)}
    name = campaign.metric.name
    choices = listed(judgeable(defs))
    for field, wanted in (("metric.name", [name]), ("metric.watch", campaign.metric.watch)):
        for n in wanted:
            if n in every and n not in defs:
                raise UserError(f"{field}: {unavailable(every[n], campaign.guest, campaign.accel)}")
            if n not in defs:
                raise choices_error(field, n, choices if field == "metric.name" else listed(list(defs)))
    m = defs[name]
    if m.direction not in ("higher", "lower"):
        raise UserError(f"metric.name: {name} is descriptive (no better direction) and cannot be judged; "
                        f"valid choices: {choices}")
    watched = [defs[w] for w in campaign.metric.watch]
    return dataclasses.replace(m, direction=campaign.metric.direction or m.direction), tuple(watched)


def choose_workload(campaign: Campaign) -> WorkloadChoice:
    """The campaign's workload as one parameter set, its metric with the direction, the watched metrics."""
    overrides = [f"{k}={v}" for k, v in campaign.workload.params.items()]
    plan = resolve(load_all(), campaign.workload.name, overrides)
    if plan.swept and plan.swept in campaign.workload.params:
        raise UserError(f"workload.params: a bisection measures one setting; {plan.swept} is a sweep")
    if plan.swept:  # the preset's sweep, which the user never wrote: name the values to pick from
        values = ", ".join(str(p[plan.swept]) for p in plan.points)
        raise UserError(f"workload.params.{plan.swept}: the {campaign.workload.name} preset sweeps {plan.swept} over "
                        f"{values} and a bisection measures one setting; give one, e.g. workload: {{name: "
                        f"{campaign.workload.name}, params: {{{plan.swept}: {plan.points[-1][plan.swept]}}}}}")
    metric, watched = choose_metric(campaign, plan.workload)
    return WorkloadChoice(plan.workload, plan.points[0], metric.direction, metric, watched)
