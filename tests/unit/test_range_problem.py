"""The endpoints' check over git facts (orchestrator/backends/git_bisect.py range_problem): a
bisection needs bad to descend from good and be another commit; each other case is refused in
one line naming the field."""

from __future__ import annotations

import pytest

from orchestrator.backends.git_bisect import RangeFacts, range_problem

G, B, M = "a" * 40, "b" * 40, "c" * 40


@pytest.mark.parametrize("facts, expected", [
    (RangeFacts(G, B, True, False, G), None),
    (RangeFacts(G, G, True, True, G), "bad: names the same commit as good (aaaaaaaaaaaa); a bisection needs a good "
                                      "commit and a later bad one"),
    (RangeFacts(G, B, False, True, B), "bad: bbbbbbbbbbbb is an ancestor of good aaaaaaaaaaaa: the range is reversed "
                                       "(good is the older commit)"),
    (RangeFacts(G, B, False, False, ""), "bad: bbbbbbbbbbbb shares no history with good aaaaaaaaaaaa; both must be "
                                         "commits of one history"),
    (RangeFacts(G, B, False, False, M), "bad: bbbbbbbbbbbb does not descend from good aaaaaaaaaaaa (they diverge at "
                                        "cccccccccccc); give a good commit that bad descends from"),
])
def test_only_a_bad_commit_descending_from_another_good_one_passes(facts, expected):
    assert range_problem(facts) == expected
