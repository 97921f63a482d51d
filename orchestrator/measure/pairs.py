"""One pair measurement: B against A on fresh boots of their own, interleaved (A B B A).

The culprit against its parent and bad with the culprit reverted against bad (commit
bisection's confirmation), good + a set against good and bad against bad - the set (a set
bisection's), and `vmbisect verify`'s commit against its parent are all this measurement. What
it answers is a `PairVerdict` (orchestrator/decisions.py). `answer_pair` is the pure test judged
once on the boots given (Welch's test on boot values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from orchestrator.decisions import PairVerdict
from orchestrator.stats import Boot, TwoSample, compare_boots, components, reps_to_detect


@dataclass(frozen=True)
class PairAnswer:
    verdict: PairVerdict  # CONFIRMED, NOT_SEEN or CANNOT_TELL
    line: str
    test: TwoSample | None
    boots_needed: int = 0


def answer_pair(parent: Sequence[Boot], commit: Sequence[Boot], direction: str, threshold: float, alpha: float,
                max_boots: int) -> PairAnswer:
    """`commit` against `parent` (B against A), judged once on the boots given: CONFIRMED when B
    is significantly worse (two-sided test on boot values, alpha) in the metric's bad direction;
    NOT_SEEN when the 95% interval of the change excludes a regression as large as `threshold`
    (the relative regression asked about, e.g. -0.10 for higher-is-better); CANNOT_TELL
    otherwise, with the boots per side that would tell."""
    t = compare_boots(parent, commit)
    if t is None:
        return PairAnswer(PairVerdict.CANNOT_TELL, "cannot tell: too few boots to compare (at least 2 per side)", None, 2)
    worse = t.change < 0 if direction == "higher" else t.change > 0
    noise = components([list(parent), list(commit)])
    try:
        need = reps_to_detect(noise.boot_cov, abs(threshold), alpha, 0.8)
    except ValueError:
        need = 10 * max_boots
    what = f"commit against parent {t.describe()}"
    if t.p < alpha and worse:
        return PairAnswer(PairVerdict.CONFIRMED, f"confirmed: {what}", t, need)
    reach = t.low if direction == "higher" else t.high
    if (direction == "higher" and reach > threshold) or (direction == "lower" and reach < threshold):
        return PairAnswer(PairVerdict.NOT_SEEN, f"not seen: {what}; a change of {threshold:+.0%} is ruled out", t, need)
    more = max(need, len(parent) + 1)
    return PairAnswer(PairVerdict.CANNOT_TELL, f"cannot tell with these boots: {what}; about {more} boots per side would "
                  f"(boot noise {noise.boot_cov:.1%})", t, more)
