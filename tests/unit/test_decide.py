import random

import pytest

from orchestrator.bisect.decide import Verdict, decide, gap_position
from orchestrator.bisect.endpoints import Threshold, check_endpoints
from orchestrator.bisect.stats import median_ci, noise_cov, p_less, reps_to_detect, robust_cov, summarize

GOOD = [100.0, 101.5, 99.0, 100.8, 98.9, 100.2, 101.1, 99.6]
BAD = [90.1, 89.0, 91.2, 90.4, 89.7, 90.9, 88.8, 90.0]


def test_step_like_good_is_good_and_like_bad_is_bad():
    assert decide(GOOD, BAD, [100.4, 99.1, 101.0], can_run_more=True).verdict is Verdict.GOOD
    assert decide(GOOD, BAD, [90.3, 89.5, 91.0], can_run_more=True).verdict is Verdict.BAD


def test_verdicts_hold_for_lower_is_better_metrics_too():
    lat_good, lat_bad = [10.0, 10.2, 9.9, 10.1], [12.0, 12.3, 11.9, 12.1]
    assert decide(lat_good, lat_bad, [12.1, 12.2, 11.8], True).verdict is Verdict.BAD
    assert decide(lat_good, lat_bad, [10.0, 9.8, 10.1], True).verdict is Verdict.GOOD


def test_too_few_samples_ask_for_more():
    d = decide(GOOD, BAD, [100.0, 99.0], True)
    assert d.verdict is Verdict.MORE and "2 of at least 3" in d.reason


def test_step_differing_from_both_references_but_clearly_on_one_side_is_decided():
    near_bad = [91.5, 91.8, 91.2, 91.6, 91.4]
    assert decide(GOOD, BAD, near_bad, True).verdict is Verdict.BAD
    near_good = [98.3, 98.5, 98.1, 98.6, 98.4]
    assert decide(GOOD, BAD, near_good, True).verdict is Verdict.GOOD


def test_halfway_value_asks_for_more_then_skips_with_reason():
    halfway = [95.1, 94.9, 95.0, 95.2, 94.8]
    assert decide(GOOD, BAD, halfway, True).verdict is Verdict.MORE
    final = decide(GOOD, BAD, halfway, False)
    assert final.verdict is Verdict.SKIP and "ambiguous after 5 samples" in final.reason
    assert "differs from both" in final.reason


def test_confidence_reported_with_the_verdict():
    d = decide(GOOD, BAD, [100.1, 99.7, 100.9, 100.3], True)
    assert d.verdict is Verdict.GOOD and 0.95 < d.confidence <= 1 and d.position < 0.2


def test_gap_position_is_zero_at_good_and_one_at_bad():
    assert gap_position(GOOD, BAD, GOOD) == pytest.approx(0.0)
    assert gap_position(GOOD, BAD, BAD) == pytest.approx(1.0)


def test_single_step_error_rate_at_3_percent_noise_and_10_percent_change_is_below_one_in_a_thousand():
    rng = random.Random(7)

    def draw(mu, n):
        return [rng.gauss(mu, 3.0) for _ in range(n)]

    wrong = 0
    for trial in range(2000):
        good, bad = draw(100, 6), draw(90, 6)
        truth_bad = trial % 2 == 1
        step = draw(90 if truth_bad else 100, 3)
        d = decide(good, bad, step, can_run_more=False)
        if d.verdict in (Verdict.GOOD, Verdict.BAD) and (d.verdict is Verdict.BAD) != truth_bad:
            wrong += 1
    assert wrong <= 2


def test_exact_rank_test_p_values():
    assert p_less([1, 2, 3], [4, 5, 6]) == pytest.approx(1 / 20)
    assert p_less([4, 5, 6], [1, 2, 3]) == pytest.approx(1.0)
    assert p_less([5, 5, 5], [5, 5, 5]) == 1.0


def test_reps_needed_grow_with_noise_and_shrink_with_effect():
    assert reps_to_detect(0.03, 0.10) == 3
    assert reps_to_detect(0.13, 0.10) > reps_to_detect(0.03, 0.10)
    assert reps_to_detect(0.10, 0.05) > reps_to_detect(0.10, 0.10)


