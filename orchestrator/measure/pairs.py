"""One pair measurement: B against A on fresh boots of their own, interleaved (A B B A).

The culprit against its parent and bad with the culprit reverted against bad (commit
bisection's confirmation, bisect/confirmation.py), good + a set against good and bad against bad - the
set (a set bisection's, setbisect/setbisection.py), and `vmbisect verify`'s commit against its parent
(bisect/suspect.py) are all this measurement, `measure_pair`, on one judge; the caller gives its
stop rule: `Sequential` (one boot pair at a time until the caller's test has answered, or the
cap) or `Fixed` (a number of boots a side: a set bisection's size from a power calculation,
`verify --boots`). A pair measurement starts at the boot stored with it (`pair_since`, a
`measuring` decision), so a resumed campaign goes on with the same boots; one rule says when
that start is stale. What a pair answers is a `PairResult` (orchestrator/results.py): its
`PairVerdict` with the figures behind it, stored in a campaign's result and read back as that
type; `answer_pair` is the pure test judged once on the boots given (Welch's test on boot values).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

from orchestrator.decisions import Basis, Decided, Marker, PairVerdict, Role
from orchestrator.direction import Direction
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.stats import (
    Boot,
    TwoSample,
    compare_boots,
    compare_pooled,
    components,
    evidence,
    pooled_boot_variance,
    reps_to_detect,
)

# A pair answers from this many boots a side; before that (its first look, 2+2) only when its
# own test's p-value is below EARLY_P. A pair looks after every boot pair, so it tests a wrong
# candidate again and again: answering at 2+2 with p < alpha, two chance differences (a good
# candidate against its good parent at p=0.004, its revert at p=0.04) named a wrong culprit
# with confidence 0.999 in 3 of 5,000 simulated campaigns (bench/bisect_accuracy). A change
# that is obvious on 2+2 boots (the demo's -54%, p < 1e-6 on the campaign's noise) still
# answers there.
PAIR_MIN_BOOTS = 3
EARLY_P = 0.001
# A pair measurement started before the latest decision of one of these roles is stale and is
# measured afresh: the verdicts moved since (a step, a re-examination, a candidate), or the
# campaign moved to another host.
STALE_AFTER = (Role.STEP, Role.RECHECK, Role.CANDIDATE, Role.HOST)


@dataclass(frozen=True)
class Fixed:
    """Stop at `boots` boots a side."""

    boots: int


@dataclass(frozen=True)
class Sequential:
    """One boot pair at a time (from `start` a side, or as many as the pair has) until `done()`
    (the caller's test on the boots so far) says the pair answered."""

    done: Callable[[], bool]
    start: int = 2


def fresh(judge: Judge, keys: Sequence[str], since: int) -> list[list[Boot]]:
    """Each key's boots on `judge`'s host from boot `since` on (the stray ones left out)."""
    boots = judge.evidence()
    return [[b for b in boots.get(x, []) if b.seq >= since] for x in keys]


def measure_pair(judge: Judge, a: str, b: str, since: int, rule: Fixed | Sequential) -> list[list[Boot]]:
    """`b` against `a` on boots from `since` on, booted interleaved (A B B A) until `rule` stops;
    the pair's boots, `a`'s then `b`'s."""
    if isinstance(rule, Fixed):
        judge.interleave([a, b], rule.boots, since)
        return fresh(judge, [a, b], since)
    n = max(rule.start, min(len(x) for x in fresh(judge, [a, b], since)))
    while True:
        judge.interleave([a, b] if n % 2 else [b, a], n, since)
        if rule.done():
            return fresh(judge, [a, b], since)
        n += 1


def pair_since(store: CampaignStore, campaign_id: int, judge: Judge, role: Role, key: str) -> int:
    """The first boot of the pair measurement of `role` (confirm or revert) for `key`: stored as
    a `measuring` decision when it starts, so a resumed campaign goes on with the same boots.
    One started before the latest decision of a STALE_AFTER role is stale: measured afresh."""
    decisions = store.decisions(campaign_id)
    last = max((i for i, d in enumerate(decisions) if d.role in STALE_AFTER), default=-1)
    for d in decisions[last + 1:]:
        if d.role is role and d.commit == key and d.basis is Basis.MEASURING:
            return d.since
    since = sum(len(bs) for bs in judge.boots().values())
    store.add_decision(campaign_id, Decided(key, role, Marker.MEASURING, f"from boot {since}: both booted "
                                            "interleaved (A B B A), on boots of their own", 0.0, 0,
                                            Basis.MEASURING, since=since))
    return since


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
    worse = Direction(direction).worse(t.change)
    noise = components([list(parent), list(commit)])
    try:
        need = reps_to_detect(noise.boot_cov, abs(threshold), alpha, 0.8)
    except ValueError:
        need = 10 * max_boots
    what = f"commit against parent {t.describe()}"
    if t.p < alpha and worse:
        return PairAnswer(PairVerdict.CONFIRMED, f"confirmed: {what}", t, need)
    if Direction(direction).worse_than(threshold, Direction(direction).worse_end(t.low, t.high)):
        return PairAnswer(PairVerdict.NOT_SEEN, f"not seen: {what}; a change of {threshold:+.0%} is ruled out", t, need)
    more = max(need, len(parent) + 1)
    return PairAnswer(PairVerdict.CANNOT_TELL, f"cannot tell with these boots: {what}; about {more} boots per side would "
                  f"(boot noise {noise.boot_cov:.1%})", t, more)


@dataclass(frozen=True)
class Pair:
    """A confirmation pair's state: its log Bayes factor for "the change is the references'"
    against "no change" (`log_bf`), its boots a side, the test it rests on (`test`, None below
    two boots a side), and whether that test shows the change (`seen`: one-sided p < `alpha`
    in the references' direction; the engine asks more, see Pairs)."""

    log_bf: float
    boots: int
    test: TwoSample | None = None
    seen: bool = False


def pair(a: Sequence[Boot], b: Sequence[Boot], expected: float, ss: float, df: int, alpha: float,
         min_boots: int = 2) -> Pair:
    """The confirmation (or revert) so far: `b` against `a` on fresh interleaved boots,
    `expected` the log change the references show, the boot noise pooled over the campaign's
    other boots (`ss`, `df`: stats.pooled_boot_variance) and the pair's own
    (stats.compare_pooled); its evidence is stats.evidence of that test. `alpha` is the
    campaign's error, not its significance level: a pair looks after every boot pair, and at
    p < 0.05 two chance differences carried a wrong candidate (see PAIR_MIN_BOOTS)."""
    n = min(len(a), len(b))
    t = compare_pooled(a, b, ss, df) if n >= min_boots else None
    if t is None:
        return Pair(0.0, n)
    seen = t.p < 2 * alpha and (math.log1p(t.change) < 0) == (expected < 0)
    return Pair(evidence(t, math.expm1(expected)), n, t, seen)


def settled(pairs: Sequence[Pair], cap: int, error: float, prior: float = 0.0, to_come: int = 0) -> bool:
    """Whether the confirmation (the culprit against its parent) and the revert (bad with the
    culprit reverted against bad), fresh boots of their own, have answered "is this the
    culprit": their log Bayes factors add to the candidate's prior log odds (`prior`, from
    the posterior's mass). Run side by side (two slots, or one slot taking turns) or one after
    the other (`to_come`: pairs still to be measured after these), they stop at the first boot
    pair after which (from PAIR_MIN_BOOTS boots a side, or earlier when a pair's p-value is
    below EARLY_P)
    - the sum is against the candidate (<= -log((1 - error) / error)), or every pair has `cap`
      boots a side; or
    - every pair's own test shows the change (`seen`) with evidence for it, and the prior and
      the evidence carry the candidate to log((1 - error) / error) (or pairs are still to
      come, which must carry it). Each pair seen keeps a pair's chance excess from carrying a
      candidate the other does not see (at 3% between-boot and 10% within-boot noise that named
      a wrong culprit once in 1,000 simulated campaigns), and the answer a report gives ("the
      culprit against its parent -15%, p=0.02") is the one that stopped it."""
    bound = math.log((1 - error) / error)
    total = sum(p.log_bf for p in pairs)
    if total <= -bound or all(p.boots >= cap for p in pairs):
        return True
    carried = to_come > 0 or prior + total >= bound
    return carried and all(p.seen and p.log_bf > 0 and (p.boots >= PAIR_MIN_BOOTS or (
        p.test is not None and p.test.p < EARLY_P)) for p in pairs)


def boots_gap(good: Sequence[Boot], bad: Sequence[Boot]) -> float:
    """The log distance from good to bad."""
    return statistics.fmean(b.value for b in bad) - statistics.fmean(b.value for b in good)


def pair_state(judge: Judge, a: str, b: str, since: int, good: str, bad: str, error: float, sign: int = 1) -> Pair:
    """The pair `b` against `a` from boot `since` on, its evidence for the good-to-bad change
    (times `sign`: -1 when B should undo it) on the boot noise pooled over the campaign's other
    boots (one noise model), at the campaign's `error`."""
    boots = judge.evidence()
    pa, pb = fresh(judge, [a, b], since)
    ss, df = pooled_boot_variance([bs for x, bs in boots.items() if x not in (a, b)])
    return pair(pa, pb, sign * boots_gap(boots[good], boots[bad]), ss, df, error)
