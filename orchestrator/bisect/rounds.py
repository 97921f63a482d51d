"""Where the next boot goes (pure): which commits a round measures, when a commit's visit ends,
whether a step's next boot goes to the step or to a reference, when a confirmation pair is
settled, and what to build ahead for the next round.

The engine keeps nothing of this in memory: every answer is computed again from the boots and
decisions in the store (orchestrator.bisect.posterior for the posterior)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

from orchestrator.bisect.posterior import NOISELESS, Answer, Dag, Kind, answer, pick, posterior
from orchestrator.stats import Boot, StepOdds, pair_evidence

# A visit (one slot measuring one commit) ends when its verdict is this sure; further evidence
# comes from revisits the posterior asks for.
VISIT_ERROR = 0.01
# A step far from both references (a second change) is not one of the two.
APART = 0.001
# A commit still unclear after this many times max_boots_per_commit boots over all its visits is
# left as ambiguous (untestable, like a skip; its evidence stays).
TOTAL_CAP = 4


class Visit(str, Enum):
    MORE = "more"  # boot it again
    DECIDED = "decided"  # sure enough for now
    UNCLEAR = "unclear"  # the visit's cap: the posterior may send it back
    APART = "apart"  # at its cap and apart from both references: a second change, skipped


def visit(odds: StepOdds | None, boots: int, min_boots: int, cap: int, error: float = VISIT_ERROR) -> Visit:
    """Whether a commit's visit goes on, from the sequential test on all its boots so far
    (`boots` of them, `cap` the most this visit may reach)."""
    if odds is None or boots < min_boots:
        return Visit.MORE if boots < cap else Visit.UNCLEAR
    if odds.fit_p < APART:
        return Visit.MORE if boots < cap else Visit.APART
    if odds.p_wrong <= error:
        return Visit.DECIDED
    return Visit.MORE if boots < cap else Visit.UNCLEAR


class Target(str, Enum):
    STEP = "step"
    GOOD = "good"
    BAD = "bad"


def next_boot(good: Sequence[Boot], bad: Sequence[Boot], step: Sequence[Boot]) -> Target:
    """The boot that shrinks the uncertainty of the step's log odds most: the step's mean, the
    good reference's or the bad one's (delta method: each mean's share of the variance of
    llr = (d_good^2 / se_good^2 - d_bad^2 / se_bad^2) / 2, and how much one more boot of it
    takes away). A step that looks like good is decided by its distance to bad, so the bad
    reference gets the boot when it has fewer boots than the step; the references' boots serve
    every later step too, so a tie goes to the reference."""
    if len(good) < 2 or len(bad) < 2 or not step:
        return Target.STEP if len(good) >= 2 and len(bad) >= 2 else (Target.GOOD if len(good) <= len(bad)
                                                                     else Target.BAD)
    mg, mb, ms = (statistics.fmean(b.value for b in bs) for bs in (good, bad, step))
    ng, nb, ns = len(good), len(bad), len(step)
    se_g, se_b = 1 / ns + 1 / ng, 1 / nb + 1 / ns  # in units of the boot variance
    d_g, d_b = ms - mg, ms - mb
    grad = {Target.STEP: d_g / se_g - d_b / se_b, Target.GOOD: -d_g / se_g, Target.BAD: d_b / se_b}
    n = {Target.STEP: ns, Target.GOOD: ng, Target.BAD: nb}
    gain = {t: grad[t] ** 2 * (1 / n[t] - 1 / (n[t] + 1)) for t in grad}
    return max((Target.GOOD, Target.BAD, Target.STEP), key=lambda t: gain[t])


@dataclass(frozen=True)
class Pair:
    """A confirmation pair's state: `settled` when its log Bayes factor for "the change is the
    references'" against "no change" passed +-log((1 - error) / error) or the cap was reached."""

    settled: bool
    log_bf: float
    boots: int


def pair(a: Sequence[Boot], b: Sequence[Boot], expected: float, s2: float, df: int, cap: int,
         error: float, min_boots: int = 2) -> Pair:
    """The sequential confirmation (or revert): `b` against `a` on fresh interleaved boots,
    `expected` the log change the references show, the noise pooled over the campaign (`s2`,
    `df`). It stops at the first boot pair that settles it, or at `cap` boots a side."""
    n = min(len(a), len(b))
    if n < min_boots:
        return Pair(False, 0.0, n)
    bf = pair_evidence(a, b, expected, s2, df)
    bound = math.log((1 - error) / error)
    return Pair(abs(bf) >= bound or n >= cap, bf, n)


@dataclass(frozen=True)
class Round:
    """What the posterior says now: the answer so far, and the commits to measure next."""

    answer: Answer
    picks: tuple[str, ...]


def plan(dag: Dag, evidence: Mapping[str, float], slots: int, error: float, untestable: Iterable[str] = (),
         point: Mapping[str, float] | None = None, impossible: Iterable[str] = (),
         busy: Iterable[str] = ()) -> Round:
    """One look at the search: the stop rule, and when it does not stop, the next round's
    commits (`slots` of them at most, none of `busy`)."""
    untestable = set(untestable)
    post = posterior(dag, evidence, point, impossible)
    found = answer(post, error, untestable)
    if found.kind is not Kind.SEARCHING:
        return Round(found, ())
    return Round(found, tuple(pick(post, slots, untestable, busy)))


def ahead(dag: Dag, evidence: Mapping[str, float], picks: Sequence[str], slots: int, error: float,
          untestable: Iterable[str] = (), impossible: Iterable[str] = ()) -> list[tuple[float, tuple[str, ...]]]:
    """What to build while `picks` are measured: for each way the round can end (the culprit in
    one of the parts the picks cut: the older picks good, the newer bad), its probability now
    and the next round's picks then (oldest first: slot k builds the k-th), likelier first. A
    pick that ends ambiguous only delays these; they are still the likeliest next picks."""
    untestable = set(untestable)
    post = posterior(dag, evidence, None, impossible)
    idx = sorted(dag.index[p] for p in picks)
    out: list[tuple[float, tuple[str, ...]]] = []
    for k in range(len(idx) + 1):
        marks = {dag.commits[i]: (-NOISELESS if j < k else NOISELESS) for j, i in enumerate(idx)}
        lo = float(post.bad[idx[k - 1]]) if k else 0.0
        hi = float(post.bad[idx[k]]) if k < len(idx) else 1.0
        nxt = plan(dag, {**evidence, **marks}, slots, error, untestable, impossible=impossible)
        out.append((max(0.0, hi - lo), nxt.picks))
    return sorted(out, key=lambda x: -x[0])
