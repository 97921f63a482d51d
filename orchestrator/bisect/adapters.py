"""A bisection's workload: the campaign's workload as one parameter set and its metric's
direction (the engine's kernels and guests come from the one measurement layer,
orchestrator/wiring.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from orchestrator.campaign import Campaign
from orchestrator.errors import UserError, choices_error
from orchestrator.workloads.definition import WorkloadDef, load_all, resolve


@dataclass(frozen=True)
class WorkloadChoice:
    workload: WorkloadDef
    params: Mapping[str, Any]
    direction: str


def choose_workload(campaign: Campaign) -> WorkloadChoice:
    """The campaign's workload as one parameter set, and the metric's direction."""
    overrides = [f"{k}={v}" for k, v in campaign.workload.params.items()]
    plan = resolve(load_all(), campaign.workload.name, overrides)
    if plan.swept and plan.swept in campaign.workload.params:
        raise UserError(f"workload.params: a bisection measures one setting; {plan.swept} is a sweep")
    if plan.swept:  # the preset's sweep, which the user never wrote: name the values to pick from
        values = ", ".join(str(p[plan.swept]) for p in plan.points)
        raise UserError(f"workload.params.{plan.swept}: the {campaign.workload.name} preset sweeps {plan.swept} over "
                        f"{values} and a bisection measures one setting; give one, e.g. workload: {{name: "
                        f"{campaign.workload.name}, params: {{{plan.swept}: {plan.points[-1][plan.swept]}}}}}")
    metrics = plan.workload.metrics
    if campaign.metric.name not in metrics:
        raise choices_error("metric.name", campaign.metric.name, sorted(metrics))
    direction = campaign.metric.direction or metrics[campaign.metric.name].direction
    if direction not in ("higher", "lower"):
        raise UserError(f"metric.direction: {campaign.metric.name} is descriptive; say higher or lower")
    return WorkloadChoice(plan.workload, plan.points[0], direction)
