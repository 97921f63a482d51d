"""bench/real_size: a campaign's wall time split by its builds' and boots' spans."""

from bench.real_size import split, union


def test_overlapping_and_touching_spans_merge_and_empty_ones_drop():
    assert union([(5, 7), (0, 2), (1, 3), (3, 4), (8, 8)]) == [(0, 4), (5, 7)]


def test_the_split_counts_a_build_beside_a_guest_once_as_both_and_the_rest_as_neither():
    s = split((0, 100), builds=[(0, 30), (50, 60)], boots=[(20, 40), (55, 58), (90, 120)])
    assert (s.wall, s.building, s.booted, s.both) == (100, 40 - 13, 33 - 13, 10 + 3)
    assert s.neither == 100 - 27 - 20 - 13


def test_spans_outside_the_campaign_are_clipped_to_it():
    s = split((10, 20), builds=[(0, 15)], boots=[(18, 30)])
    assert (s.building, s.booted, s.both, s.neither) == (5, 2, 0, 3)
