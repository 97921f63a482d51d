"""The engine's ports over the real parts: the kernel builder, libvirt guests, the workloads."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from orchestrator.backends.factory import GuestLauncher
from orchestrator.backends.libvirt_vm import Guest
from orchestrator.campaign import Campaign
from orchestrator.errors import UserError, choices_error
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.recipe import Recipe
from orchestrator.ports import BuiltKernel, RunResult
from orchestrator.workloads import kneeds, runner
from orchestrator.workloads.definition import WorkloadDef, load_all, resolve


class BuilderPort:
    """Builds commits of the user's repository, and the reverts the engine makes in its own
    clone `clone` (fetched into the builder's checkout; the user's repository is only read)."""

    def __init__(self, builder: KernelBuilder, repo: Path, recipe: Recipe, timeout_s: float | None = None,
                 clone: Path | None = None) -> None:
        self.builder, self.repo, self.recipe, self.timeout_s, self.clone = builder, repo, recipe, timeout_s, clone

    def build(self, commit: str) -> BuiltKernel:
        theirs = subprocess.run(["git", "-C", str(self.repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                                capture_output=True).returncode == 0
        objects = None if theirs or self.clone is None else self.clone
        image = self.builder.build(self.repo, commit, self.recipe, self.timeout_s, objects)
        return BuiltKernel(commit, image.path, image.sha256, image.from_cache, image.duration_s)


@dataclass(frozen=True)
class WorkloadChoice:
    workload: WorkloadDef
    params: Mapping[str, Any]
    direction: str


def choose_workload(campaign: Campaign) -> WorkloadChoice:
    """The campaign's workload as one parameter set, and the metric's direction."""
    overrides = [f"{k}={v}" for k, v in campaign.workload.params.items()]
    plan = resolve(load_all(), campaign.workload.name, overrides)
    if plan.swept:
        raise UserError(f"workload.params: a bisection measures one setting; {plan.swept} is a sweep")
    metrics = plan.workload.metrics
    if campaign.metric.name not in metrics:
        raise choices_error("metric.name", campaign.metric.name, sorted(metrics))
    direction = campaign.metric.direction or metrics[campaign.metric.name].direction
    if direction not in ("higher", "lower"):
        raise UserError(f"metric.direction: {campaign.metric.name} is descriptive; say higher or lower")
    return WorkloadChoice(plan.workload, plan.points[0], direction)


class GuestSessionPort:
    def __init__(self, guest: Guest, choice: WorkloadChoice, run_s: float) -> None:
        self.guest, self.choice, self.run_s = guest, choice, run_s
        self.boot_seconds = guest.boot_seconds

    def run(self) -> RunResult:
        result = runner.run(self.guest, self.choice.workload, self.choice.params, self.guest.accel, self.run_s)
        return RunResult(result.values(), result.to_json())


class MeasurerPort:
    def __init__(self, launcher: GuestLauncher, campaign: Campaign, choice: WorkloadChoice, accel: str) -> None:
        self.launcher, self.c, self.choice, self.accel = launcher, campaign, choice, accel

    @contextmanager
    def boot(self, kernel: BuiltKernel) -> Iterator[GuestSessionPort]:
        workload = self.choice.workload
        kneeds.check_kernel(workload.name, workload.kernel_needs(self.choice.params), kernel.path,
                            f"the kernel built at {kernel.commit[:12]}")
        with self.launcher.boot(self.c.guest, kernel.path, self.accel, kernel.modules_release, self.c.append,
                                self.c.timeouts.boot_s) as guest:
            runner.prepare(guest, self.choice.workload)
            yield GuestSessionPort(guest, self.choice, self.c.timeouts.run_s)
