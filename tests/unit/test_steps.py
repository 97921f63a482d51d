"""A regression in several steps (orchestrator/bisect/steps.py): the shares, when the search for
more steps ends, which step crossed the threshold, and how results, campaign files, reports and
mail carry them."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import math

import pytest

from orchestrator.bisect.engine import Outcome
from orchestrator.bisect.steps import (
    Share,
    combined,
    in_history,
    mark_crossing,
    partial_line,
    reverted,
    settles_by,
    share,
    stop,
    together,
    worth_searching,
)
from orchestrator.campaign.file import Campaign, Steps, parse_campaign
from orchestrator.decisions import PairVerdict
from orchestrator.errors import UserError
from orchestrator.kinds.bisect_kind import summary
from orchestrator.notify.message import Ended, build
from orchestrator.report.bisection import BisectReport, Part, render_markdown
from orchestrator.report.bisection_html import render_html
from orchestrator.results import BisectOutcome, BisectResult, PairResult, RegressionStep, StepsEnd
from orchestrator.stats import TwoSample


def two(change: float, se: float, df: float = 100) -> TwoSample:
    return TwoSample(change, change, change, 0.01, 5, 5, se, df)


GAP = two(math.expm1(math.log(0.84) + math.log(0.78)), 0.01)  # -16% then -22%


def test_a_step_carries_its_log_change_over_the_gap_with_an_interval_from_both_errors():
    part = share(two(-0.22, 0.02), GAP)
    assert part.value == pytest.approx(math.log(0.78) / math.log(0.84 * 0.78))
    assert part.low < part.value < part.high and part.partial
    wider = share(two(-0.22, 0.04), GAP)
    assert wider.high - wider.low > part.high - part.low


def test_a_culprit_carrying_all_of_it_is_not_partial_and_ends_the_search_at_once():
    whole = share(two(GAP.change, 0.03), GAP)
    assert not whole.partial and stop([whole], 0.2) is StepsEnd.ALL


def test_the_search_goes_on_until_the_steps_add_up_or_what_is_left_is_small():
    first, second = share(two(-0.22, 0.01), GAP), share(two(-0.16, 0.01), GAP)
    assert stop([second], 0.2) is None
    assert stop([first, second], 0.2) is StepsEnd.ADD_UP
    assert stop([first], 0.5) is StepsEnd.SMALL  # 1 - 0.59 < 0.5


def test_the_share_check_boots_on_only_while_more_boots_could_settle_the_share() -> None:
    # a -15% step at 8% boot noise on 3+3 boots: about all of the gap, far too wide to tell
    wide = Share(1.0, 0.35, 0.3, 1.7, 4)
    assert not settles_by(wide, 3, 8, 0.2)
    # 85% with a narrower interval: at 8 boots a side it may exclude 100%
    near = Share(0.85, 0.08, 0.69, 1.01, 8)
    assert settles_by(near, 3, 8, 0.2)
    # at the cap nothing narrows any more
    assert not settles_by(near, 8, 8, 0.2)


def test_a_range_is_searched_only_when_it_surely_carries_something_and_may_carry_min_share():
    assert worth_searching(Share(0.3, 0.05, 0.2, 0.4, 50), 0.2)
    assert not worth_searching(Share(0.1, 0.05, -0.01, 0.2, 50), 0.05)  # may be nothing
    assert not worth_searching(Share(0.05, 0.01, 0.03, 0.07, 50), 0.2)  # surely below min_share


def test_the_revert_and_the_pair_combine_into_a_narrower_share():
    pair = share(two(-0.22, 0.03), GAP)
    back = reverted(two(math.expm1(-math.log(0.78)), 0.03), GAP)
    assert back.value == pytest.approx(pair.value)
    both = combined(pair, back)
    assert both.value == pytest.approx(pair.value) and both.high - both.low < pair.high - pair.low
    assert together([pair, pair]).value == pytest.approx(2 * pair.value)


def step(commit: str, share_: float = 0.5, crossed: bool = False, alone: bool = False) -> RegressionStep:
    return RegressionStep(commit * 40, "p" * 40, share_, share_ - 0.1, share_ + 0.1, -0.16, crossed, alone)


def test_steps_are_put_in_history_order_and_the_first_reaching_the_threshold_crossed_it():
    order = "abc"
    steps = in_history([step("c"), step("a"), step("b")], lambda x, y: order.index(x[0]) <= order.index(y[0]))
    assert [s.commit[0] for s in steps] == ["a", "b", "c"]
    marked = mark_crossing(steps, [-0.10, -0.30, -0.40], -0.25, "higher")
    assert [s.crossed for s in marked] == [False, True, False]
    assert [s.crossed for s in mark_crossing(steps, [0.1, 0.2, 0.3], 0.15, "lower")] == [False, True, False]


def test_the_answer_line_says_the_share_and_where_bad_is_with_the_culprit_reverted():
    line = partial_line("f" * 40, Share(0.58, 0.05, 0.48, 0.68, 40), -0.16)
    assert line == ("ffffffffffff carries about 58% (95% CI 48%..68%) of the regression; bad with it reverted is "
                    "still -16% from good")


def test_a_result_with_steps_round_trips_and_its_status_line_and_mail_lines_list_them():
    steps = (step("a", 0.4, alone=False), step("b", 0.6, crossed=True, alone=True))
    result = BisectResult(BisectOutcome.FOUND, "b" * 40, "p" * 40, confidence=0.99, confidence_text="confidence 99.0%",
                          steps=steps, steps_end=StepsEnd.ADD_UP, partial="bbbbbbbbbbbb carries about 60% ...",
                          reverted=PairResult(PairVerdict.RESTORES, "restores"))
    back = BisectResult.from_dict(result.to_dict())
    assert back == result
    assert back.line() == "bbbbbbbbbbbb (confidence 99.0%); 2 steps: aaaaaaaaaaaa 40%, bbbbbbbbbbbb 60%"
    lines = back.regression_steps()
    assert lines[0].startswith("bbbbbbbbbbbb carries about 60%")
    assert lines[1].startswith("Step 1: aaaaaaaaaaaa -16.0% against its parent, 40% of the regression (95% CI 30%..50%)")
    assert lines[1].endswith("below the threshold alone") and lines[2].endswith("; crossed the threshold")
    assert BisectResult.from_dict({"outcome": "found", "culprit": "c"}).steps == ()  # stored before steps


def test_the_mail_head_lists_the_steps_within_its_columns():
    steps = (step("a", 0.4), step("b", 0.6, crossed=True, alone=True))
    result = BisectResult(BisectOutcome.FOUND, "b" * 40, "p" * 40, steps=steps, steps_end=StepsEnd.ADD_UP,
                          partial="bbbbbbbbbbbb carries about 60% (95% CI 50%..70%) of the regression; bad with it "
                                  "reverted is still -16% from good")
    e = Ended(12, "nightly", "bisect", "done", result, "block: use bfq", "# report\n")
    msg = email.message_from_bytes(build(e, "v@example.org", ("p@example.org",),
                                         dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)).as_bytes(),
                                   policy=email.policy.default)
    head = msg.get_body(("plain",)).get_content().split("-" * 72)[0]
    assert "carries about 60%" in head and "Step 1: aaaaaaaaaaaa" in head and "crossed the threshold" in head
    assert all(len(line) <= 78 for line in head.splitlines())


def test_the_report_lists_every_step_oldest_first_and_the_one_that_crossed():
    parts = (Part(step("a", 0.4), "virtio_scsi: wait"), Part(step("b", 0.6, crossed=True, alone=True), "bfq"))
    r = BisectReport("t", "done", "iops", "higher", "found", None, None, None, (), (), (), "", {},
                     partial="bbbbbbbbbbbb carries about 60%", parts=parts, steps_end="add_up",
                     reverted="revert restores the metric: bad with all 2 steps reverted")
    md = render_markdown(r)
    assert "The regression came in 2 steps" in md and md.index("1. aaaaaaaaaaaa") < md.index("2. bbbbbbbbbbbb")
    assert "crossed the threshold" in md.split("2. bbbbbbbbbbbb")[1].splitlines()[0]
    assert "All steps reverted: revert restores" in md and "Steps: the steps add up" in md
    page = render_html(r)
    assert "<ol class=\"steps\">" in page and "<strong>" in page.split("bbbbbbbbbbbb")[1][:200]


def campaign(steps: object) -> Campaign:
    return parse_campaign({"name": "t", "repository": ".", "good": "a", "bad": "b", "workload": "fio",
                           "metric": {"name": "iops", "threshold": "-10%"}, "steps": steps})


def test_the_steps_key_takes_first_all_or_a_min_share():
    assert campaign("first").steps == Steps(first=True)
    assert campaign("all").steps == Steps()
    assert campaign({"min_share": 0.3}).steps == Steps(min_share=0.3)


@pytest.mark.parametrize("bad, message", [
    ("some", "steps: invalid value 'some'; valid choices: all, first"),
    ({"min_share": 1.5}, "steps.min_share: must be between 0.01 and 0.99, got 1.5"),
    ({"share": 0.3}, "steps.share: unknown key; valid keys: min_share"),
])
def test_a_bad_steps_key_is_one_line_naming_the_field_and_the_choices(bad, message):
    with pytest.raises(UserError, match=f"^{message.replace('.', '[.]').replace('(', '[(]')}$"):
        campaign(bad)


def test_the_bisect_command_prints_the_share_line_and_the_steps_after_the_revert():
    steps = (step("a", 0.4), step("b", 0.6, crossed=True, alone=True))
    result = BisectResult(BisectOutcome.FOUND, "b" * 40, "p" * 40, steps=steps, steps_end=StepsEnd.ADD_UP,
                          partial="bbbbbbbbbbbb carries about 60% (95% CI 50%..70%) of the regression",
                          revert=PairResult(PairVerdict.NOT_RESTORED, "x"))
    lines = summary(Outcome(BisectOutcome.FOUND, "b" * 40, confidence=0.99, result=result), 3).splitlines()
    at = lines.index("revert: revert does not restore the metric")
    assert lines[at + 1].startswith("bbbbbbbbbbbb carries about 60%") and lines[at + 2].startswith("Step 1: aaaaaaaaaaaa")
