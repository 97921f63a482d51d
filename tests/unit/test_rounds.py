"""Where the next boot goes (orchestrator.bisect.rounds) and the endpoint check's stop rule."""

from __future__ import annotations

import math
import random

import pytest

from orchestrator.bisect.posterior import NOISELESS, Dag, Standing, llr_of
from orchestrator.bisect.rounds import (
    NOMINATE,
    Act,
    Move,
    Target,
    Visit,
    ahead,
    next_boot,
    next_move,
    plan,
    visit,
)
from orchestrator.campaign.file import Threshold
from orchestrator.measure.endpoints import Next, check_endpoints, endpoints_next
from orchestrator.measure.pairs import EARLY_P, Pair, pair, settled
from orchestrator.stats import Boot, StepOdds, TwoSample

SEQ = iter(range(10**6))


def boots(level: float, n: int, sd: float = 0.05, seed: int = 0) -> list[Boot]:
    rng = random.Random(seed)
    return [Boot(next(SEQ), (level * math.exp(rng.gauss(0, sd)),)) for _ in range(n)]


def exact(level: float, offsets: list[float]) -> list[Boot]:
    return [Boot(next(SEQ), (level * math.exp(x),)) for x in offsets]


def line(n: int) -> Dag:
    names = [f"c{i}" for i in range(1, n + 1)]
    return Dag(names, {c: ([names[i - 1]] if i else []) for i, c in enumerate(names)})


def test_a_step_like_good_with_more_boots_than_bad_sends_the_next_boot_to_bad() -> None:
    good, bad = exact(100, [-0.05, 0.05, 0.0, 0.01]), exact(85, [-0.05, 0.05])
    step = exact(100, [0.02, -0.02, 0.03, -0.01, 0.0])
    assert next_boot(good, bad, step) is Target.BAD


def test_a_step_like_bad_with_more_boots_than_good_sends_the_next_boot_to_good() -> None:
    good, bad = exact(100, [-0.05, 0.05]), exact(85, [-0.05, 0.05, 0.0, 0.01])
    step = exact(85, [0.02, -0.02, 0.03, -0.01, 0.0])
    assert next_boot(good, bad, step) is Target.GOOD


def test_a_step_with_fewer_boots_than_the_references_gets_the_next_boot() -> None:
    good, bad = boots(100, 8, seed=1), boots(85, 8, seed=2)
    assert next_boot(good, bad, exact(100, [0.01, -0.01])) is Target.STEP


def test_references_short_of_two_boots_come_first() -> None:
    assert next_boot(exact(100, [0.0]), exact(85, [0.0, 0.01]), exact(90, [0.0])) is Target.GOOD


def odds(p_bad: float, fit_p: float = 0.5) -> StepOdds:
    return StepOdds(p_bad, 1.0 if p_bad > 0.5 else 0.0, 0.0, 0.0, 0.05, 10, fit_p)


def test_a_visit_ends_when_sure_and_at_its_cap_when_not() -> None:
    assert visit(odds(0.999), 3, 2, 8) is Visit.DECIDED
    assert visit(odds(0.999), 1, 2, 8) is Visit.MORE  # its minimum first
    assert visit(odds(0.7), 5, 2, 8) is Visit.MORE
    assert visit(odds(0.7), 8, 2, 8) is Visit.UNCLEAR
    assert visit(odds(0.999, fit_p=1e-5), 8, 2, 8) is Visit.APART
    assert visit(None, 8, 2, 8) is Visit.UNCLEAR


