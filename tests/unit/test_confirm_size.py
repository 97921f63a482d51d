"""Confirmation needs a change that can be the regression asked about (Pairs._carries)."""

from types import SimpleNamespace

from orchestrator.bisect.confirmation import Pairs
from orchestrator.campaign.file import Threshold


def engine(kind: str, value: float, direction: str) -> SimpleNamespace:
    return SimpleNamespace(c=SimpleNamespace(metric=SimpleNamespace(threshold=Threshold(kind, value))),
                           direction=direction)


def test_a_change_surely_smaller_than_the_threshold_does_not_carry_the_regression():
    # the demo under load: -8.3% (95% CI -15.7..-0.2%) against a -25% threshold
    assert not Pairs._carries(engine("relative", -0.25, "higher"), -0.157, -0.002)  # type: ignore[arg-type]


def test_a_change_whose_interval_reaches_the_threshold_carries_it_in_either_direction():
    assert Pairs._carries(engine("relative", -0.25, "higher"), -0.52, -0.33)  # type: ignore[arg-type]
    assert Pairs._carries(engine("relative", -0.10, "higher"), -0.12, -0.01)  # type: ignore[arg-type]
    assert Pairs._carries(engine("relative", 0.10, "lower"), 0.02, 0.15)  # type: ignore[arg-type]
    assert not Pairs._carries(engine("relative", 0.10, "lower"), 0.01, 0.05)  # type: ignore[arg-type]


def test_an_absolute_threshold_leaves_the_size_to_the_significance_test():
    assert Pairs._carries(engine("absolute", 1000.0, "higher"), -0.05, -0.01)  # type: ignore[arg-type]
