"""Where the next boot goes (pure): which commits a round measures, when a commit's visit ends,
whether a step's next boot goes to the step or to a reference, and what to build ahead for the next round.

The engine keeps nothing of this in memory: every answer is computed again from the boots and
decisions in the store (orchestrator.bisect.posterior for the posterior)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

import numpy as np

from orchestrator.bisect.posterior import NOISELESS, Dag, PosteriorAnswer, Standing, answer, pick, posterior
from orchestrator.measure.decide import apart, p_bad
from orchestrator.stats import Boot, StepOdds, drift_estimable, drift_weight

# A first visit (one slot measuring one commit) ends when its verdict is this sure: the posterior
# needs a commit's side, not its certainty, except next to the culprit, where it sends the search
# back (a revisit). 0.01 spent 5.4 boots a visit at 8% between-boot noise and 124 boots a
# campaign; 0.1 spends about 3 (bench/bisect_rounds, docs/campaign.md "Time to culprit").
VISIT_ERROR = 0.1
# A revisit (the posterior sent the search back to a commit it had measured) ends when this sure.
REVISIT_ERROR = 0.01
# The search names a candidate for confirmation when it holds 1 - NOMINATE of the mass; the
# confirmation's and the revert's fresh boots (`settled`) then carry it to the campaign's
# 1 - error, or speak against it and the search goes on. The last revisits of the culprit's
# neighbours to 0.99 cost more boots than the confirmation does. 0.2 while the pairs cost 28
# boots a campaign; at their 17 (pooled noise, summed evidence) 0.4 saves 2 boots of a median
# 76 at 8% between-boot noise (1,000 campaigns); 0.3 and 0.5 about as much, 0.6 costs 4 more
# (300 campaigns each, docs/campaign.md).
NOMINATE = 0.4
# A commit still unclear after this many times max_boots_per_commit boots over all its visits is
# left as ambiguous (untestable, like a skip; its evidence stays).
TOTAL_CAP = 4


class Visit(str, Enum):
    MORE = "more"  # boot it again
    DECIDED = "decided"  # sure enough for now
    UNCLEAR = "unclear"  # the visit's cap: the posterior may send it back
    APART = "apart"  # at its cap and apart from both references: a second change, skipped


def visit(odds: StepOdds | None, boots: int, min_boots: int, cap: int, error: float = VISIT_ERROR,
          threshold: float | None = None) -> Visit:
    """Whether a commit's visit goes on, from the sequential test on all its boots so far
    (`boots` of them, `cap` the most this visit may reach); a commit apart from both references
    is decided against a relative `threshold` when one is given (measure/decide.py)."""
    if odds is None or boots < min_boots:
        return Visit.MORE if boots < cap else Visit.UNCLEAR
    if apart(odds) and threshold is not None and min(p := p_bad(odds, threshold), 1 - p) <= error:
        return Visit.DECIDED
    if apart(odds):
        return Visit.MORE if boots < cap else Visit.APART
    if odds.p_wrong <= error:
        return Visit.DECIDED
    return Visit.MORE if boots < cap else Visit.UNCLEAR


class Target(str, Enum):
    STEP = "step"
    GOOD = "good"
    BAD = "bad"


def next_boot(good: Sequence[Boot], bad: Sequence[Boot], step: Sequence[Boot], drift: bool = True) -> Target:
    """The boot that shrinks the uncertainty of the step's log odds most: the step's, the good
    reference's or the bad one's. The log odds, llr = (d_bad^2 / se_bad^2 - d_good^2 / se_good^2)
    / 2 with d the step's distance to each reference, are linearised in the fitted means (and,
    when `drift` and the references allow it and the drift weighs more than a level host in
    stats.step_odds' average (stats.drift_weight, on these boots' own noise), the common drift
    over boot order);
    one more boot of a group at the next boot's place in time takes (g' C r)^2 / (1 + r' C r) off
    their variance (g the gradient, C the fit's inverse information, r the boot's row), which
    counts both a mean's own boots and the drift's: references booted only at the start
    extrapolate their slope to every later step, and a boot of a reference now pins it down. A
    step that looks like good is decided by its distance to bad, so the bad reference gets the
    boot when it limits the step; the references' boots serve every later step too, so a tie
    goes to the reference."""
    if len(good) < 2 or len(bad) < 2 or not step:
        return Target.STEP if len(good) >= 2 and len(bad) >= 2 else (Target.GOOD if len(good) <= len(bad)
                                                                     else Target.BAD)
    slope = drift and drift_estimable(good, bad)
    rows, ys = [], []
    for g, boots in enumerate((good, bad, step)):
        for b in boots:
            rows.append([float(g == 0), float(g == 1), float(g == 2)] + ([b.seq / 100.0] if slope else []))
            ys.append(b.value)
    x = np.array(rows)
    info = x.T @ x
    if np.linalg.matrix_rank(info) < info.shape[0]:
        slope = False
        x, info = x[:, :3], info[:3, :3]
    cov = np.linalg.inv(info)  # in units of the boot variance
    beta = np.linalg.lstsq(x, np.array(ys), rcond=None)[0]
    if slope:  # the drift as the odds weigh it (stats.step_odds): the level host's boots when it weighs more
        resid = np.array(ys) - x @ beta
        s2 = float(resid @ resid) / max(1, len(ys) - x.shape[1])
        slope_t = float(beta[3]) / math.sqrt(s2 * float(cov[3, 3])) if s2 > 0 else 0.0
        if drift_weight(slope_t, len(ys)) < 0.5:
            slope = False
            x, cov = x[:, :3], np.linalg.inv(info[:3, :3])
            beta = np.linalg.lstsq(x, np.array(ys), rcond=None)[0]
    se_g = float(cov[2, 2] + cov[0, 0] - 2 * cov[0, 2])
    se_b = float(cov[2, 2] + cov[1, 1] - 2 * cov[1, 2])
    d_g, d_b = float(beta[2] - beta[0]), float(beta[2] - beta[1])
    grad = np.zeros(x.shape[1])
    grad[:3] = [-d_g / se_g, d_b / se_b, d_g / se_g - d_b / se_b]
    now = (max(b.seq for b in (*good, *bad, *step)) + 1) / 100.0
    gain = {}
    for t, g in ((Target.GOOD, 0), (Target.BAD, 1), (Target.STEP, 2)):
        r = np.zeros(x.shape[1])
        r[g] = 1.0
        if slope:
            r[3] = now
        cr = cov @ r
        gain[t] = float(grad @ cr) ** 2 / (1 + float(r @ cr))
    return max((Target.GOOD, Target.BAD, Target.STEP), key=lambda t: gain[t])


@dataclass(frozen=True)
class Round:
    """What the posterior says now: the answer so far, and the commits to measure next."""

    answer: PosteriorAnswer
    picks: tuple[str, ...]


def plan(dag: Dag, evidence: Mapping[str, float], slots: int, error: float, untestable: Iterable[str] = (),
         point: Mapping[str, float] | None = None, impossible: Iterable[str] = (),
         busy: Iterable[str] = (), ready: Iterable[str] = ()) -> Round:
    """One look at the search: the stop rule, and when it does not stop, the next round's
    commits (`slots` of them at most, none of `busy`)."""
    untestable = set(untestable)
    post = posterior(dag, evidence, point, impossible)
    found = answer(post, error, untestable)
    if found.kind is not Standing.SEARCHING:
        return Round(found, ())
    return Round(found, tuple(pick(post, slots, untestable, busy, ready=ready)))


def ahead(dag: Dag, evidence: Mapping[str, float], picks: Sequence[str], slots: int, error: float,
          untestable: Iterable[str] = (), impossible: Iterable[str] = (),
          ready: Iterable[str] = ()) -> list[tuple[float, tuple[str, ...]]]:
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
        nxt = plan(dag, {**evidence, **marks}, slots, error, untestable, impossible=impossible, ready=ready)
        out.append((max(0.0, hi - lo), nxt.picks))
    return sorted(out, key=lambda x: -x[0])


class Act(str, Enum):
    SEARCH = "search"  # measure `picks` (none: nothing left to measure)
    CONFIRM = "confirm"  # confirm `culprit` on fresh boots (against its parent, and reverted)
    DONE = "done"  # `culprit` confirmed and holding 1 - error of the mass
    ONLY_SKIPPED = "only_skipped"  # the culprit is one of `candidates`, which nothing testable tells apart


@dataclass(frozen=True)
class Move:
    """What the campaign does next, and the mass of the likeliest culprit (or class)."""

    act: Act
    culprit: str = ""
    picks: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    mass: float = 0.0


def next_move(dag: Dag, evidence: Mapping[str, float], slots: int, error: float, untestable: Iterable[str] = (),
              point: Mapping[str, float] | None = None, impossible: Iterable[str] = (), busy: Iterable[str] = (),
              nominate: float = NOMINATE, confirmed: Mapping[str, int] | None = None,
              total: int | None = None, ready: Iterable[str] = ()) -> Move:
    """The search's stop rule with its confirmation: a culprit holding 1 - `nominate` of the
    mass that was not confirmed yet is confirmed (fresh boots, whose evidence enters `point`);
    one confirmed and holding 1 - `error` is the answer; otherwise the search goes on (`slots`
    picks, see posterior.pick for `busy`, `total` and `ready`). `confirmed`: commit ->
    confirmations."""
    untestable = set(untestable)
    confirmed = confirmed or {}
    post = posterior(dag, evidence, point, impossible)
    strict = answer(post, error, untestable)
    if strict.kind is Standing.ONLY_SKIPPED:
        return Move(Act.ONLY_SKIPPED, candidates=strict.candidates, mass=strict.mass)
    if strict.kind is Standing.FOUND and confirmed.get(strict.culprit, 0):
        return Move(Act.DONE, strict.culprit, mass=strict.mass)
    loose = strict if strict.kind is Standing.FOUND else answer(post, max(error, nominate), untestable)
    if loose.kind is Standing.FOUND and not confirmed.get(loose.culprit, 0):
        return Move(Act.CONFIRM, loose.culprit, mass=loose.mass)
    best = loose.culprit if loose.kind is Standing.FOUND else ""
    return Move(Act.SEARCH, best, tuple(pick(post, slots, untestable, busy, total, ready)), mass=loose.mass)