def test_a_confirmation_pair_shows_the_change_on_the_campaigns_noise_not_the_pairs_own() -> None:
    gap = math.log(0.5)
    parent, culprit = exact(100, [0.01, -0.01]), exact(50, [0.01, -0.01])
    state = pair(parent, culprit, gap, 0.03**2 * 40, 40, alpha=0.05)
    assert state.seen and state.log_bf > math.log(99) and state.boots == 2
    # no change: evidence against it, not seen
    same = pair(parent, exact(100, [0.0, 0.01]), gap, 0.03**2 * 40, 40, alpha=0.05)
    assert not same.seen and same.log_bf < -math.log(99)
    # a change the other way is not the one asked about
    assert not pair(parent, exact(200, [0.0, 0.01]), gap, 0.03**2 * 40, 40, alpha=0.05).seen
    # a tiny spread by chance on 2+2 boots: the campaign's 8% noise decides, not the pair's 0.01%
    tiny = pair(exact(100, [0.0, 0.0001]), exact(90, [0.0, 0.0001]), math.log(0.9), 0.08**2 * 40, 40, alpha=0.05)
    assert not tiny.seen and abs(tiny.log_bf) < 3


def state(log_bf: float, boots: int = 3, seen: bool = True, p: float = 0.01) -> Pair:
    return Pair(log_bf, boots, TwoSample(-0.15, -0.25, -0.05, p, boots, boots), seen)


def test_the_pairs_stop_when_both_are_seen_and_carry_the_candidate_to_the_campaigns_error() -> None:
    bound = math.log(99)
    # the prior from the search (a candidate holding 80% of the mass) and the two pairs' evidence add
    assert settled([state(1.6), state(1.7)], 8, 0.01, prior=math.log(4))
    assert not settled([state(1.0), state(1.0)], 8, 0.01, prior=math.log(4))
    # every pair must show the change: a pair's chance excess does not carry the other
    assert not settled([state(bound + 2), state(0.5, seen=False)], 8, 0.01)
    assert not settled([state(bound + 2), state(-0.5)], 8, 0.01)
    # the confirmation alone, with the revert to come: seen is enough for now
    assert settled([state(1.0)], 8, 0.01, to_come=1)
    assert not settled([state(1.0, seen=False)], 8, 0.01, to_come=1)
    # on 2+2 boots a pair answers only when its change is obvious (p < EARLY_P)
    assert not settled([state(1.0, 2)], 8, 0.01, to_come=1)
    assert settled([state(1.0, 2, p=EARLY_P / 2)], 8, 0.01, to_come=1)
    # against the candidate, or every pair at its cap: over
    assert settled([state(-bound - 0.1, seen=False)], 8, 0.01, to_come=1)
    assert settled([state(0.2, 8, False), state(0.1, 8, False)], 8, 0.01)


def check(good: list[Boot], bad: list[Boot], max_boots: int = 8):  # type: ignore[no-untyped-def]
    return check_endpoints(good, bad, "higher", Threshold("relative", -0.1), 3, max_boots, 0.05, 0.01)


def test_the_endpoint_check_starts_when_apart_with_a_usable_noise_estimate_or_surely_past_the_threshold() -> None:
    # -20% against -10%, apart, but on 2+2 boots the interval still reaches the threshold
    good, bad = exact(100, [0.02, -0.02]), exact(80, [0.02, -0.02])
    assert check(good, bad).ok and not check(good, bad).beyond
    assert endpoints_next(check(good, bad), 2, 16) is Next.MORE  # 2 df: not a usable noise estimate yet
    good, bad = exact(100, [0.02, -0.02, 0.0]), exact(80, [0.02, -0.02, 0.0])
    assert endpoints_next(check(good, bad), 3, 16) is Next.START
    # the whole interval past the threshold: more boots would not change the decision
    good, bad = exact(100, [0.01, -0.01]), exact(50, [0.01, -0.01])
    assert check(good, bad).beyond and endpoints_next(check(good, bad), 2, 16, early=True) is Next.START
    assert endpoints_next(check(good, bad), 2, 16) is Next.MORE  # a set bisection waits for the noise


def test_the_endpoint_check_refuses_bad_not_bad_only_on_enough_boots_even_when_sure() -> None:
    good, bad = exact(100, [0.01, -0.01, 0.0]), exact(110, [0.01, -0.01, 0.0])
    sure = check(good, bad)
    assert sure.problem == "bad_not_bad" and sure.sure and sure.suggested is None  # +7.5%..+12.5%: clear of -10%
    assert endpoints_next(sure, 3, 16) is Next.MORE
    good, bad = exact(100, [0.01, -0.01] * 4), exact(110, [0.01, -0.01] * 4)
    assert endpoints_next(check(good, bad), 8, 16) is Next.REFUSE


