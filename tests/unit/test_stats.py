"""orchestrator.stats: the one statistics module."""

import math
import random

import pytest

from orchestrator.stats import (
    Boot,
    Stray,
    boot_variance,
    boots_needed,
    compare_boots,
    compare_pooled,
    components,
    drift,
    drift_weight,
    evidence,
    median_ci,
    noise_cov,
    p_less,
    pooled,
    pooled_boot_variance,
    reps_to_detect,
    robust_cov,
    step_odds,
    stray_boots,
    summarize,
)


def test_exact_rank_test_p_values():
    assert p_less([1, 2, 3], [4, 5, 6]) == pytest.approx(1 / 20)
    assert p_less([4, 5, 6], [1, 2, 3]) == pytest.approx(1.0)
    assert p_less([5, 5, 5], [5, 5, 5]) == 1.0


def test_summary_cov_is_a_fraction_and_the_median_interval_covers_the_median():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.mean, s.min, s.max, s.median) == (4, 2.5, 1.0, 4.0, 2.5)
    assert s.cov == pytest.approx(s.stddev / 2.5)
    lo, hi = median_ci(list(range(1, 21)))
    assert lo < 10.5 < hi


def test_one_stray_run_does_not_inflate_the_noise():
    runs = [3950.0, 3976.0, 3901.0, 4319.0, 3709.0, 3538.0, 4463.0, 9045.0]
    assert summarize(runs).cov > 0.3 and robust_cov(runs) < 0.12 and noise_cov(runs) == robust_cov(runs)
    assert robust_cov([100.0, 100.0]) == 0.0 and robust_cov([5.0]) == 0.0


def test_summary_has_the_mmtests_columns_and_a_fractional_cov():
    s = summarize([10.0, 12.0, 14.0])
    assert (s.n, s.mean, s.stddev, s.min, s.max) == (3, 12.0, 2.0, 10.0, 14.0)
    assert s.cov == pytest.approx(2 / 12)
    assert summarize([5.0]).stddev == 0.0


@pytest.mark.parametrize("cov, reps", [(0.01, 3), (0.05, 6), (0.10, 17), (0.20, 64), (0.30, 143)])
def test_repetitions_to_detect_a_ten_percent_change_match_the_exact_noncentral_t_answer(cov, reps):
    assert reps_to_detect(cov, 0.10) == reps


def test_repetitions_to_detect_grow_with_noise_and_shrink_with_the_change():
    assert reps_to_detect(0.03, 0.10) == 3
    assert reps_to_detect(0.13, 0.10) > reps_to_detect(0.03, 0.10)
    assert reps_to_detect(0.10, 0.05) > reps_to_detect(0.10, 0.10)


def test_variance_components_separate_between_boot_from_within_boot_noise():
    rng = random.Random(1)
    groups = []
    for level in (100.0, 85.0):
        boots = []
        for i in range(40):
            b = level * (1 + rng.gauss(0, 0.08))
            boots.append(Boot(i, tuple(b * (1 + rng.gauss(0, 0.02)) for _ in range(3))))
        groups.append(boots)
    c = components(groups)
    assert c.between_cov == pytest.approx(0.08, abs=0.015) and c.within_cov == pytest.approx(0.02, abs=0.004)


def test_boots_needed_grow_with_between_boot_noise_and_more_runs_do_not_buy_it_back():
    assert boots_needed(0.02, 0.02, 3, -0.15, 0.01) == 2
    many_runs = boots_needed(0.12, 0.02, 30, -0.15, 0.01)
    assert many_runs > 4 and many_runs == boots_needed(0.12, 0.02, 3, -0.15, 0.01)


def test_drift_of_the_host_is_fitted_and_removed_from_a_late_step():
    """A host slowing 0.2% per boot: a good step measured late reads 10% low, yet is judged good."""
    rng = random.Random(2)

    def boot(level, seq):
        v = level * (1 - 0.002 * seq) * (1 + rng.gauss(0, 0.02))
        return Boot(seq, (v, v, v))

    good = [boot(100, s) for s in (0, 3, 20, 23, 40, 43)]
    bad = [boot(85, s) for s in (1, 2, 21, 22, 41, 42)]
    late_good = [boot(100, s) for s in (50, 51, 52)]
    rate, t = drift(good, bad)
    assert rate == pytest.approx(-0.2, abs=0.08) and t < -3
    odds = step_odds(good, bad, late_good)
    assert odds is not None and odds.verdict == "good" and odds.p_wrong < 0.01
    assert step_odds(good, bad, late_good, drift=False).p_bad > odds.p_bad


