"""The step decision and the endpoint check on boots (orchestrator.measure.decide, endpoints)."""

import random

import pytest

from orchestrator.decisions import Basis, Verdict
from orchestrator.measure.decide import ERROR, decide, p_bad
from orchestrator.measure.endpoints import Threshold, check_endpoints
from orchestrator.stats import Boot, step_odds


def boots(level: float, n: int, rng: random.Random, between: float = 0.05, within: float = 0.02, start: int = 0,
          runs: int = 3, every: int = 1) -> list[Boot]:
    """n boots numbered start, start + every, ...: references interleave with every=2."""
    out = []
    for i in range(n):
        b = level * (1 + rng.gauss(0, between))
        out.append(Boot(start + every * i, tuple(b * (1 + rng.gauss(0, within)) for _ in range(runs))))
    return out


def refs(rng: random.Random, good: float = 100, bad: float = 85, n: int = 10, **kw):  # type: ignore[no-untyped-def]
    return boots(good, n, rng, every=2, **kw), boots(bad, n, rng, start=1, every=2, **kw)


def refreshed(good: list[Boot], bad: list[Boot], rng: random.Random, at: int, levels=(100, 85), **kw):  # type: ignore[no-untyped-def]
    """The references booted again at `at` (A B, then B A), as the engine's drift guard does
    while steps are measured: the step's model fits the host's drift between them."""
    return (good + boots(levels[0], 2, rng, start=at, every=3, **kw),
            bad + boots(levels[1], 2, rng, start=at + 1, every=1, **kw))


def test_step_like_good_is_good_and_like_bad_is_bad():
    rng = random.Random(1)
    good, bad = refs(rng)  # no drift in the model here: the rule alone (drift: test_stats)
    like_good = decide(step_odds(good, bad, boots(100, 5, rng, start=20), drift=False), 5, 2, 8)
    like_bad = decide(step_odds(good, bad, boots(85, 5, rng, start=25), drift=False), 5, 2, 8)
    assert like_good.verdict is Verdict.GOOD and like_bad.verdict is Verdict.BAD
    assert like_good.confidence >= 1 - ERROR and like_bad.confidence >= 1 - ERROR


def test_verdicts_hold_for_lower_is_better_metrics_too():
    rng = random.Random(2)
    good, bad = refs(rng, 10, 12, between=0.02)
    assert decide(step_odds(good, bad, boots(12, 4, rng, between=0.02, start=20)), 4, 2, 8).verdict is Verdict.BAD
    assert decide(step_odds(good, bad, boots(10, 4, rng, between=0.02, start=24)), 4, 2, 8).verdict is Verdict.GOOD


def test_fewer_boots_than_the_minimum_ask_for_more_whatever_the_odds():
    rng = random.Random(3)
    good, bad = refs(rng)
    d = decide(step_odds(good, bad, boots(100, 1, rng, start=20)), 1, 2, 8)
    assert d.verdict is Verdict.MORE and "1 of at least 2 boots" in d.reason


def test_a_step_halfway_asks_for_more_boots_then_skips_at_the_cap_saying_why():
    rng = random.Random(4)
    good, bad = refs(rng, 100, 80, between=0.0)
    halfway = boots(89.4, 4, rng, between=0.0, within=0.005, start=20)
    assert decide(step_odds(good, bad, halfway), 4, 2, 8).verdict is Verdict.MORE
    final = decide(step_odds(good, bad, halfway), 8, 2, 8)
    assert final.verdict is Verdict.SKIP and "ambiguous after the cap of 8 boots" in final.reason


def test_a_step_apart_from_both_references_is_judged_by_its_change_against_a_relative_threshold():
    """Between two steps of a regression in two (100 -> 90 -> 80): -10% from good is surely past
    a -5% threshold (bad) and surely short of -15% (good); without a threshold it stays unclear."""
    rng = random.Random(5)
    good, bad = refs(rng, 100, 80, between=0.02)
    middle = step_odds(good, bad, boots(90, 4, rng, between=0.02, start=20))
    assert middle is not None and middle.fit_p < 0.001
    past, short = decide(middle, 4, 2, 8, threshold=-0.05), decide(middle, 4, 2, 8, threshold=-0.15)
    assert past.verdict is Verdict.BAD and past.kind is Basis.THRESHOLD and past.confidence >= 1 - ERROR
    assert short.verdict is Verdict.GOOD and short.kind is Basis.THRESHOLD and short.confidence >= 1 - ERROR
    assert "past the threshold -5.0%" in past.reason and "short of the threshold -15.0%" in short.reason
    assert decide(middle, 4, 2, 8).verdict is Verdict.MORE
    assert decide(middle, 4, 2, 8, threshold=-0.10).verdict is Verdict.MORE  # at the threshold: not sure
    assert p_bad(middle, -0.05) > 1 - ERROR > ERROR > p_bad(middle, -0.15)


def test_the_threshold_rule_holds_for_lower_is_better_metrics_and_leaves_steps_near_a_reference_alone():
    rng = random.Random(6)
    good, bad = refs(rng, 10, 12.1, between=0.02)  # latency: +21% in two steps of +10%
    middle = step_odds(good, bad, boots(11, 4, rng, between=0.02, start=20))
    assert middle is not None
    assert decide(middle, 4, 2, 8, threshold=0.02).verdict is Verdict.BAD
    assert decide(middle, 4, 2, 8, threshold=0.18).verdict is Verdict.GOOD
    like_good = step_odds(good, bad, boots(10, 4, rng, between=0.02, start=24))
    assert like_good is not None and p_bad(like_good, 0.15) == like_good.p_bad  # not apart: the references decide
    assert decide(like_good, 4, 2, 8, threshold=0.15).kind is Basis.MEASURED