def test_a_change_not_told_apart_from_zero_is_refused_only_on_enough_boots_even_when_sure() -> None:
    good, bad = exact(100, [0.02, -0.02, 0.0]), exact(99, [0.02, -0.02, 0.0])
    flat = check(good, bad)  # -1%, 95% CI about -6%..+4%: clear of -10%, not significant
    assert flat.problem == "short_of_threshold" and flat.sure and flat.suggested is None
    assert endpoints_next(flat, 3, 16) is Next.MORE
    assert endpoints_next(flat, 8, 16) is Next.REFUSE


def test_a_change_surely_smaller_than_the_threshold_is_refused_at_once_with_the_threshold_that_would_bisect_it() -> None:
    good, bad = exact(100, [0.005, -0.005, 0.0]), exact(92, [0.005, -0.005, 0.0])
    short = check(good, bad)  # -8%, 95% CI -9.0%..-7.0%, clear of -10%
    assert short.problem == "short_of_threshold" and short.sure
    assert short.suggested == pytest.approx(-0.034)  # half of -7.0%, toward zero to 0.1%
    assert endpoints_next(short, 3, 16) is Next.REFUSE
    assert "`threshold: -3.4%` (or `threshold: measured`)" in short.message


def test_a_measured_threshold_is_half_the_near_bound_once_bad_is_significantly_worse_either_direction() -> None:
    measured = Threshold("measured", 0.0)
    good, bad = exact(100, [0.005, -0.005, 0.0]), exact(92, [0.005, -0.005, 0.0])
    down = check_endpoints(good, bad, "higher", measured, 3, 8, 0.05, 0.01)  # -8%, 95% CI -9.0%..-7.0%
    assert down.ok and down.threshold == Threshold("relative", -0.034)
    assert "threshold -3.4%, measured (half the bound" in down.message
    up = check_endpoints(bad, good, "lower", measured, 3, 8, 0.05, 0.01)  # +8.7%, 95% CI +7.5%..+9.9%
    assert up.ok and up.threshold is not None and up.threshold.value == pytest.approx(0.037)
    wrong_way = check_endpoints(bad, good, "higher", measured, 3, 8, 0.05, 0.01)
    assert wrong_way.problem == "bad_not_bad" and not wrong_way.ok
    noisy, noisier = exact(100, [0.1, -0.1, 0.0]), exact(95, [0.1, -0.1, 0.0])
    unclear = check_endpoints(noisy, noisier, "higher", measured, 3, 8, 0.05, 0.01)
    assert unclear.problem == "not_significant" and unclear.threshold == measured
    assert endpoints_next(unclear, 3, 16) is Next.MORE


def test_a_change_short_of_the_threshold_whose_interval_still_reaches_it_boots_on_and_starts_only_at_the_cap() -> None:
    good, bad = exact(100, [0.01, -0.01, 0.0]), exact(92, [0.01, -0.01, 0.0])
    maybe = check(good, bad)  # -8%, 95% CI -10.1%..-5.9%: significant, -10% not ruled out
    assert maybe.problem == "short_of_threshold" and maybe.reachable and not maybe.ok and maybe.suggested is None
    assert endpoints_next(maybe, 3, 16) is Next.MORE
    assert endpoints_next(maybe, 16, 16) is Next.START  # at the cap: the endpoints' sample may understate it


def test_a_bound_not_crossed_is_refused_at_the_cap_not_started() -> None:
    good, bad = exact(100, [0.01, -0.01, 0.0]), exact(92, [0.01, -0.01, 0.0])
    short = check_endpoints(good, bad, "higher", Threshold("absolute", 90.0), 3, 8, 0.05, 0.01)
    assert short.problem == "short_of_threshold" and not short.reachable and short.message.startswith("bad is not bad")
    assert endpoints_next(short, 3, 16) is Next.MORE
    assert endpoints_next(short, 16, 16) is Next.REFUSE


