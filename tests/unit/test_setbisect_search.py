"""The set bisection's pure parts: the search over an oracle, candidate keys and labels."""

from __future__ import annotations

import itertools
import math

import pytest

from orchestrator.decisions import Found
from orchestrator.setbisect.model import Change, Unit, key_of, label, ordered
from orchestrator.setbisect.search import Answer, ahead, minimize, next_question

NAMES = [f"u{i}" for i in range(12)]


def oracle(needed: set[str], asked: list[frozenset[str]], unknown: set[str] = frozenset()):  # type: ignore[assignment, no-untyped-def]
    def ask(applied: frozenset[str]) -> Answer:
        asked.append(applied)
        if any(u in applied for u in unknown):
            return Answer.UNKNOWN
        return Answer.MOVES if needed <= applied else Answer.STAYS
    return ask


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12])
def test_one_responsible_unit_is_found_anywhere_within_two_log2_n_candidates(n: int) -> None:
    names = NAMES[:n]
    for culprit in names:
        asked: list[frozenset[str]] = []
        result = minimize(names, oracle({culprit}, asked))
        assert (result.found, result.units) == (Found.ONE, (culprit,))
        assert len(asked) <= 2 * math.ceil(math.log2(n)) if n > 1 else not asked
        assert len(asked) == len(set(asked)), "no candidate asked twice"


def test_every_pair_needed_together_is_named_as_the_pair_with_a_witness_for_each() -> None:
    names = NAMES[:8]
    for pair in itertools.combinations(names, 2):
        asked: list[frozenset[str]] = []
        result = minimize(names, oracle(set(pair), asked))
        assert (result.found, result.units) == (Found.TOGETHER, pair)
        for unit, witness in result.alone:
            assert unit in witness and not set(pair) <= witness


def test_a_set_of_three_where_no_unit_alone_moves_is_named_whole() -> None:
    result = minimize(NAMES, oracle({"u1", "u6", "u11"}, []))
    assert (result.found, result.units) == (Found.TOGETHER, ("u1", "u6", "u11"))


def test_a_half_that_cannot_be_judged_does_not_drag_an_innocent_unit_into_the_answer() -> None:
    names = NAMES[:8]
    asked: list[frozenset[str]] = []
    result = minimize(names, oracle({"u6"}, asked, unknown={"u7"}))
    assert result.units == ("u6",)
    assert result.unknown and all("u7" in s for s in result.unknown)


def test_the_search_needs_a_difference() -> None:
    with pytest.raises(ValueError, match="do not differ"):
        minimize([], oracle(set(), []))


def test_candidate_keys_name_the_sides_and_hash_the_sorted_set() -> None:
    names = ["a", "b", "c"]
    assert key_of([], names) == "good" and key_of(["c", "a", "b"], names) == "bad"
    assert key_of(["b", "a"], names) == key_of(["a", "b"], names) != key_of(["a"], names)
    assert key_of(["a"], names).startswith("set-") and len(key_of(["a"], names)) <= 64
    with pytest.raises(ValueError, match="not units"):
        key_of(["z"], names)


def test_a_candidate_is_labelled_the_shorter_way_round() -> None:
    names = ["a", "b", "c", "d"]
    assert label(["a"], names) == "good + a" and label(["a", "b", "c"], names) == "bad - d"
    assert label([], names) == "good" and label(names, names) == "bad"


def test_units_are_ordered_as_a_maintainer_tries_them_by_rank_then_name() -> None:
    units = [Unit.of(Change("zeta", "", "1"), 0), Unit.of(Change("alpha", "", "1"), 2), Unit.of(Change("beta", "", "1"))]
    assert [u.name for u in ordered(units)] == ["beta", "zeta", "alpha"]


def test_ahead_names_the_question_asked_now_then_the_second_half_it_asks_if_the_first_stays() -> None:
    names = NAMES[:8]
    first, second = frozenset(names[:4]), frozenset(names[4:])
    assert ahead(names, lambda _a: None, 2) == [first, second]
    assert ahead(names, lambda _a: None, 3)[2] == frozenset(names[:2]), "then the first quarter, if the first half moves"
    assert ahead(names, {first: Answer.STAYS}.get, 1) == [second]


@pytest.mark.parametrize("pair", [("u1",), ("u2", "u6"), ("u0", "u3", "u7")])
def test_ahead_first_is_always_the_question_the_search_asks_next_so_answers_stay_as_with_one_slot(
        pair: tuple[str, ...]) -> None:
    """Answering whatever `ahead` names, in any order, asks the search nothing it would not ask
    alone: its questions and answer are those of one slot."""
    names = NAMES[:8]
    alone: list[frozenset[str]] = []
    expected = minimize(names, oracle(set(pair), alone))
    truth = oracle(set(pair), [])
    known: dict[frozenset[str], Answer] = {}
    while (q := next_question(names, known.get)) is not None:
        wanted = ahead(names, known.get, 3)
        assert wanted[0] == q and len(set(wanted)) == len(wanted) and not set(wanted) & set(known)
        for a in reversed(wanted):  # the speculative ones answered first
            known[a] = truth(a)
    replayed: list[frozenset[str]] = []
    again = minimize(names, lambda a: replayed.append(a) or known[a])  # type: ignore[func-returns-value]
    assert (again.found, again.units) == (expected.found, expected.units) and replayed == alone


def test_ahead_after_a_half_stayed_guesses_the_other_half_moves_before_the_two_halves_together() -> None:
    """With good + u0..u3 judged STAYS, one responsible unit is in u4..u7: the search asks that
    half, then (it almost surely moves) its first quarter; the candidate it asks only if both
    halves stay (they interact: bad - u2, u3) comes later."""
    names = NAMES[:8]
    wanted = ahead(names, {frozenset(names[:4]): Answer.STAYS}.get, 8)
    assert wanted[:3] == [frozenset(names[4:]), frozenset(names[4:6]), frozenset(names[6:])]
    together = frozenset(names[:2] + names[4:])
    assert together in wanted and wanted.index(together) > 2
