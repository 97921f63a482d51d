"""The set bisection's pure parts: the search over an oracle, candidate keys and labels."""

from __future__ import annotations

import itertools
import math

import pytest

from orchestrator.setbisect.model import Change, Unit, key_of, label, ordered
from orchestrator.setbisect.search import Answer, Found, minimize

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