def test_the_endpoint_check_boots_on_while_not_significant_and_refuses_at_the_cap() -> None:
    good, bad = exact(100, [0.1, -0.1, 0.05]), exact(85, [0.1, -0.1, -0.05])
    assert check(good, bad).problem == "not_significant"
    assert endpoints_next(check(good, bad), 3, 16) is Next.MORE
    assert endpoints_next(check(good, bad), 16, 16) is Next.REFUSE


def test_a_round_picks_as_many_commits_as_slots_and_stops_on_a_culprit() -> None:
    dag = line(30)
    assert plan(dag, {}, 4, 0.01).picks == ("c6", "c12", "c18", "c24")
    done = plan(dag, {"c9": -NOISELESS, "c10": NOISELESS}, 4, 0.01)
    assert done.answer.kind is Standing.FOUND and done.answer.culprit == "c10" and done.picks == ()


def test_build_ahead_lists_the_next_picks_of_each_way_the_round_can_end() -> None:
    dag = line(31)
    outcomes = ahead(dag, {}, ["c16"], 1, 0.01)
    # c16 bad (16 of 31 culprits): c1..c16 left, next c8; good: c17..c31, next c23 (git's midpoints)
    assert [o for _p, o in outcomes] == [("c8",), ("c23",)]
    assert [p for p, _o in outcomes] == pytest.approx([16 / 31, 15 / 31])


def test_references_booted_only_before_a_late_step_get_the_next_boot_when_the_host_drifts() -> None:
    # 4 + 4 references at the start (seq 0..7), the step 40 boots later: a drift fitted over the
    # references extrapolates to the step, and a reference booted now pins it down
    offsets = [0.01, -0.01, -0.01, 0.01]  # symmetric in time: no slope of their own

    def refs(slope: float) -> tuple[list[Boot], list[Boot]]:
        good = [Boot(s, (100 * math.exp(o + slope * s),)) for s, o in zip((0, 3, 4, 7), offsets)]
        bad = [Boot(s, (85 * math.exp(o + slope * s),)) for s, o in zip((1, 2, 5, 6), offsets)]
        return good, bad

    step = [Boot(48, (100 * math.exp(0.01),)), Boot(49, (100 * math.exp(-0.01),))]
    good, bad = refs(-0.01)  # 1% a boot: the drift model outweighs a level host
    assert next_boot(good, bad, step, drift=True) in (Target.GOOD, Target.BAD)
    assert next_boot(good, bad, step, drift=False) is Target.STEP  # the means alone: the step has fewest
    # a level host: the drift weighs little (stats.drift_weight), and the step has fewest boots
    good, bad = refs(0.0)
    assert next_boot(good, bad, step, drift=True) is Target.STEP


def test_a_candidate_is_confirmed_at_the_nomination_mass_and_answered_once_confirmed_and_sure() -> None:
    dag = line(16)
    around = {"c7": llr_of(0.001), "c8": llr_of(0.95), "c9": llr_of(1 - 1e-6)}  # c8 holds 0.95 of the mass
    first = next_move(dag, around, 1, 0.01)
    assert first.act is Act.CONFIRM and first.culprit == "c8" and 1 - NOMINATE <= first.mass < 0.99
    # confirmed, but the confirmation's evidence left it under 0.99: the search goes on there
    weak = next_move(dag, around, 1, 0.01, point={"c8": 0.5}, confirmed={"c8": 1})
    assert weak.act is Act.SEARCH and weak.culprit == "c8" and weak.picks
    done = next_move(dag, around, 1, 0.01, point={"c8": math.log(99)}, confirmed={"c8": 1})
    assert done.act is Act.DONE and done.culprit == "c8" and done.mass >= 0.99
    # the confirmation spoke against it: its neighbour c9 now holds 0.75 and is nominated (at
    # 1 - NOMINATE = 0.6); with a bar of 0.8 none is, and the search goes back to c8
    against = next_move(dag, around, 1, 0.01, point={"c8": -math.log(99)}, confirmed={"c8": 1})
    assert against.act is Act.CONFIRM and against.culprit == "c9" and 0.6 <= against.mass < 0.8
    stricter = next_move(dag, around, 1, 0.01, point={"c8": -math.log(99)}, confirmed={"c8": 1}, nominate=0.2)
    assert stricter.act is Act.SEARCH and stricter.culprit == "" and stricter.picks == ("c8",)
    # a flat posterior: search, at git bisect's midpoint
    assert next_move(dag, {}, 1, 0.01) == Move(Act.SEARCH, picks=("c8",), mass=pytest.approx(1 / 16))