def test_two_boot_groups_compare_on_boot_values_with_a_confidence_interval():
    a = [Boot(2 * i, (100.0 + (-1) ** i * i,)) for i in range(5)]
    b = [Boot(2 * i + 1, (80.0 + (-1) ** i * i,)) for i in range(5)]
    t = compare_boots(a, b)
    assert t is not None and t.low < t.change < t.high < 0 and t.p < 0.001
    assert evidence(t, -0.18) > 5 and evidence(t, 0.0) == pytest.approx(0.0)
    assert compare_boots(a[:1], b) is None and math.isclose(t.n_a, 5)


def test_compare_runs_averages_the_runs_of_a_boot_and_pairs_shared_boots():
    from orchestrator.stats import compare_runs

    a = {1: [100.0, 100.2, 99.8], 2: [80.0, 80.1, 79.9], 3: [120.0, 119.9, 120.1]}
    shared = {k: [x * 0.9 for x in v] for k, v in a.items()}
    paired = compare_runs(a, shared)
    assert paired is not None and paired.paired and paired.n_a == paired.n_b == 3 and paired.df == 2
    assert paired.change == pytest.approx(-0.10, abs=1e-6) and paired.p < 0.001
    own = compare_runs(a, {k + 10: v for k, v in shared.items()})  # the same levels in boots of their own
    assert own is not None and not own.paired and own.n_a == 3 and own.p > 0.05  # the boots' spread decides


def test_compare_runs_uses_the_plain_scale_when_a_value_can_be_zero_and_refuses_what_it_cannot_test():
    from orchestrator.stats import compare_runs

    t = compare_runs({1: [0.0, 1.0], 2: [2.0]}, {3: [4.0], 4: [5.0, 5.0]})
    assert t is not None and t.change == pytest.approx((4.5 - 1.25) / 1.25)
    assert compare_runs({1: [1.0, 2.0, 3.0]}, {2: [4.0], 3: [5.0]}) is None  # one boot on a side
    assert compare_runs({1: [1.0], 2: [2.0]}, {2: [4.0], 3: [5.0]}) is None  # boots partly shared


def _boots(start: int, *values: float, busy: set[int] = frozenset()) -> list[Boot]:
    return [Boot(start + i, (v,), start + i in busy) for i, v in enumerate(values)]


def test_a_busy_boot_far_below_its_commits_other_boots_is_stray():
    groups = {"good": _boots(0, 100, 102, 98, 101, 55, busy={4}), "bad": _boots(5, 80, 79, 81, 82)}
    assert stray_boots(groups) == {4: Stray.STRAYED}


def test_a_boot_that_strays_on_a_quiet_host_is_still_evidence():
    groups = {"good": _boots(0, 100, 102, 98, 101, 55), "bad": _boots(5, 80, 79, 81, 82)}
    assert stray_boots(groups) == {}


def test_a_busy_boot_within_the_noise_is_kept():
    groups = {"good": _boots(0, 100, 102, 98, 101, 97, busy={4}), "bad": _boots(5, 80, 79, 81, 82, busy={5})}
    assert stray_boots(groups) == {}


def test_nothing_is_stray_without_a_noise_estimate():
    assert stray_boots({"good": _boots(0, 100, 50, busy={1})}) == {}


def test_a_boot_whose_cpus_other_work_took_a_quarter_of_is_left_out_whatever_its_value():
    good = _boots(0, 100, 102, 98, 101)
    good.append(Boot(4, (99.0,), taken=0.30))
    groups = {"good": good, "bad": _boots(5, 80, 79, 81, 82)}
    assert stray_boots(groups) == {4: Stray.OVERLAPPED}
    good[4] = Boot(4, (99.0,), taken=0.20)  # suspect only, and within the noise: evidence
    assert stray_boots(groups) == {}


def test_other_work_every_boot_shared_leaves_no_boot_out():
    groups = {"good": [Boot(i, (100.0 + i,), taken=0.5) for i in range(4)],
              "bad": [Boot(4 + i, (80.0 + i,), taken=0.52) for i in range(4)]}
    assert stray_boots(groups) == {}
    groups["bad"][0] = Boot(4, (80.0,), taken=0.8)  # one boot had far more beside it than the others
    assert stray_boots(groups) == {4: Stray.OVERLAPPED}


