"""Verdicts for one bisection step from its samples and the good/bad reference samples.

A step is GOOD when its samples sit significantly apart from the bad reference on the good
side (one-sided Mann-Whitney U) and its median lies in the good 40% of the good-bad gap
(not near the middle, where three runs of a bad commit can land by chance), in the good
quarter if it also differs from the good reference (small reference samples make that
common); BAD symmetrically. Anything else asks for MORE runs; once no more are allowed
it is a SKIP with the reason. Verdicts never depend on the metric's direction: the
references carry it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from orchestrator.bisect.stats import p_less

MIN_STEP_SAMPLES = 3
# How far from the middle of the gap a median must lie for a verdict: a step that differs from
# one reference in the outer 40%, one that differs from both in the outer quarters.
SIDE = 0.4
CLEAR_SIDE = 0.25


class Verdict(str, Enum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"
    MORE = "more"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    confidence: float
    position: float


def gap_position(good: Sequence[float], bad: Sequence[float], step: Sequence[float]) -> float:
    """Where the step's median lies on the good (0.0) to bad (1.0) line."""
    g, b = statistics.median(good), statistics.median(bad)
    return (statistics.median(step) - g) / (b - g) if b != g else 0.0


def decide(
    good: Sequence[float],
    bad: Sequence[float],
    step: Sequence[float],
    can_run_more: bool,
    alpha: float = 0.05,
) -> Decision:
    if len(step) < MIN_STEP_SAMPLES:
        return Decision(Verdict.MORE, f"{len(step)} of at least {MIN_STEP_SAMPLES} samples", 0.0, 0.0)
    bad_is_higher = statistics.median(bad) > statistics.median(good)
    pos = gap_position(good, bad, step)
    # "step lies on the good side of bad" and "step lies on the bad side of good"
    p_not_bad = p_less(step, bad) if bad_is_higher else p_less(bad, step)
    p_not_good = p_less(good, step) if bad_is_higher else p_less(step, good)
    apart_from_bad, apart_from_good = p_not_bad < alpha, p_not_good < alpha
    where = f"median at {pos:.0%} of the good-to-bad gap"
    if apart_from_bad and pos < (CLEAR_SIDE if apart_from_good else SIDE):
        return Decision(Verdict.GOOD, f"{where}; differs from bad (p={p_not_bad:.3g})", 1 - p_not_bad, pos)
    if apart_from_good and pos > (1 - CLEAR_SIDE if apart_from_bad else 1 - SIDE):
        return Decision(Verdict.BAD, f"{where}; differs from good (p={p_not_good:.3g})", 1 - p_not_good, pos)
    if apart_from_bad and apart_from_good:
        reason = f"{where}; differs from both good (p={p_not_good:.3g}) and bad (p={p_not_bad:.3g})"
    else:
        reason = f"{where}; not distinguishable (p vs good {p_not_good:.3g}, vs bad {p_not_bad:.3g})"
    if can_run_more:
        return Decision(Verdict.MORE, reason, 0.0, pos)
    return Decision(Verdict.SKIP, f"ambiguous after {len(step)} samples: {reason}", 0.0, pos)
