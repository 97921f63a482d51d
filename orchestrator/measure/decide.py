"""Verdicts for one bisection step from the sequential test on its boots (orchestrator.stats).

The good and bad references are two hypotheses for the step's boot values; `step_odds` gives
the posterior probability that the step behaves like bad. A step is decided as soon as the
chance that its verdict is wrong is at most `error` (0.01 by default; the confirmation of the
culprit against its parent catches the rare wrong step, and sends the steps back for more
boots) and it has its minimum boots; otherwise it asks for MORE boots. At the cap
of boots a verdict whose chance of being wrong is still up to DOUBTFUL is given and marked
doubtful (it lowers the answer's confidence and is re-examined first); anything less clear is
a SKIP with the reason, as is a step that sits significantly apart from both references (p <
APART against the nearer: a second change in the range, not one of the two). Verdicts never
depend on the metric's direction: the references carry it.

With a relative threshold (commit bisection's first search), a step apart from both references
is judged against the threshold instead: bad when its change from good surely lies past it,
good when surely short of it (`Basis.THRESHOLD`). A regression in steps then has one answer,
the first commit past the threshold, as `git bisect` with the threshold as its test would
name; without it, every commit between two steps of about equal size sits at the middle of
good and bad, where no verdict can be sure, and the search spent its caps on them. A step not
(yet) shown apart whose side is still unsure is judged against the threshold too as soon as
that question is answered: at 12-16% boot noise a commit between two steps can sit at 43% of
the gap, surely short of the threshold, long before its boots show it apart from both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.decisions import Basis, Verdict
from orchestrator.stats import StepOdds

ERROR = 0.01
DOUBTFUL = 0.2
APART = 0.001


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    confidence: float  # 1 - the chance that the verdict is wrong; 0 for MORE and SKIP
    position: float
    kind: Basis = Basis.MEASURED  # DOUBTFUL or AMBIGUOUS at the cap of boots


def describe(odds: StepOdds, boots: int) -> str:
    return (f"{boots} boots at {odds.position:.0%} of the good-to-bad gap; "
            f"P(bad)={odds.p_bad:.3g} (boot noise {odds.boot_sd:.1%}, {odds.df} df)")


def apart(odds: StepOdds) -> bool:
    return odds.fit_p < APART


def p_bad(odds: StepOdds, threshold: float | None = None, error: float = ERROR) -> float:
    """The chance that the step counts as bad: that it behaves like the bad reference; with a
    relative `threshold`, that its change from good lies past the threshold for a step apart
    from both references, or for one whose side the references cannot yet tell while the
    threshold question is answered (within `error`)."""
    return odds.p_past(threshold) if threshold is not None and by_threshold(odds, threshold, error) else odds.p_bad


def by_threshold(odds: StepOdds, threshold: float | None, error: float = ERROR) -> bool:
    """Whether the step is judged against the threshold rather than the references."""
    if threshold is None:
        return False
    if apart(odds):
        return True
    p = odds.p_past(threshold)
    return odds.p_wrong > error and min(p, 1 - p) <= error


def verdict_of(odds: StepOdds, threshold: float | None = None) -> Verdict:
    """The side the step's boots put it on now (p_bad), however sure."""
    return Verdict.BAD if p_bad(odds, threshold) > 0.5 else Verdict.GOOD


def decide(odds: StepOdds | None, boots: int, min_boots: int, max_boots: int, error: float = ERROR,
           threshold: float | None = None) -> Decision:
    if odds is None or boots < min_boots:
        return Decision(Verdict.MORE, f"{boots} of at least {min_boots} boots", 0.0, 0.0)
    where = describe(odds, boots)
    if apart(odds):
        if threshold is None:
            where = f"{where}; apart from both references (p={odds.fit_p:.2g} against the nearer)"
        else:
            p = p_bad(odds, threshold)
            where = f"{where}; apart from both references, {_against(odds, threshold, p)}"
            if min(p, 1 - p) <= error:
                return Decision(verdict_of(odds, threshold), where, 1 - min(p, 1 - p), odds.position,
                                Basis.THRESHOLD)
        if boots < max_boots:
            return Decision(Verdict.MORE, where, 0.0, odds.position)
        return Decision(Verdict.SKIP, f"ambiguous after the cap of {max_boots} boots: {where}", 0.0, odds.position,
                        Basis.AMBIGUOUS)
    if by_threshold(odds, threshold, error):
        p = p_bad(odds, threshold, error)
        return Decision(Verdict.BAD if p > 0.5 else Verdict.GOOD, f"{where}; {_against(odds, threshold, p)}",
                        1 - min(p, 1 - p), odds.position, Basis.THRESHOLD)
    verdict = verdict_of(odds)
    if odds.p_wrong <= error:
        return Decision(verdict, where, 1 - odds.p_wrong, odds.position)
    if boots < max_boots:
        return Decision(Verdict.MORE, where, 0.0, odds.position)
    if odds.p_wrong <= DOUBTFUL:
        return Decision(verdict, f"doubtful after the cap of {max_boots} boots: {where}", 1 - odds.p_wrong,
                        odds.position, Basis.DOUBTFUL)
    return Decision(Verdict.SKIP, f"ambiguous after the cap of {max_boots} boots: {where}", 0.0, odds.position,
                    Basis.AMBIGUOUS)


def _against(odds: StepOdds, threshold: float | None, p: float) -> str:
    return (f"{math.expm1(odds.change):+.1%} from good: {'past' if p > 0.5 else 'short of'} the threshold "
            f"{threshold or 0:+.1%}, P(past)={p:.3g}")
