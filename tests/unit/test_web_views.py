"""The dashboard's pure views (orchestrator/web/views.py): the bisect log's marks, the estimate
of what is left, durations, decisions with their boots as the report has them, the build under way."""

from __future__ import annotations

import datetime as dt

from orchestrator.decisions import Basis, Decided, Role
from orchestrator.report.bisection import steps_of
from orchestrator.report.estimate import Estimate, bisect_estimate, fixed_estimate, marks, steps_left
from orchestrator.stats import Boot
from orchestrator.web.views import (
    Building,
    building,
    decision_views,
    duration,
    eta_seconds,
    host_boots,
    seconds_per_boot,
    short,
)

A, B, C, D, E = ("a" * 40, "b" * 40, "c" * 40, "d" * 40, "e" * 40)
LOG = f"""# bad: [{B}] net: <script>alert(1)</script>
# good: [{A}] c1
git bisect start '{B}' '{A}'
# good: [{C}] c3 [x] y
git bisect good {C}
# skip: [{D}] c5
git bisect skip {D}
# bad: [{E}] c4
git bisect bad {E}
"""


def test_marks_of_a_bisect_log_are_its_last_bad_its_goods_skips_and_every_subject():
    m = marks(LOG)
    assert (m.bad, m.goods, m.skips, m.found) == (E, (A, C), (D,), "")
    assert m.subjects == {B: "net: <script>alert(1)</script>", A: "c1", C: "c3 [x] y", D: "c5", E: "c4"}


def test_marks_name_the_first_bad_commit_once_git_found_it():
    assert marks(LOG + f"# first bad commit: [{E}] c4\n").found == E


def test_an_empty_log_has_no_marks():
    assert marks("") == marks("garbage\n# nothing: here")
    assert marks("").bad == "" and marks("").goods == ()


def test_steps_left_halve_the_commits_left_to_one():
    assert [steps_left(n) for n in (0, 1, 2, 3, 4, 11, 1024, 1025)] == [0, 0, 1, 2, 2, 4, 10, 11]


def test_seconds_per_boot_is_the_median_gap_so_a_long_pause_does_not_count():
    t0 = dt.datetime(2026, 1, 1)
    started = [t0 + dt.timedelta(seconds=s) for s in (0, 60, 120, 7320, 7380)]
    assert seconds_per_boot(started) == 60
    assert seconds_per_boot(started[:1]) is None


def _d(commit: str, role: Role, verdict: str = "good") -> Decided:
    return Decided(commit, role, verdict, "because", 0.9, 4)


def test_before_the_endpoints_are_decided_their_boots_the_steps_and_the_confirmation_are_left():
    est = bisect_estimate([], [A, B], boots_per_commit=2, commits_left=11)
    # endpoints: 4 - 2 = 2; 4 steps x 2 boots; confirmation and revert: 2 pairs of 4 boots
    assert est.boots_left == 2 + 8 + 8
    assert "~4 steps left of 11 commits" in est.basis
    assert est.fraction == 2 / (2 + 18)
    longer = bisect_estimate([], [A, B] * 5, boots_per_commit=2, commits_left=11)
    assert longer.boots_left == 2 + 8 + 8, "undecided after their first boots: at least one more of each"


def test_after_steps_the_boots_a_step_took_so_far_count():
    decided = [_d(A, Role.GOOD), _d(B, Role.BAD), _d(C, Role.STEP), _d(D, Role.STEP, "bad")]
    boots = [A] * 8 + [B] * 8 + [C] * 3 + [D] * 3
    est = bisect_estimate(decided, boots, boots_per_commit=2, commits_left=3)
    assert est.boots_left == 2 * 3 + 8
    decided += [_d(D, Role.CONFIRM, "confirmed")]
    assert bisect_estimate(decided, boots, 2, 1).boots_left == 4, "one pair left, no step"


def test_without_a_readable_repository_there_is_no_estimate_and_it_says_why():
    est = bisect_estimate([], [A], 2, None)
    assert est.boots_left is None and "cannot be read" in est.basis
    assert eta_seconds(est, 30.0) is None


