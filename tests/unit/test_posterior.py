"""The probabilistic bisection's posterior, picks and stop rule (orchestrator.bisect.posterior)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.bisect.posterior import (
    NOISELESS,
    Dag,
    Mark,
    Standing,
    answer,
    bisect_log,
    llr_of,
    pick,
    posterior,
)


def line(n: int) -> Dag:
    names = [f"c{i}" for i in range(1, n + 1)]
    return Dag(names, {c: ([names[i - 1]] if i else []) for i, c in enumerate(names)})


def git_midpoint(alive: list[int]) -> int:
    """git bisect on a line of candidates (oldest first, the last one known bad): the first
    commit, oldest first, whose count of alive ancestors-or-self w has |2w - nr| <= 1, else
    the first with the largest min(w, nr - w) (bisect.c: halfway, best_bisection)."""
    nr = len(alive)
    for w, c in enumerate(alive, 1):
        if abs(2 * w - nr) <= 1:
            return c
    return max(alive, key=lambda c: min(alive.index(c) + 1, nr - alive.index(c) - 1))


@pytest.mark.parametrize("n", [2, 3, 7, 15, 24, 100])
def test_flat_prior_and_noiseless_answers_pick_what_git_bisect_picks_on_a_line(n: int) -> None:
    dag = line(n)
    for culprit in range(n):
        evidence: dict[str, float] = {}
        alive = list(range(n))
        steps = 0
        while True:
            post = posterior(dag, evidence)
            found = answer(post, 0.01)
            if found.kind is Standing.FOUND:
                assert found.culprit == dag.commits[culprit] and len(alive) == 1
                break
            [mine] = pick(post, 1)
            expected = git_midpoint(alive)
            assert mine == dag.commits[expected]
            bad = expected >= culprit
            evidence[mine] = NOISELESS if bad else -NOISELESS
            alive = [c for c in alive if (c <= expected) == bad]
            steps += 1
        assert steps <= math.ceil(math.log2(n)) + 1


def merges() -> Dag:
    """m0 - a1 - a2 - M1(m0.., a2, b1) - M2; b1 branches from m0; c1 on M1 then merged: a merge-heavy
    history whose candidates are everything but the good root g."""
    parents = {"m0": ["g"], "a1": ["m0"], "a2": ["a1"], "b1": ["m0"], "b2": ["b1"], "M1": ["a2", "b2"],
               "c1": ["M1"], "d1": ["m0"], "M2": ["c1", "d1"], "e1": ["M2"]}
    order = ["m0", "a1", "b1", "a2", "b2", "M1", "c1", "d1", "M2", "e1"]
    return Dag(order, parents)


def test_on_a_merge_heavy_history_a_commit_is_bad_when_the_culprit_is_its_ancestor() -> None:
    dag = merges()
    assert not dag.line
    assert dag.is_ancestor("b1", "M1") and dag.is_ancestor("b1", "e1") and not dag.is_ancestor("b1", "a2")
    assert not dag.is_ancestor("d1", "M1") and dag.is_ancestor("d1", "M2")
    post = posterior(dag, {})
    # flat: M1's bad side is m0 a1 b1 a2 b2 M1, 6 of 10
    assert post.p_bad("M1") == pytest.approx(0.6)
    assert post.p_bad("d1") == pytest.approx(0.2)


@pytest.mark.parametrize("culprit", ["m0", "a1", "b1", "a2", "b2", "M1", "c1", "d1", "M2", "e1"])
def test_noiseless_bisection_of_a_merge_heavy_history_finds_every_culprit(culprit: str) -> None:
    dag = merges()
    evidence: dict[str, float] = {}
    for _ in range(len(dag)):
        post = posterior(dag, evidence)
        found = answer(post, 0.01)
        if found.kind is Standing.FOUND:
            assert found.culprit == culprit
            assert len(evidence) <= 5  # log2(10) rounded up, + 1 for the DAG's uneven splits
            return
        [x] = pick(post, 1)
        assert x not in evidence
        evidence[x] = NOISELESS if dag.is_ancestor(culprit, x) else -NOISELESS
    pytest.fail("no answer")


def test_a_skipped_commit_carries_no_evidence_and_is_not_the_answer_alone() -> None:
    dag = line(8)
    # culprit c5, c5 cannot be tested: c4 good, c6 bad leave c5 and c6 together
    evidence = {"c4": -NOISELESS, "c6": NOISELESS}
    post = posterior(dag, evidence)
    assert answer(post, 0.01).kind is Standing.SEARCHING  # c5 could still be told from c6 by testing c5
    assert pick(post, 1) == ["c5"]
    assert pick(post, 1, untestable={"c5"}) == []
    found = answer(post, 0.01, untestable={"c5"})
    assert found.kind is Standing.ONLY_SKIPPED and found.candidates == ("c5", "c6")


def test_two_slots_split_a_flat_line_into_thirds_and_four_into_fifths() -> None:
    dag = line(30)
    post = posterior(dag, {})
    assert pick(post, 2) == ["c10", "c20"]
    assert pick(post, 4) == ["c6", "c12", "c18", "c24"]
    # quantiles of a posterior that is not flat: all the mass in c21..c30
    post = posterior(dag, {"c20": -NOISELESS})
    assert pick(post, 4) == ["c22", "c24", "c26", "c28"]


def test_a_commit_in_flight_on_another_slot_is_not_picked_again() -> None:
    post = posterior(line(30), {})
    assert "c15" not in pick(post, 1, busy={"c15"})


def test_a_slot_refilled_as_it_frees_takes_the_part_the_commits_in_flight_leave() -> None:
    post = posterior(line(29), {})
    # two slots: c10 (a third of the mass on its bad side) is in flight; the free slot takes the
    # other third, not the middle
    assert pick(post, 1, busy={"c10"}, total=2) == ["c19"]
    assert pick(post, 1, busy={"c10"}) == ["c14"]  # without `total`: the middle (a tie: the older)
    # four slots, two in flight near their quantiles: the free ones take the two left
    assert pick(post, 2, busy={"c6", "c18"}, total=4) == ["c12", "c23"]


def test_a_built_kernel_near_the_best_split_is_picked_instead_of_building_another() -> None:
    post = posterior(line(30), {})
    assert pick(post, 1) == ["c15"]
    assert pick(post, 1, ready={"c14"}) == ["c14"]  # 14/30 on its bad side: within READY_SLACK
    assert pick(post, 1, ready={"c12"}) == ["c15"]  # 12/30: too far from the half
    assert pick(post, 2, ready={"c11", "c19"}) == ["c11", "c19"]  # near the thirds (c10, c20)


def test_an_ambiguous_commit_is_picked_again_and_its_later_evidence_replaces_the_first() -> None:
    dag = line(16)
    around = {"c7": llr_of(1e-6), "c9": llr_of(1 - 1e-6)}
    post = posterior(dag, {**around, "c8": llr_of(0.6)})
    assert answer(post, 0.01).kind is Standing.SEARCHING
    assert pick(post, 1) == ["c8"]  # the culprit is c8 or c9: c8 is revisited, not given up
    assert answer(posterior(dag, {**around, "c8": llr_of(0.9999)}), 0.01).culprit == "c8"
    sure = {"c8": llr_of(0.999)}  # its llr from all its boots now: the first look is not added again
    assert posterior(dag, sure).p_bad("c8") == pytest.approx(posterior(dag, {"c8": math.log(999)}).p_bad("c8"))
    assert pick(posterior(dag, sure), 1) != ["c8"]


def test_noisy_evidence_is_overruled_by_more_evidence_against_it() -> None:
    dag = line(16)
    wrong = {"c8": llr_of(0.95)}  # c8 looked bad; the culprit is c12
    against = {"c9": llr_of(0.001), "c10": llr_of(0.001), "c11": llr_of(0.001), "c12": llr_of(0.999)}
    post = posterior(dag, {**wrong, **against})
    assert answer(post, 0.01).culprit == "c12"


def test_llr_of_a_step_is_its_log_odds_with_the_half_prior_taken_out_and_clipped() -> None:
    assert llr_of(0.5) == 0.0
    assert llr_of(0.9) == pytest.approx(math.log(9))
    assert llr_of(1.0) == pytest.approx(math.log(1e6))
    assert llr_of(0.0) == pytest.approx(-math.log(1e6))


def test_the_stop_rule_needs_the_culprit_to_hold_one_minus_error_of_the_mass() -> None:
    dag = line(8)
    evidence = {"c3": -NOISELESS, "c4": llr_of(0.02), "c5": llr_of(0.98), "c6": NOISELESS}
    post = posterior(dag, evidence)  # c4 : c5 : c6 = 1 : 49 : 1
    assert post.of("c5") == pytest.approx(49 / 51)
    assert answer(post, 0.05).culprit == "c5"
    assert answer(post, 0.01).kind is Standing.SEARCHING
    # the confirmation's evidence counts for the culprit alone
    post = posterior(dag, evidence, point={"c5": math.log(100)})
    assert answer(post, 0.01).culprit == "c5"


def test_a_commit_with_its_parents_image_cannot_be_the_culprit() -> None:
    post = posterior(line(8), {"c4": -NOISELESS, "c6": NOISELESS}, impossible={"c5"})
    assert answer(post, 0.01).culprit == "c6"


def test_rev_list_output_becomes_the_dag_oldest_first_and_first_parent_drops_merged_sides() -> None:
    text = "M b a\nb r\na r\nr g\n"
    dag = Dag.from_rev_list(text)
    assert dag.commits == ("r", "a", "b", "M") and not dag.line
    assert Dag.from_rev_list("M a\na r\nr g\n", first_parent=True).line


def test_the_history_is_a_git_bisect_log_with_each_commits_latest_mark() -> None:
    log = bisect_log("g" * 40, "b" * 40, [("1" * 40, Mark.GOOD), ("2" * 40, Mark.SKIP), ("1" * 40, Mark.BAD)])
    assert log.splitlines() == [
        "git bisect start", f"# bad: [{'b' * 40}]", f"git bisect bad {'b' * 40}", f"# good: [{'g' * 40}]",
        f"git bisect good {'g' * 40}", f"# bad: [{'1' * 40}]", f"git bisect bad {'1' * 40}",
        f"# skip: [{'2' * 40}]", f"git bisect skip {'2' * 40}"]


def random_dag(seed: int, n: int) -> tuple[list[str], dict[str, list[str]]]:
    """n commits oldest first: mostly one parent (often the one before), some merges of two or
    three, some roots (parents outside the candidates), branches from older commits."""
    import random

    rng = random.Random(seed)
    names = [f"x{i}" for i in range(n)]
    parents: dict[str, list[str]] = {}
    for i, c in enumerate(names):
        r = rng.random()
        if i == 0 or r < 0.05:
            parents[c] = ["outside"] if rng.random() < 0.5 else []
        elif r < 0.3 and i > 1:
            parents[c] = [names[i - 1]] + rng.sample(names[:i - 1], min(i - 1, rng.choice([1, 1, 2])))
        elif r < 0.5:
            parents[c] = [names[rng.randrange(i)]]
        else:
            parents[c] = [names[i - 1]]
    return names, parents


def brute(names: list[str], parents: dict[str, list[str]], evidence: dict[str, float],
          untestable: set[str]) -> tuple[dict[str, set[str]], list[float], list[float], list[list[int]]]:
    """Ancestry as sets, the posterior and the classes of untestable culprits by their
    definitions (the oracle for the Dag's segments)."""
    anc: dict[str, set[str]] = {}
    for c in names:
        anc[c] = {c}.union(*(anc[p] for p in parents[c] if p in anc))
    log = [sum(v for x, v in evidence.items() if c in anc[x]) for c in names]
    top = max(log)
    w = [math.exp(x - top) for x in log]
    w = [x / sum(w) for x in w]
    bad = [sum(w[j] for j, a in enumerate(names) if a in anc[c]) for c in names]
    testable = [t for t in names[:-1] if t not in untestable]
    groups: dict[frozenset[str], list[int]] = {}
    for j, c in enumerate(names):
        groups.setdefault(frozenset(t for t in testable if c in anc[t]), []).append(j)
    return anc, w, bad, list(groups.values())


@pytest.mark.parametrize("seed", range(40))
def test_the_dags_segments_give_the_posterior_picks_and_classes_that_sets_of_ancestors_give(seed: int) -> None:
    import random

    from orchestrator.bisect.posterior import Posterior, classes

    rng = random.Random(seed)
    names, parents = random_dag(seed, rng.randrange(2, 60))
    dag = Dag(names, parents)
    measured = rng.sample(names, rng.randrange(0, min(12, len(names)) + 1))
    evidence = {c: rng.choice([NOISELESS, -NOISELESS, llr_of(rng.random())]) for c in measured}
    untestable = set(rng.sample(names, rng.randrange(0, min(6, len(names)) + 1)))
    anc, w, bad, groups = brute(names, parents, evidence, untestable)
    for i, c in enumerate(names):
        assert set(np.flatnonzero(dag.ancestry(i))) == {names.index(a) for a in anc[c]}
        assert set(np.flatnonzero(dag.descent(i))) == {j for j, x in enumerate(names) if c in anc[x]}
        assert all(dag.is_ancestor(a, c) == (a in anc[c]) for a in names)
    post = posterior(dag, evidence)
    assert post.weights == pytest.approx(w, rel=1e-9, abs=1e-300)
    assert post.bad == pytest.approx(bad, rel=1e-9, abs=1e-12)
    label = classes(dag, untestable)
    assert sorted(sorted(np.flatnonzero(label == k).tolist()) for k in set(label.tolist())) == sorted(groups)
    oracle = Posterior(dag, np.array(w), np.array(bad))
    for slots in (1, 2, 4):
        assert pick(post, slots, untestable) == pick(oracle, slots, untestable)
    best = max(groups, key=lambda g: (sum(w[j] for j in g), -min(g)))
    found, mass = answer(post, 0.5, untestable), sum(w[j] for j in best)
    assert found.mass == pytest.approx(mass, rel=1e-9)
    if mass >= 0.5 + 1e-9:
        assert set(found.candidates) == {names[j] for j in best}
    elif mass < 0.5 - 1e-9:
        assert found.kind is Standing.SEARCHING
