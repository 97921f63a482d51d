"""Direction: what worse and better mean for a metric that is better higher or lower."""

import pytest

from orchestrator.direction import Direction


def test_a_drop_is_worse_when_higher_is_better_and_better_when_lower_is():
    assert Direction.HIGHER.worse(-0.1) and not Direction.HIGHER.better(-0.1)
    assert Direction.LOWER.better(-0.1) and not Direction.LOWER.worse(-0.1)
    assert not any(d.worse(0.0) or d.better(0.0) for d in Direction)


def test_reaching_a_threshold_includes_it_and_worse_than_does_not():
    assert Direction.HIGHER.reaches(-0.1, -0.1) and not Direction.HIGHER.worse_than(-0.1, -0.1)
    assert Direction.LOWER.reaches(0.2, 0.1) and Direction.LOWER.worse_than(0.2, 0.1)
    assert not Direction.HIGHER.reaches(-0.05, -0.1)


def test_the_worse_end_of_an_interval_is_its_low_end_when_higher_is_better():
    assert (Direction.HIGHER.worse_end(-0.3, 0.1), Direction.HIGHER.better_end(-0.3, 0.1)) == (-0.3, 0.1)
    assert (Direction.LOWER.worse_end(-0.3, 0.1), Direction.LOWER.better_end(-0.3, 0.1)) == (0.1, -0.3)
    assert Direction.HIGHER.worsening(-0.2) == 0.2 and Direction.LOWER.worsening(-0.2) == -0.2


def test_a_direction_reads_from_and_is_its_word():
    assert Direction("higher") is Direction.HIGHER and f"{Direction.LOWER} is better" == "lower is better"
    with pytest.raises(ValueError):
        Direction("none")
