"""A regression in several steps: how much of the good-to-bad gap a named commit carries, and
whether the named steps add up to the whole (docs/how-bisection-works.md, "Regressions in
several steps"). Pure functions over boot tests (orchestrator.stats).

A step's share is its change against its parent over the endpoints' gap, both on the log scale
(a -16% step then a -22% one make a -34% gap, of which they carry 42% and 58%), with a 95%
interval from both tests' standard errors. The culprit the search names is the commit where the
metric crossed the threshold; when its share's interval excludes 100% the rest of the gap is
elsewhere: before it (good to its parent) or after it (the culprit to bad). The search goes on
in a range that may carry `min_share` of the gap or more, and surely more than none, and stops when
the named steps' shares add up to the whole within the noise (their sum's interval reaches
100%) or what is left is below `min_share`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Sequence

from orchestrator.direction import Direction
from orchestrator.results import RegressionStep, StepsEnd
from orchestrator.stats import TwoSample, ratio

# The share of the gap below which what is left is not searched (campaign `steps.min_share`).
MIN_SHARE = 0.2


@dataclass(frozen=True)
class Share:
    """A part of the good-to-bad gap (1: all of it): the estimate, its standard error, its 95%
    interval and the degrees of freedom it rests on."""

    value: float
    se: float
    low: float
    high: float
    df: float

    @property
    def partial(self) -> bool:
        """Clearly less than all of the gap: the interval excludes 100%."""
        return self.high < 1.0

    def describe(self) -> str:
        return f"about {self.value:.0%} (95% CI {self.low:.0%}..{self.high:.0%})"


def share(change: TwoSample, gap: TwoSample) -> Share:
    """`change` (a commit against its parent, or one end of a range against the other) as a part
    of `gap` (bad against good)."""
    df = min(change.df, gap.df)
    value, se, low, high = ratio(math.log1p(change.change), change.se, math.log1p(gap.change), gap.se, df)
    return Share(value, se, low, high, df)


def reverted(change: TwoSample, gap: TwoSample) -> Share:
    """The share a revert takes away: bad with a commit reverted against bad (`change`), as a
    part of `gap`."""
    taken = share(change, gap)
    return Share(-taken.value, taken.se, -taken.high, -taken.low, taken.df)


def combined(a: Share, b: Share) -> Share:
    """Two estimates of one share (the commit against its parent, and its revert on bad),
    weighed by their precision. They share the gap's uncertainty; its part of the standard
    error is small beside the pairs' (the endpoints have the most boots)."""
    wa, wb = 1 / max(a.se, 1e-12) ** 2, 1 / max(b.se, 1e-12) ** 2
    value, se = (a.value * wa + b.value * wb) / (wa + wb), math.sqrt(1 / (wa + wb))
    df = a.df + b.df
    _, _, low, high = ratio(value, se, 1.0, 0.0, df)
    return Share(value, se, low, high, df)


def together(shares: Sequence[Share]) -> Share:
    """The part of the gap several steps carry together (independent estimates)."""
    df = min((s.df for s in shares), default=1.0)
    value, se, low, high = ratio(sum(s.value for s in shares), math.sqrt(sum(s.se**2 for s in shares)), 1.0, 0.0, df)
    return Share(value, se, low, high, df)


def stop(shares: Sequence[Share], min_share: float) -> StepsEnd | None:
    """Why the search for more steps ends after `shares` were named, or None to go on: they add
    up to the whole within the noise, or what is left is below `min_share`."""
    whole = together(shares)
    if whole.high >= 1.0:
        return StepsEnd.ALL if len(shares) == 1 else StepsEnd.ADD_UP
    if 1.0 - whole.value < min_share:
        return StepsEnd.SMALL
    return None


def settles_by(part: Share, boots: int, cap: int, min_share: float) -> bool:
    """Whether more boots of the pair that measures `part` (on `boots` a side now), up to `cap`,
    could still settle it with the estimate as it is: its interval, narrowed as the square root
    of the boots, excluding 100% (clearly part of the gap) or above 1 - `min_share` (clearly
    near all of it). When neither is in reach, more boots buy nothing (a one-step regression at
    a noise where its share stays wide)."""
    half = (part.high - part.low) / 2 * math.sqrt(boots / max(boots, cap))
    return part.value + half < 1.0 or part.value - half >= 1.0 - min_share


def worth_searching(part: Share, min_share: float) -> bool:
    """A range left carries a part of the gap worth a search: surely more than none, and
    possibly `min_share` of it or more."""
    return part.low > 0 and part.high >= min_share


def step_of(commit: str, parent: str, part: Share, change: TwoSample, crossed: bool, alone: bool) -> RegressionStep:
    return RegressionStep(commit, parent, part.value, part.low, part.high, change.change, crossed, alone)


def mark_crossing(steps: Sequence[RegressionStep], from_good: Sequence[float], threshold: float,
                  direction: str) -> tuple[RegressionStep, ...]:
    """`steps` (oldest first) with the one where the metric crossed a relative `threshold` marked
    `crossed`: the first whose commit against good (`from_good`, relative, one a step) reaches
    it; the last when none does (the noise)."""
    reached = [Direction(direction).reaches(c, threshold) for c in from_good]
    at = reached.index(True) if True in reached else len(steps) - 1
    return tuple(dataclasses.replace(step, crossed=i == at) for i, step in enumerate(steps))


def partial_line(culprit: str, part: Share, rest: float) -> str:
    """The answer's line when the culprit carries clearly less than all of the regression;
    `rest`: bad with it reverted against good (relative)."""
    return (f"{culprit[:12]} carries {part.describe()} of the regression; bad with it reverted is still "
            f"{rest:+.0%} from good")


def in_history(steps: Sequence[RegressionStep], is_ancestor: Callable[[str, str], bool]) -> tuple[RegressionStep, ...]:
    """`steps` oldest first: by how many of the others are their ancestors."""
    return tuple(sorted(steps, key=lambda s: sum(is_ancestor(o.commit, s.commit) for o in steps if o is not s)))