def test_a_guest_far_slower_than_the_others_to_reach_its_agent_makes_a_far_boot_stray():
    def boots(start: int, *values: float, slow: int = -1) -> list[Boot]:
        return [Boot(start + i, (v,), to_agent_s=10.3 if start + i == slow else 2.8) for i, v in enumerate(values)]

    groups = {"good": boots(0, 100, 102, 98, 101, 55, slow=4), "bad": boots(5, 80, 79, 81, 82)}
    assert stray_boots(groups) == {4: Stray.STRAYED}
    groups = {"good": boots(0, 100, 102, 98, 101, 55), "bad": boots(5, 80, 79, 81, 82)}
    assert stray_boots(groups) == {}, "a far boot that reached its agent in the usual time is evidence"


def test_a_pair_on_the_campaigns_pooled_noise_sees_on_3_3_boots_a_change_welch_cannot() -> None:
    def boots(level: float, offsets: list[float], start: int) -> list[Boot]:
        return [Boot(start + i, (level * math.exp(o),)) for i, o in enumerate(offsets)]

    a, b = boots(100, [0.08, -0.08, 0.0], 0), boots(85, [0.0, 0.08, -0.08], 3)
    welch = compare_boots(a, b)
    pooled = compare_pooled(a, b, 0.08**2 * 40, 40)  # 40 df of 8% boot noise from the campaign
    assert welch is not None and pooled is not None
    assert welch.p > 0.05 and pooled.p < 0.05 and pooled.change == pytest.approx(welch.change)
    assert pooled.df == 44 and "noise pooled over the campaign (df 44)" in pooled.describe()
    assert compare_pooled(a[:1], b, 0.08**2 * 40, 40) is None  # two boots a side at least


def test_the_drift_weighs_little_at_a_chance_slope_and_takes_over_as_its_t_grows() -> None:
    assert drift_weight(0.0, 40) == pytest.approx(0.05, abs=0.005)
    assert drift_weight(2.0, 40) < 0.5 < drift_weight(3.0, 40) < drift_weight(4.0, 40)
    assert drift_weight(4.0, 40) > 0.99


def test_a_step_on_a_level_host_is_judged_as_the_level_model_judges_it() -> None:
    # the references have no slope of their own: the drift's weight in the average is small,
    # so the odds are within that weight of the level model's, and a step 40 boots later that
    # reads like good is decided good by a first visit (rounds.VISIT_ERROR 0.1)
    offsets = [0.02, -0.02, -0.02, 0.02]
    good = [Boot(s, (100 * math.exp(o),)) for s, o in zip((0, 3, 4, 7), offsets)]
    bad = [Boot(s, (85 * math.exp(o),)) for s, o in zip((1, 2, 5, 6), offsets)]
    step = [Boot(40, (99.0,)), Boot(41, (101.0,))]
    averaged, level = step_odds(good, bad, step), step_odds(good, bad, step, drift=False)
    assert averaged is not None and level is not None
    weight = drift_weight(averaged.drift_t, 10)
    assert weight < 0.25
    assert abs(averaged.p_bad - level.p_bad) <= weight
    assert averaged.p_bad < 0.1


def test_the_noise_pooled_from_kept_group_parts_is_bit_for_bit_the_noise_pooled_from_the_boots():
    rng = random.Random(5)
    groups = {f"c{i}": [Boot(10 * i + j, tuple(rng.gauss(100, 8) for _ in range(3))) for j in range(rng.randint(0, 5))]
              for i in range(40)}
    parts = {key: boot_variance(bs) for key, bs in groups.items()}
    for left_out in [(), ("c1", "c2", "c3"), ("c0", "c39", "c17")]:
        from_boots = pooled_boot_variance([bs for key, bs in groups.items() if key not in left_out])
        assert pooled(part for key, part in parts.items() if key not in left_out) == from_boots  # ==, not approx
    assert boot_variance(groups["c0"][:1]) == (0.0, 0)


def test_a_boots_value_is_the_log_of_its_runs_mean_and_a_boot_with_another_run_is_another_value():
    boot = Boot(0, (90.0, 110.0))
    assert boot.value == math.log(100.0) and boot.value is boot.value
    assert Boot(0, (*boot.runs, 130.0)).value == math.log(110.0)
