"""Runs a comparison's schedule on real guests and stores every run as it completes, so a
crash or a killed controller loses at most the run in flight (`vmbisect resume ID` goes on).

The parts it drives are passed in: a kernel source (build or look up each variant's kernel), a
launcher (boots guests; GuestLauncher in production), the workload runner. Tests pass fakes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from orchestrator.compare import settings
from orchestrator.compare.plan import ComparePlan
from orchestrator.compare.schedule import remaining, schedule
from orchestrator.compare.variant import Variant
from orchestrator.errors import KernelFault, UserError, WorkloadFailed
from orchestrator.render.scale import whole_or_4g
from orchestrator.store import Store
from orchestrator.vm.spec import VmSpec
from orchestrator.workloads import kneeds
from orchestrator.workloads import runner as workload_runner
from orchestrator.workloads.result import RunResult


@dataclass(frozen=True)
class Kernel:
    path: Path
    modules_release: str | None
    describe: str  # "commit 1a2b3c4d5e6f (bzImage sha256 ...)"


class KernelSource(Protocol):
    def kernel(self, variant: Variant) -> Kernel: ...


class Launcher(Protocol):
    def boot(self, spec: VmSpec, kernel: Path, accel: str, modules_release: str | None = None, append: str = "",
             timeout_s: float = 60.0) -> AbstractContextManager[Any]: ...


RunFn = Callable[[Any, Any, Any, str], RunResult]
Progress = Callable[[str], None]


class NicedGuest:
    """A guest whose commands run under `nice -n N`; everything else passes through."""

    def __init__(self, guest: Any, nice: int) -> None:
        self._guest, self._nice = guest, nice

    def exec(self, argv: list[str], **kwargs: Any) -> Any:
        return self._guest.exec(["nice", "-n", str(self._nice), *argv], **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._guest, name)


def stored_counts(store: Store, campaign_id: int) -> Counter[tuple[str, int]]:
    """Runs already kept per (variant, point index)."""
    return Counter((r.raw["variant"], int(r.raw["point_index"])) for r in store.runs(campaign_id))


class GuestSettings:
    """Applies variants' sysfs settings in one guest, restoring what other variants changed."""

    def __init__(self, guest: Any, group: tuple[Variant, ...]) -> None:
        self.guest = guest
        disks = workload_runner.data_disks(guest)
        self.wants = {v.name: settings.wanted(v, disks) for v in group}
        paths = dict.fromkeys(p for w in self.wants.values() for p in w)
        self.original = {p: settings.current(self._read(p, group[0].name)) for p in paths}
        self.applied: str | None = None

    def _read(self, path: str, variant: str) -> str:
        try:
            return self.guest.agent.get(path).decode(errors="replace")
        except WorkloadFailed as exc:  # the agent's error response, e.g. no such file
            raise UserError(f"variant {variant}: cannot read {path} in this guest ({exc})") from None

    def apply(self, variant: Variant) -> None:
        if self.applied == variant.name:
            return
        for path, value in settings.plan_writes(self.original, self.wants[variant.name]).items():
            result = self.guest.exec(settings.write_argv(path, value), timeout_s=30.0)
            content = self._read(path, variant.name)
            if not result.succeeded or settings.current(content) != value:
                offered = settings.choices(content)
                hint = f"; valid choices: {', '.join(offered)}" if offered else f"; it reads {content.strip()!r}"
                raise UserError(f"variant {variant.name}: cannot set {path} to {value!r}{hint}")
        self.applied = variant.name


def run_plan(plan: ComparePlan, store: Store, campaign_id: int, kernels: KernelSource, launcher: Launcher,
             accel: str, progress: Progress = lambda _m: None, run_fn: RunFn = workload_runner.run) -> None:
    """Every run the schedule still lacks, stored one by one."""
    names = [[v.name for v in g] for g in plan.groups]
    by_name = {v.name: v for v in plan.variants}
    todo = remaining(schedule(names, len(plan.points), plan.reps, plan.boots), dict(stored_counts(store,
                                                                                                   campaign_id)))
    total = sum(len(b.slots) for b in todo)
    done = 0
    # every kernel before the first run: a build failure stops the comparison before it measures
    resolved = {g: kernels.kernel(plan.groups[g][0]) for g in dict.fromkeys(b.group for b in todo)}
    needs = plan.workload.kernel_needs_all(p.params for p in plan.points)
    for kernel in resolved.values():
        kneeds.check_kernel(plan.workload.name, needs, kernel.path, kernel.describe)
    for boot_no, boot in enumerate(todo, 1):
        group = plan.groups[boot.group]
        kernel = resolved[boot.group]
        label = ",".join(v.name for v in group)
        progress(f"boot {boot_no}/{len(todo)}: {label} ({kernel.describe})")
        boot_id = store.start_boot(campaign_id, label[:40])
        try:
            with launcher.boot(plan.spec, kernel.path, accel, kernel.modules_release, group[0].append,
                               plan.timeout_s) as guest:
                store.end_boot(boot_id, "ok", guest.boot_seconds)
                workload_runner.prepare(guest, plan.workload)
                knobs = GuestSettings(guest, group)
                for slot in boot.slots:
                    variant = by_name[slot.variant]
                    knobs.apply(variant)
                    point = plan.points[slot.point]
                    target = guest if variant.nice is None else NicedGuest(guest, variant.nice)
                    result = run_fn(target, plan.workload, point.params, accel)
                    store.add_run(campaign_id, boot_id, variant.name, result.values(),
                                  {"variant": variant.name, "point": point.point.label, "point_index": slot.point,
                                   "rep": slot.rep, "kernel": kernel.describe, "result": result.to_json()})
                    done += 1
                    progress(f"run {done}/{total}: {variant.name}{' ' + point.point.label if point.point.label else ''}"
                             f" rep {slot.rep + 1}: " + ", ".join(
                                 f"{m} {whole_or_4g(result.values().get(m, float('nan')))}" for m in plan.primary))
        except KernelFault as exc:
            store.end_boot(boot_id, "failed", error=str(exc))
            raise