def test_a_fixed_plan_counts_boots_left_and_the_fraction_done():
    assert fixed_estimate(8, 2, "verification") == Estimate(6, "6 of 8 verification boots left", 0.25)
    assert fixed_estimate(8, 9, "comparison").boots_left == 0


def test_eta_is_boots_left_times_seconds_a_boot():
    assert eta_seconds(Estimate(10, ""), 42.0) == 420.0
    assert eta_seconds(Estimate(10, ""), None) is None


def test_durations_read_as_seconds_minutes_or_hours():
    assert [duration(s) for s in (None, 0, 40.4, 89, 90, 3599, 3600, 3 * 3600 + 5 * 60 + 59)] == [
        "-", "0 s", "40 s", "89 s", "2 min", "60 min", "1 h 00 min", "3 h 05 min"]


def test_a_commit_is_shown_by_twelve_digits_and_a_kernel_file_by_its_name():
    assert short(A) == "a" * 12
    assert short("/srv/kernels/bzImage-6.1") == "bzImage-6.1"


def test_decisions_are_the_reports_rows_with_their_boots_runs_median_of_boot_means_and_subject():
    decided = [_d(A, Role.GOOD), Decided(B, Role.STEP, "skip", "build failed", 0.0, 0, Basis.BUILD_FAILED),
               Decided("", Role.HOST, "moved", "host h1 failed", 0.0, 0, Basis.MOVED),
               Decided(A, Role.CONFIRM, "measuring", "", 0.0, 0, Basis.MEASURING),
               Decided(A, Role.STEP, "good", "same image", 0.0, 0, Basis.INHERITED, inherited_from=C)]
    boots = {A: [Boot(0, (1.0, 3.0)), Boot(1, (6.0,))]}
    views = decision_views(steps_of(decided, boots, {A: "h1"}, lambda sha: {A: "<b>c1</b>"}.get(sha, "")))
    assert [(v.n, v.commit, v.subject, v.boots, v.runs, v.median, v.backed_by) for v in views] == [
        (1, "a" * 12, "<b>c1</b>", 2, 3, 4.0, "measured"),  # the median of the boots' means 2 and 6
        (2, "b" * 12, "", 0, 0, None, "build_failed"),
        (3, "a" * 12, "<b>c1</b>", 0, 0, None, "inherited")], "no host row, no measuring row, no boots inherited"


def test_a_build_started_after_the_last_boot_and_not_ended_is_what_the_campaign_does():
    t = [dt.datetime(2026, 11, 27, 10, m) for m in range(6)]
    assert building([(A, "building", t[0]), (A, "ok", t[1]), (B, "building", t[3])], t[2]) == Building(B, t[3])
    assert building([(A, "building", t[0]), (A, "ok", t[1])], t[2]) is None, "built: the guest is what runs"
    assert building([(B, "building", t[1])], t[2]) is None, "a guest began after it: measured ahead"
    assert building([(A, "building", t[0]), (B, "building", t[1]), (A, "failed", t[2])], None) == Building(B, t[1])


def test_boots_are_counted_by_host_and_status():
    counted = host_boots([("h1", "ok"), ("h1", "ok"), ("", "failed"), ("h1", "lost")])
    assert [(h.host, h.status, h.boots) for h in counted] == [("-", "failed", 1), ("h1", "lost", 1), ("h1", "ok", 2)]


def test_the_range_is_said_with_its_size_the_steps_taken_and_left_and_nothing_without_one():
    decided = [_d(A, Role.GOOD), _d(B, Role.BAD), _d(C, Role.STEP), _d(D, Role.STEP, "bad")]
    running = bisect_estimate(decided, [A, B, C, D], 2, commits_left=40, range_commits=10_000)
    assert running.range_words() == "10,000 commits from good to bad; 2 steps taken, ~6 left"
    assert bisect_estimate(decided, [A, B], 2, 1, 10_000).range_words() == "10,000 commits from good to bad; 2 steps taken"
    assert bisect_estimate([], [], 2, None, None).range_words() == ""
    assert fixed_estimate(8, 2, "verification").range_words() == ""
