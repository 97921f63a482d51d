"""Runs a comparison's schedule on guests of the one measurement layer and stores every run as
it completes, so a crash or a killed controller loses at most the run in flight (`vmbisect
resume ID` goes on).

The parts it drives are passed in: a kernel source (each variant's KernelArtifact) and a
measurer (orchestrator/ports.py: boots a kernel, its session runs the workload). Production
wires them in orchestrator/wiring.py; tests pass tests/fakes.py.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Protocol

from orchestrator.compare import settings
from orchestrator.compare.collect import run_host
from orchestrator.compare.plan import ComparePlan
from orchestrator.compare.schedule import remaining, schedule
from orchestrator.compare.variant import Variant
from orchestrator.errors import HostFailed, UserError, WorkloadFailed
from orchestrator.measure.judge import Judge
from orchestrator.measure.lab import Judges
from orchestrator.ports import Event, KernelArtifact, Measurer
from orchestrator.render.scale import whole_or_4g
from orchestrator.store import Store
from orchestrator.workloads import runner as workload_runner


class KernelSource(Protocol):
    def kernel(self, variant: Variant) -> KernelArtifact: ...


def stored_counts(store: Store, campaign_id: int, host: str) -> Counter[tuple[str, int]]:
    """Runs already kept per (variant, point index) that `host` measured."""
    return Counter((r.raw["variant"], int(r.raw["point_index"])) for r in store.runs(campaign_id)
                   if run_host(r.raw) == host)


class GuestSettings:
    """Applies variants' sysfs settings in one guest, restoring what other variants changed."""

    def __init__(self, guest: Any, group: tuple[Variant, ...]) -> None:
        self.guest = guest
        disks = workload_runner.data_disks(guest)
        self.wants = {v.name: settings.wanted(v, disks) for v in group}
        paths = dict.fromkeys(p for w in self.wants.values() for p in w)
        # a scheduler's tunable is read once its scheduler is in (apply), not at boot
        self.original: dict[str, str | None] = {
            p: None if settings.is_tunable(p) else settings.current(self._read(p, group[0].name)) for p in paths}
        self.applied: str | None = None

    def _read(self, path: str, variant: str) -> str:
        try:
            return self.guest.agent.get(path).decode(errors="replace")
        except WorkloadFailed as exc:  # the agent's error response, e.g. no such file
            raise UserError(f"variant {variant}: cannot read {path} in this guest ({exc})") from None

    def _exists(self, path: str) -> bool:
        try:
            self.guest.agent.get(path)
        except WorkloadFailed:
            return False
        return True

    def apply(self, variant: Variant) -> None:
        if self.applied == variant.name:
            return
        for path, value in settings.plan_writes(self.original, self.wants[variant.name]).items():
            if settings.is_tunable(path) and self.original[path] is None:
                self.original[path] = settings.current(self._read(path, variant.name))
            elif path not in self.wants[variant.name] and settings.is_tunable(path) and not self._exists(path):
                continue  # its scheduler was switched out, and the value went with it
            result = self.guest.exec(settings.write_argv(path, value), timeout_s=30.0)
            content = self._read(path, variant.name)
            if not result.succeeded or settings.current(content) != value:
                offered = settings.choices(content)
                hint = f"; valid choices: {', '.join(offered)}" if offered else f"; it reads {content.strip()!r}"
                raise UserError(f"variant {variant.name}: cannot set {path} to {value!r}{hint}")
        self.applied = variant.name


def run_plan(plan: ComparePlan, store: Store, campaign_id: int, kernels: KernelSource, measurer: Measurer,
             on_event: Callable[[Event], None] = lambda _e: None) -> None:
    """Every run the schedule still lacks on the measurer's host, stored one by one (each
    result names its host). When that host fails (HostFailed) and the measurer may move on,
    the comparison starts over on another host: the failed host's runs stay stored but are
    never compared with another host's (compare/collect.py keeps the last host's)."""
    started = time.monotonic()
    judge = Judge(campaign_id, store, None, measurer)

    def moved(exc: HostFailed) -> None:
        on_event(Event("requeue", exc.host, message=f"{exc}; the comparison starts over on another host "
                       f"(the runs {exc.host} measured are kept, not compared)", elapsed_s=time.monotonic() - started))

    Judges.of(judge, moved).moving(lambda: _run_schedule(plan, store, campaign_id, kernels, judge, on_event, started))


def _run_schedule(plan: ComparePlan, store: Store, campaign_id: int, kernels: KernelSource, judge: Judge,
                  on_event: Callable[[Event], None], started: float) -> None:
    measurer = judge.measurer
    names = [[v.name for v in g] for g in plan.groups]
    by_name = {v.name: v for v in plan.variants}
    have = stored_counts(store, campaign_id, measurer.host) if measurer.host is not None else Counter()
    todo = remaining(schedule(names, len(plan.points), plan.reps, plan.boots), dict(have))
    total = sum(len(b.slots) for b in todo)
    done = 0

    def emit(phase: str, what: str, step: int, message: str) -> None:
        on_event(Event(phase, what, step, len(todo) - step, done, message, time.monotonic() - started))

    # every kernel before the first run: a build failure stops the comparison before it measures
    resolved = {g: kernels.kernel(plan.groups[g][0]) for g in dict.fromkeys(b.group for b in todo)}
    for kernel in resolved.values():
        measurer.check(kernel)
    for boot_no, boot in enumerate(todo, 1):
        group = plan.groups[boot.group]
        kernel = resolved[boot.group]
        label = ",".join(v.name for v in group)
        emit("boot", label, boot_no, f"boot {boot_no}/{len(todo)}: {label} ({kernel.description})")
        with judge.session(label[:40], kernel, group[0].append) as (boot_id, session):
            knobs = GuestSettings(session.guest, group)
            for slot in boot.slots:
                variant = by_name[slot.variant]
                knobs.apply(variant)
                point = plan.points[slot.point]
                result = session.run(point.params, variant.nice)
                store.add_run(campaign_id, boot_id, variant.name, result.values(),
                              {"variant": variant.name, "point": point.point.label, "point_index": slot.point,
                               "rep": slot.rep, "kernel": kernel.description, "result": result.to_json()})
                done += 1
                emit("measure", variant.name, boot_no,
                     f"run {done}/{total}: {variant.name}{' ' + point.point.label if point.point.label else ''}"
                     f" rep {slot.rep + 1}: " + ", ".join(
                         f"{m} {whole_or_4g(result.values().get(m, float('nan')))}" for m in plan.primary))
