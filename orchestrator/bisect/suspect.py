"""`vmbisect verify`: is a suspect commit the cause of a regression? The commit against its
parent (and, when asked, a tip with the commit reverted against the tip) on boots measured
interleaved by the judge, each pair the one pair measurement (orchestrator/measure/pairs.py)
with `boots` a side as its stop rule, so a verification and a bisection's confirmation are the
same measurement (the A B B A order, not a drift model, keeps a
drifting host out of it). A bisection's confirmation pools the boot noise over the campaign's
other boots (stats.compare_pooled); a verification has only its pair's boots: Welch's test on
their values (measure/pairs.py `answer_pair`). `judge_revert` is pure.

Answers, in one line:
- confirmed: the commit is significantly worse than its parent (two-sided test on boot
  values, alpha), in the metric's bad direction;
- not seen: the 95% interval of the change excludes a regression as large as the threshold;
- cannot tell with these boots: neither; the line says how many boots per side would tell.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from orchestrator.decisions import PairVerdict
from orchestrator.direction import Direction
from orchestrator.measure.endpoints import level
from orchestrator.measure.judges import Judges
from orchestrator.measure.pairs import Fixed, PairAnswer, answer_pair, measure_pair
from orchestrator.results import PairResult, VerifyResult, text_of
from orchestrator.states import end
from orchestrator.stats import Boot, compare_boots, relative_change

if TYPE_CHECKING:
    from orchestrator.bisect.search import Vcs
    from orchestrator.campaign.file import Campaign
    from orchestrator.measure.judge import Judge


def judge_revert(tip: Sequence[Boot], reverted: Sequence[Boot], parent: Sequence[Boot], commit: Sequence[Boot],
                 direction: str, alpha: float) -> PairResult:
    """The tip with the commit reverted against the tip: does it restore what the commit cost?"""
    t = compare_boots(tip, reverted)
    if t is None:
        return PairResult(PairVerdict.CANNOT_TELL, f"revert: {PairVerdict.CANNOT_TELL}: too few boots")
    cost = compare_boots(parent, commit)
    better = Direction(direction).better(t.change)
    share = (math.log1p(t.change) / -math.log1p(cost.change)) if cost and cost.change else 0.0
    verdict = PairVerdict.RESTORES if t.p < alpha and better and share >= 0.5 else PairVerdict.NOT_RESTORED
    return PairResult(verdict, f"{verdict}: tip with the commit reverted against tip {t.describe()}", change=t.change,
                      low=t.low, high=t.high, p=t.p, boots=min(len(tip), len(reverted)))


@dataclass(frozen=True)
class Verification:
    commit: str
    parent: str
    answer: PairAnswer
    revert: PairResult | None  # the tip with the commit reverted against the tip, when asked
    boot_means: dict[str, list[float]]


def verify_commit(judge_: Judge, vcs: Vcs, c: Campaign, direction: str, rev: str, boots: int,
                  revert_on: str = "") -> Verification:
    """`rev` against its parent, and (with `revert_on`) that tip with `rev` reverted against the
    tip, each pair booted interleaved by the judge; stored as it goes, the answer at the end."""
    vcs.prepare()
    commit = vcs.resolve(rev, "commit")
    parent = vcs.parent(commit)

    def measured_pairs(*pairs: tuple[str, str]) -> dict[str, list[Boot]]:
        """Each pair (B against A) booted interleaved to `boots` a side on the current host;
        every pair again on the next host when that one fails."""
        def on_this_host() -> dict[str, list[Boot]]:
            for a, b in pairs:
                measure_pair(judge_, a, b, 0, Fixed(boots))
            return judge_.evidence()

        return Judges.of(judge_).moving(on_this_host)

    measured = measured_pairs((parent, commit))
    revert_pair: PairResult | None = None
    if revert_on:
        tip = vcs.resolve(revert_on, "revert_on")
        revert = vcs.revert(commit, tip)
        if not revert.commit:
            revert_pair = PairResult(PairVerdict.NO_APPLY, f"{PairVerdict.NO_APPLY}: {revert.reason}")
        else:
            # the pair already measured boots nothing more, unless its host failed since: then
            # all four are measured on the next host, and compared there
            measured = measured_pairs((parent, commit), (tip, revert.commit))
            revert_pair = judge_revert(measured[tip], measured[revert.commit], measured[parent], measured[commit],
                                       direction, c.alpha)
    threshold = c.metric.threshold.value if c.metric.threshold.scale == "relative" else relative_change(
        level(measured[parent]), c.metric.threshold.value)
    answer = answer_pair(measured[parent], measured[commit], direction, threshold, c.alpha, c.max_boots_per_commit)
    means = {k: [statistics.fmean(b.runs) for b in v] for k, v in measured.items()}
    end(judge_.store, judge_.campaign_id, VerifyResult(
        commit, parent, answer.verdict, tuple(x for x in (answer.line, text_of(revert_pair)) if x),
        answer.boots_needed))
    return Verification(commit, parent, answer, revert_pair, means)
