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
from functools import partial
from typing import Protocol

from orchestrator.compare.collect import run_host
from orchestrator.compare.plan import ComparePlan
from orchestrator.compare.schedule import RunSlot, remaining, schedule
from orchestrator.compare.sysfs import GuestSettings
from orchestrator.compare.variant import Variant
from orchestrator.errors import HostFailed
from orchestrator.measure.judge import Judge
from orchestrator.measure.judges import Judges
from orchestrator.ports import Event, KernelArtifact, Measurer
from orchestrator.render.scale import whole_or_4g
from orchestrator.store import Store


class KernelSource(Protocol):
    def kernel(self, variant: Variant) -> KernelArtifact: ...


def stored_counts(store: Store, campaign_id: int, host: str) -> Counter[tuple[str, int]]:
    """Runs already kept per (variant, point index) that `host` measured."""
    return Counter((r.raw["variant"], int(r.raw["point_index"])) for r in store.runs(campaign_id)
                   if run_host(r.raw) == host)


def run_plan(plan: ComparePlan, store: Store, campaign_id: int, kernels: KernelSource, measurer: Measurer,
             on_event: Callable[[Event], None] = lambda _e: None) -> None:
    """Every run the schedule still lacks on the measurer's host, stored one by one (each
    result names its host). When that host fails (HostFailed) and the measurer may move on,
    the comparison starts over on another host: the failed host's runs stay stored but are
    never compared with another host's (compare/collect.py keeps the last host's)."""
    started = time.monotonic()
    judge = Judge(campaign_id, store, None, measurer, emit=lambda phase, key, samples, message: on_event(
        Event(phase, key, message=message, elapsed_s=time.monotonic() - started)))  # a stalled run's line

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

    def measure(boot_no: int, group: tuple[Variant, ...], kernel: KernelArtifact, pending: list[RunSlot]) -> None:
        """One guest of `group`'s kernel running the `pending` slots, each taken off as its run
        is stored (a guest whose run stalled is booted again for the slots it left)."""
        nonlocal done
        label = ",".join(v.name for v in group)
        emit("boot", label, boot_no, f"boot {boot_no}/{len(todo)}: {label} ({kernel.description})")
        with judge.session(label[:40], kernel, group[0].append) as (boot_id, session):
            knobs = GuestSettings(session.guest, group)
            while pending:
                slot = pending[0]
                variant = by_name[slot.variant]
                knobs.apply(variant)
                point = plan.points[slot.point]
                result = session.run(point.params, variant.nice)
                store.add_run(campaign_id, boot_id, variant.name, result.values(),
                              {"variant": variant.name, "point": point.point.label, "point_index": slot.point,
                               "rep": slot.rep, "kernel": kernel.description, "result": result.to_json()})
                pending.pop(0)
                done += 1
                emit("measure", variant.name, boot_no,
                     f"run {done}/{total}: {variant.name}{' ' + point.point.label if point.point.label else ''}"
                     f" rep {slot.rep + 1}: " + ", ".join(
                         f"{m} {whole_or_4g(result.values().get(m, float('nan')))}" for m in plan.primary))

    for boot_no, boot in enumerate(todo, 1):
        group = plan.groups[boot.group]
        judge.again_when_stalled(",".join(v.name for v in group)[:40],
                                 partial(measure, boot_no, group, resolved[boot.group], list(boot.slots)))
