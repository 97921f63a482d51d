"""The order of a comparison's runs, so that host drift hits every variant alike.

Variants that share a guest (same kernel and command line) alternate run by run inside it;
guests of different kernels alternate boot by boot. Both alternate in ABBA order (A B, then
B A), which cancels a linear drift instead of favouring whoever runs first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunSlot:
    variant: str
    point: int  # index into the sweep points
    rep: int  # this variant's repetition number at this point, 0-based


@dataclass(frozen=True)
class BootPlan:
    group: int  # index into the boot groups
    slots: tuple[RunSlot, ...]


def _abba(items: list[str] | list[int], round_: int) -> list[Any]:
    return list(items) if round_ % 2 == 0 else list(reversed(items))


def default_boots(groups: int, reps: int) -> int:
    """One run per boot when kernels differ (interleaved boots); two boots of the shared guest
    otherwise, so a boot-to-boot effect shows in the spread."""
    return reps if groups > 1 else min(2, reps)


def schedule(groups: list[list[str]], points: int, reps: int, boots: int) -> list[BootPlan]:
    """Every boot in order with its runs. Each variant gets `reps` runs at every point, spread
    over `boots` boots of its group as evenly as possible."""
    if reps < 1 or boots < 1 or points < 1:
        raise ValueError("reps, boots and points must be at least 1")
    boots = min(boots, reps)
    per_boot = [reps // boots + (1 if b < reps % boots else 0) for b in range(boots)]
    plans: list[BootPlan] = []
    done = 0
    for b, count in enumerate(per_boot):
        for g in _abba(list(range(len(groups))), b):
            slots = []
            for r in range(done, done + count):
                for p in range(points):
                    slots += [RunSlot(v, p, r) for v in _abba(groups[g], r)]
            plans.append(BootPlan(g, tuple(slots)))
        done += count
    return plans


def remaining(plans: list[BootPlan], done: dict[tuple[str, int], int]) -> list[BootPlan]:
    """The plan without the runs already stored (`done[(variant, point)]` = runs kept), for a
    resumed comparison; boots left with nothing to run are dropped."""
    out = []
    for plan in plans:
        slots = tuple(s for s in plan.slots if s.rep >= done.get((s.variant, s.point), 0))
        if slots:
            out.append(BootPlan(plan.group, slots))
    return out
