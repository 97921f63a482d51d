"""One pair measurement: B against A on fresh boots of their own, interleaved (A B B A).

The culprit against its parent and bad with the culprit reverted against bad (commit
bisection's confirmation, bisect/pairs.py), good + a set against good and bad against bad - the
set (a set bisection's, setbisect/runner.py), and `vmbisect verify`'s commit against its parent
(bisect/verify.py) are all this measurement, `measure_pair`, on one judge; the caller gives its
stop rule: `Sequential` (one boot pair at a time until the caller's test has answered, or the
cap) or `Fixed` (a number of boots a side: a set bisection's size from a power calculation,
`verify --boots`). A pair measurement starts at the boot stored with it (`pair_since`, a
`measuring` decision), so a resumed campaign goes on with the same boots; one rule says when
that start is stale. What a pair answers is a `PairVerdict` (orchestrator/decisions.py);
`answer_pair` is the pure test judged once on the boots given (Welch's test on boot values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from orchestrator.decisions import Decided, Kind, Marker, PairVerdict, Role
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.stats import Boot, TwoSample, compare_boots, components, reps_to_detect

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
    """One boot pair at a time (from 2 a side, or as many as the pair has) until `done()` (the
    caller's test on the boots so far) says the pair answered."""

    done: Callable[[], bool]


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
    n = max(2, min(len(x) for x in fresh(judge, [a, b], since)))
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
        if d.role is role and d.commit == key and d.kind is Kind.MEASURING:
            return d.since
    since = sum(len(bs) for bs in judge.boots().values())
    store.add_decision(campaign_id, Decided(key, role, Marker.MEASURING, f"from boot {since}: both booted "
                                            "interleaved (A B B A), on boots of their own", 0.0, 0,
                                            Kind.MEASURING, since=since))
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