def test_summary_and_median_interval():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.mean, s.min, s.max, s.median) == (4, 2.5, 1.0, 4.0, 2.5)
    assert s.cov == pytest.approx(s.stddev / 2.5)
    lo, hi = median_ci(list(range(1, 21)))
    assert lo < 10.5 < hi


def test_endpoints_accepted_when_bad_regresses_beyond_threshold():
    check = check_endpoints(GOOD, BAD, "higher", Threshold("relative", -0.05), max_reps=10)
    assert check.ok and check.change == pytest.approx(-0.1, abs=0.01)


def test_bad_that_is_not_bad_is_refused_with_the_measured_change():
    check = check_endpoints(GOOD, GOOD[::-1], "higher", Threshold("relative", -0.10), max_reps=10)
    assert not check.ok and check.message.startswith("bad is not bad") and "-10.0%" in check.message
    assert check.problem == "bad_not_bad"


def test_a_regression_smaller_than_asked_is_short_of_the_threshold():
    slightly = [g * 0.97 for g in GOOD]
    check = check_endpoints(GOOD, slightly, "higher", Threshold("relative", -0.10), max_reps=10)
    assert not check.ok and check.problem == "short_of_threshold"


def test_improvement_in_the_wrong_direction_is_not_a_regression():
    check = check_endpoints(BAD, GOOD, "higher", Threshold("relative", -0.05), max_reps=10)
    assert not check.ok and "bad is not bad" in check.message


def test_noise_that_hides_the_threshold_is_refused_saying_how_many_runs_are_needed():
    rng = random.Random(3)
    noisy_good = [rng.gauss(100, 15) for _ in range(8)]
    noisy_bad = [v - 30 for v in noisy_good]
    check = check_endpoints(noisy_good, noisy_bad, "higher", Threshold("relative", -0.05), max_reps=5)
    assert not check.ok and check.reps_needed > 5 and check.problem == "too_noisy"
    assert f"needs {check.reps_needed} repetitions per commit to detect" in check.message


def test_absolute_bound_for_a_lower_is_better_metric():
    lat_good, lat_bad = [10.0, 10.2, 9.9, 10.1, 10.0], [12.0, 12.3, 11.9, 12.1, 12.2]
    assert check_endpoints(lat_good, lat_bad, "lower", Threshold("absolute", 11.0), max_reps=10).ok
    check = check_endpoints(lat_bad, lat_bad, "lower", Threshold("absolute", 11.0), max_reps=10)
    assert not check.ok and check.message.startswith("good is not good")


def test_one_stray_run_does_not_inflate_the_noise_a_campaign_is_judged_by():
    runs = [3950.0, 3976.0, 3901.0, 4319.0, 3709.0, 3538.0, 4463.0, 9045.0]
    assert summarize(runs).cov > 0.3 and robust_cov(runs) < 0.12 and noise_cov(runs) == robust_cov(runs)


def test_a_small_sample_whose_mad_overstates_normal_noise_is_judged_by_its_stddev():
    runs = [100.0, 100.2, 96.0, 104.0, 99.8, 103.9, 96.1]
    assert robust_cov(runs) > summarize(runs).cov and noise_cov(runs) == summarize(runs).cov
    assert robust_cov([100.0, 100.0]) == 0.0 and robust_cov([5.0]) == 0.0


def test_demo_like_endpoints_on_a_busy_host_are_accepted_despite_an_outlier():
    good = [5458.0, 4463.0, 5711.0, 3709.0, 2959.0, 9045.0, 5230.0, 3973.0, 3976.0, 3950.0, 3538.0, 4319.0,
            2921.0, 3901.0, 2583.0]
    bad = [3277.0, 2753.0, 2190.0, 2437.0, 2774.0, 1573.0, 2516.0, 2996.0, 1684.0, 2198.0, 1780.0, 2123.0,
           2977.0, 2813.0, 1884.0]
    check = check_endpoints(good, bad, "higher", Threshold("relative", -0.25), max_reps=15)
    assert check.ok and check.reps_needed <= 15