def test_only_skipped_commits_left_is_an_answer_of_its_own() -> None:
    dag = line(8)
    move = next_move(dag, {"c4": -NOISELESS, "c6": NOISELESS}, 1, 0.01, untestable={"c5"})
    assert move.act is Act.ONLY_SKIPPED and move.candidates == ("c5", "c6")


def test_the_confirmation_and_the_revert_settle_together_on_their_summed_evidence() -> None:
    half = math.log(99) / 2 + 0.1
    assert settled([state(half), state(half)], cap=8, error=0.01)
    assert not settled([state(half)], cap=8, error=0.01)
    assert settled([state(-half, 3, False), state(-half, 3, False)], cap=8, error=0.01)  # against it, too
    assert not settled([state(half, 8), state(-half, 4, False)], cap=8, error=0.01)
    assert settled([state(half, 8), state(-half, 8, False)], cap=8, error=0.01)  # every pair at its cap


def test_the_endpoint_check_starts_at_the_cap_when_a_visit_and_a_revisit_reach_the_noise() -> None:
    offsets = [0.15, -0.15, 0.1, -0.1] * 2
    good, bad = exact(100, offsets), exact(85, offsets)  # apart on 8 + 8 boots; a step needs 7
    noisy = check(good, bad, max_boots=4)
    assert noisy.problem == "too_noisy" and noisy.boots_needed == 7
    assert endpoints_next(noisy, 6, 8) is Next.MORE
    assert endpoints_next(noisy, 8, 8) is Next.START  # 7 <= twice max_boots_per_commit
    far = check(good, bad, max_boots=2)
    assert endpoints_next(far, 8, 4) is Next.REFUSE  # 7 > twice max_boots_per_commit


class PlannedJudge:
    """The endpoints' boots, as many of each side's planned values as asked for."""

    def __init__(self, good: list[Boot], bad: list[Boot]) -> None:
        self.plan, self.have = {"g": good, "b": bad}, 0

    def interleave(self, keys: list[str], need: int, since: int = 0) -> None:
        self.have = max(self.have, need)

    def evidence(self) -> dict[str, list[Boot]]:
        return {k: v[:self.have] for k, v in self.plan.items()}


def test_an_endpoint_line_before_the_check_decides_says_it_is_interim_and_the_last_says_what_was_decided() -> None:
    from orchestrator.measure.endpoints import measure_endpoints

    # bad looks not bad on 2+2 boots (+7.5%, but that is not refused before MIN_REFUSAL_BOOTS), then is
    good = exact(100, [0.01, -0.01, 0.0, 0.01, -0.01, 0.0, 0.01, -0.01])
    bad = exact(110, [0.01, -0.01]) + exact(60, [0.0, 0.01, -0.01, 0.0, 0.01, -0.01])
    lines: list[str] = []
    measure_endpoints(PlannedJudge(good, bad), "g", "b", "higher", Threshold("relative", -0.10), 1, 2, 8, 0.05,
                      0.05, lambda c: lines.append(c.message), early=True)
    assert len(lines) >= 2
    assert lines[0].startswith("after 2+2 boots: not yet decided, both booted again (so far: bad is not bad")
    assert not lines[-1].startswith("after ") and "not bad" not in lines[-1]
