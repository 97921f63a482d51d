"""The search, pure: which smallest set of units moves good to bad?

It asks an oracle about candidates "good + S" (S a set of unit names) and gets MOVES (judged
like bad), STAYS (judged like good) or UNKNOWN (could not be judged: a kernel that does not
build, a boot that fails, ambiguous at the cap of boots; the search goes on as if it stayed, as
ddmin does with its unresolved tests). Good (no unit) stays and bad (every unit) moves: the
endpoint check made sure before the search starts.

The shape is delta debugging's divide and conquer with interactions (Zeller's ddmin; the
QuickXplain recursion): with `base + cands` moving and `base` staying, split `cands` in two
halves A (the units a maintainer would try first) and B; when base + A moves, the answer is in
A; else when base + B moves, it is in B; else the two halves are needed together, and the
answer is the smallest part of A that moves with all of B, plus the smallest part of B that
moves with that part of A. When a half could not be judged, nothing says the halves interact:
each unit alone is tried first (a unit that cannot be built without another, ungrouped, would
otherwise drag that other one into the answer). One responsible unit takes about 2 log2(n) candidates, k of them
about 2k log2(n/k); a set no single unit of which moves the metric is found as a whole, and
every unit in it has a witness: a candidate that held it and stayed (under the assumption
that adding units never undoes a move, which the confirmation then checks on fresh boots).

Nothing is asked twice: the answers of a resumed search come from what was stored, in the
same order, because the search is deterministic in its answers.

`ahead` is what several slots measure at once without touching the search: the candidates it
would ask next, found by running it over the answers known so far and, past the first one it
lacks, over hypothetical answers (when `base + A` stays, `base + B` comes next; when it moves,
the first half of A), the likeliest paths first as if one unit were responsible (after `base +
A` stayed, `base + B` almost surely moves). The search itself asks them one at a time, as with
one slot.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from orchestrator.decisions import Found


class Answer(StrEnum):
    MOVES = "moves"
    STAYS = "stays"
    UNKNOWN = "unknown"


Oracle = Callable[[frozenset[str]], Answer]
# What is known of a candidate so far (None: not yet).
Known = Callable[[frozenset[str]], "Answer | None"]
# The hypotheses `ahead` tries at most per candidate it names (each one search over the units).
AHEAD_TRIES = 64
# How sure `ahead` may be of an answer it supposes (p_moves): never quite, as several units may
# be needed together where one alone was supposed.
AHEAD_FLOOR = 0.05


@dataclass(frozen=True)
class Asked:
    applied: frozenset[str]
    answer: Answer


@dataclass(frozen=True)
class SearchResult:
    """`units`: the set named, in the order given; `asked`: every candidate in the order asked;
    `alone`: for each unit of a set of several, a candidate holding it that stayed (the
    witness that it does not move the metric alone)."""

    found: Found
    units: tuple[str, ...]
    asked: tuple[Asked, ...]
    alone: tuple[tuple[str, frozenset[str]], ...] = ()

    @property
    def unknown(self) -> tuple[frozenset[str], ...]:
        return tuple(a.applied for a in self.asked if a.answer is Answer.UNKNOWN)


def minimize(units: Sequence[str], oracle: Oracle) -> SearchResult:
    """The smallest set of `units` (names, in the order a maintainer would try them) whose
    candidate moves the metric, asking `oracle` as little as the recursion allows."""
    if not units:
        raise ValueError("a search needs at least one unit: the two sides do not differ")
    asked: list[Asked] = []
    known: dict[frozenset[str], Answer] = {frozenset(): Answer.STAYS, frozenset(units): Answer.MOVES}

    def moves(applied: frozenset[str]) -> bool:
        if applied not in known:
            known[applied] = oracle(applied)
            asked.append(Asked(applied, known[applied]))
        return known[applied] is Answer.MOVES

    def dd(base: frozenset[str], cands: list[str]) -> list[str]:
        if len(cands) == 1:
            return cands
        half = (len(cands) + 1) // 2
        a, b = cands[:half], cands[half:]
        if moves(base | set(a)):
            return dd(base, a)
        if moves(base | set(b)):
            return dd(base, b)
        if len(cands) > 2 and Answer.UNKNOWN in (known[base | set(a)], known[base | set(b)]):
            # a half that could not be judged says nothing of an interaction: each unit alone first
            single = next((c for c in cands if moves(base | {c})), None)
            if single is not None:
                return [single]
        a_min = dd(base | set(b), a)
        return a_min + dd(base | set(a_min), b)

    found = dd(frozenset(), list(units))
    order = {u: i for i, u in enumerate(units)}
    named = tuple(sorted(found, key=order.__getitem__))
    if len(named) == 1:
        return SearchResult(Found.ONE, named, tuple(asked))
    stayed = [a.applied for a in asked if a.answer is Answer.STAYS]
    alone = tuple((u, next((s for s in stayed if u in s), frozenset())) for u in named)
    return SearchResult(Found.TOGETHER, named, tuple(asked), alone)


class _Unanswered(Exception):
    def __init__(self, applied: frozenset[str]) -> None:
        super().__init__()
        self.applied = applied


def _trail(units: Sequence[str], known: Known) -> tuple[frozenset[str] | None, list[Asked]]:
    """The candidate `minimize` asks first that `known` does not answer (None when the answers
    known end the search), and the answered ones it asked before."""
    trail: list[Asked] = []

    def oracle(applied: frozenset[str]) -> Answer:
        answer = known(applied)
        if answer is None:
            raise _Unanswered(applied)
        trail.append(Asked(applied, answer))
        return answer

    try:
        minimize(units, oracle)
    except _Unanswered as q:
        return q.applied, trail
    return None, trail


def next_question(units: Sequence[str], known: Known) -> frozenset[str] | None:
    """The candidate `minimize` asks first that `known` does not answer; None when the answers
    known end the search."""
    return _trail(units, known)[0]


def p_moves(units: Sequence[str], applied: frozenset[str], trail: Sequence[Asked]) -> float:
    """How likely good + `applied` moves, as if one unit were responsible (each one consistent
    with the answers of `trail` alike): the share of those units in `applied`, kept within
    AHEAD_FLOOR of 0 and 1 (several units may be needed together); 0.5 when no single unit fits
    the answers (they are)."""
    fits = [u for u in units if all(a.answer is Answer.UNKNOWN or (u in a.applied) == (a.answer is Answer.MOVES)
                                    for a in trail)]
    if not fits:
        return 0.5
    share = sum(u in applied for u in fits) / len(fits)
    return min(1 - AHEAD_FLOOR, max(AHEAD_FLOOR, share))


def ahead(units: Sequence[str], known: Known, limit: int) -> list[frozenset[str]]:
    """Up to `limit` candidates the search may ask next, likeliest first: the one it asks now
    (the answers `known` give), then the ones it asks after hypothetical answers to those before,
    in the order of how likely the search is to get there (`p_moves` for each answer supposed;
    on a tie STAYS first: `base + B` after `base + A`). Pure: the search's own questions and
    answers do not depend on it."""
    out: list[frozenset[str]] = []
    tie = itertools.count()
    frontier: list[tuple[float, int, dict[frozenset[str], Answer]]] = [(-1.0, next(tie), {})]
    tries = 0
    while frontier and len(out) < limit and tries < AHEAD_TRIES * max(1, limit):
        minus_p, _n, supposed = heapq.heappop(frontier)
        tries += 1
        q, trail = _trail(units, _supposing(supposed, known))
        if q is None:
            continue
        if q not in out:
            out.append(q)
        moves = p_moves(units, q, trail)
        heapq.heappush(frontier, (minus_p * (1 - moves), next(tie), {**supposed, q: Answer.STAYS}))
        heapq.heappush(frontier, (minus_p * moves, next(tie), {**supposed, q: Answer.MOVES}))
    return out


def _supposing(supposed: dict[frozenset[str], Answer], known: Known) -> Known:
    return lambda applied: supposed.get(applied) or known(applied)