def test_a_step_the_references_cannot_place_yet_is_judged_as_soon_as_it_is_surely_short_of_the_threshold():
    """At 12% boot noise, a commit between two steps (100 -> 88 -> 64) sits at 29% of the gap and
    is not shown apart from both references; its change from good (-12%) is surely short of a
    -30% threshold long before its side is sure, and it is judged good then."""
    rng = random.Random(7)
    good, bad = refs(rng, 100, 64, between=0.12, n=6)
    middle = step_odds(good, bad, boots(88, 8, rng, between=0.12, start=20))
    assert middle is not None and middle.fit_p >= 0.001 and middle.p_wrong > ERROR
    assert decide(middle, 8, 2, 12).verdict is Verdict.MORE
    judged = decide(middle, 8, 2, 12, threshold=-0.30)
    assert judged.verdict is Verdict.GOOD and judged.kind is Basis.THRESHOLD and judged.confidence >= 1 - ERROR
    assert p_bad(middle, -0.30) <= ERROR
    assert decide(middle, 8, 2, 12, threshold=-0.12).verdict is Verdict.MORE  # at the threshold: not sure


def test_runs_of_one_boot_are_not_independent_evidence():
    """The issue's case: 3 runs of one boot within 1% of each other, 8% between boots. Counted
    as 3 samples they look decisive; as one boot they are one observation."""
    rng = random.Random(5)
    good, bad = refs(rng, n=8, between=0.08, within=0.01)
    one_boot = [Boot(30, (86.0, 86.4, 85.8))]
    odds = step_odds(good, bad, one_boot)
    assert odds is not None and odds.p_wrong > ERROR
    assert decide(odds, 1, 2, 8).verdict is Verdict.MORE


def test_single_step_error_rate_at_8_percent_between_boot_noise_is_within_its_stated_bound():
    """Calibration: steps decided at ERROR are wrong at most about ERROR of the time."""
    rng = random.Random(7)
    wrong = decided = 0
    for trial in range(300):
        good, bad = refreshed(*refs(rng, n=8, between=0.08), rng, 25, between=0.08)
        truth = 85 if trial % 2 else 100
        step = []
        for k in range(2, 9):
            step = boots(truth, k, rng, between=0.08, start=16)
            d = decide(step_odds(good, bad, step), k, 2, 8)
            if d.verdict is not Verdict.MORE:
                break
        if d.verdict in (Verdict.GOOD, Verdict.BAD) and not d.reason.startswith("doubtful"):
            decided += 1
            wrong += (d.verdict is Verdict.BAD) != (truth == 85)
    assert decided > 200 and wrong <= max(2, 3 * ERROR * decided)


GOOD_B, BAD_B = refs(random.Random(10), 100, 88, n=8, between=0.03)


def test_endpoints_accepted_when_bad_regresses_beyond_threshold_with_the_boots_a_step_needs():
    check = check_endpoints(GOOD_B, BAD_B, "higher", Threshold("relative", -0.05), 3, 8, 0.05, ERROR)
    assert check.ok and check.change == pytest.approx(-0.12, abs=0.03) and 2 <= check.boots_needed <= 8
    assert "between-boot CoV" in check.message and "within-boot CoV" in check.message


def test_bad_that_is_not_bad_is_refused_with_the_measured_change():
    check = check_endpoints(GOOD_B, GOOD_B[::-1], "higher", Threshold("relative", -0.10), 3, 8, 0.05, ERROR)
    assert not check.ok and check.message.startswith("bad is not bad") and "-10.0%" in check.message


def test_a_regression_clearly_smaller_than_asked_is_short_of_the_threshold():
    slightly = [Boot(b.seq + 1, tuple(x * 0.97 for x in b.runs)) for b in GOOD_B]
    check = check_endpoints(GOOD_B, slightly, "higher", Threshold("relative", -0.30), 3, 8, 0.05, ERROR)
    assert not check.ok and check.problem == "short_of_threshold"


def test_improvement_in_the_wrong_direction_is_not_a_regression():
    check = check_endpoints(BAD_B, GOOD_B, "higher", Threshold("relative", -0.05), 3, 8, 0.05, ERROR)
    assert not check.ok and "bad is not bad" in check.message and check.problem == "bad_not_bad"


def test_between_boot_noise_too_large_for_the_gap_is_refused_with_the_boots_needed():
    rng = random.Random(12)
    good, bad = refs(rng, 100, 70, n=12, between=0.20)
    check = check_endpoints(good, bad, "higher", Threshold("relative", -0.10), 3, 4, 0.05, ERROR)
    assert not check.ok and check.problem == "too_noisy" and check.boots_needed > 4
    assert f"needs {check.boots_needed} boots per commit" in check.message


def test_absolute_bound_for_a_lower_is_better_metric():
    rng = random.Random(13)
    lat_good, lat_bad = refs(rng, 10, 12, n=6, between=0.01)
    assert check_endpoints(lat_good, lat_bad, "lower", Threshold("absolute", 11.0), 3, 8, 0.05, ERROR).ok
    check = check_endpoints(lat_bad, lat_bad, "lower", Threshold("absolute", 11.0), 3, 8, 0.05, ERROR)
    assert not check.ok and check.message.startswith("good is not good")
