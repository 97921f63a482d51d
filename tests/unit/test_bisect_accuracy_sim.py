"""The accuracy simulation's own pieces: its noise levels and its first-parent twin."""

from __future__ import annotations

import argparse
import random

import pytest

from bench.bisect_accuracy.__main__ import CASES, Source, engine_trial, entry, noise, seeds, trials
from tests.fakes import FakeVcs


def test_noise_levels_are_read_in_percent_and_bad_ones_name_the_form():
    assert noise("13/11") == (0.13, 0.11)
    with pytest.raises(argparse.ArgumentTypeError, match="expected BETWEEN/WITHIN in percent"):
        noise("13")
    with pytest.raises(argparse.ArgumentTypeError, match="from 0 to 100"):
        noise("130/2")


def test_seeds_are_one_or_a_range_with_both_ends_and_bad_ones_name_the_form():
    assert seeds("98") == [98]
    assert seeds("0-3") == [0, 1, 2, 3]
    for bad in ("x", "3-1", "-2", "1-"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected a seed"):
            seeds(bad)


def test_a_trial_chosen_by_its_seed_is_the_trial_of_that_seed_in_a_whole_row():
    where = Source("kernel:300", kernel=300)
    alone = trials(engine_trial, CASES[0], [2], 0.0, 1, 1, where=where)
    row = trials(engine_trial, CASES[0], [0, 1, 2], 0.0, 1, 1, where=where)
    assert [t.seed for t in alone] == [2] and alone[0] == row[2]
    assert alone[0].confidence > 0


def test_the_entry_of_a_culprit_on_a_topic_branch_is_the_main_line_merge_that_brought_it_in():
    where = Source("kernel:300", kernel=300)
    h = where.history(random.Random(3), 3, 0.0)
    vcs = FakeVcs(h.shas, h.parents)
    at = entry(vcs, h.culprit, len(h.shas) - 1)
    merge = h.shas[at]
    assert len(vcs.parents[merge]) == 2 and vcs.dag.is_ancestor(h.shas[h.culprit], merge)
    assert not vcs.dag.is_ancestor(h.shas[h.culprit], vcs.parents[merge][0])


def test_a_merge_is_not_reverted_by_the_fake_git_as_by_git():
    vcs = FakeVcs(["a", "b", "c", "m"], {"a": [], "b": ["a"], "c": ["a"], "m": ["b", "c"]})
    assert vcs.revert("m", "m").commit == "" and "2 parents" in vcs.revert("m", "m").reason
    assert vcs.revert("c", "m").commit


def test_the_first_parent_twin_names_the_culprit_of_a_kernel_shaped_history_as_the_plain_search_does():
    case = CASES[0]
    plain = engine_trial(case, 3, 0.0, 1, where=Source("kernel:300", kernel=300))
    twin = engine_trial(case, 3, 0.0, 1, where=Source("kernel:300", kernel=300), first_parent=True)
    assert plain.right and twin.right, (plain.answer, twin.answer)
    assert twin.boots > 0 and twin.steps > 0 and not twin.refused
