"""The words a takeover on record becomes: the summary the report and the mail carry ("taken
over once; 1 boot lost"), each takeover's line, and the mail's line for it."""

from __future__ import annotations

import datetime as dt

import pytest

from orchestrator.notify.message import body
from orchestrator.queue.takeovers import LostBoot, Takeover, TakeoverCause, line, summary
from orchestrator.results import BisectOutcome, BisectResult
from tests.unit.test_mail_message import CULPRIT, ended

AT = dt.datetime(2026, 11, 27, 9, 21, 28)


def took(lost: int, silent_s: float | None = 29.0) -> Takeover:
    return Takeover(7, AT, "a:10/0", "a" if silent_s is not None else "", "b:20/1", TakeoverCause.HEARTBEAT_LOST, silent_s,
                    20.0 if silent_s is not None else None,
                    tuple(LostBoot(40 + i, CULPRIT, 1) for i in range(lost)))


@pytest.mark.parametrize("takeovers, words", [
    ([], ""),
    ([took(1)], "taken over once; 1 boot lost"),
    ([took(0), took(2)], "taken over twice; 2 boots lost"),
    ([took(0), took(0), took(0)], "taken over 3 times; 0 boots lost"),
])
def test_the_summary_counts_takeovers_and_the_boots_they_cut(takeovers, words):
    assert summary(takeovers) == words


def test_a_takeover_line_says_when_by_whom_from_whom_why_and_what_was_lost():
    assert line(took(1)) == ("2026-11-27 09:21:28 UTC taken over by b:20/1 from a:10/0 on a: heartbeat lost "
                             "(silent 29 s, timeout 20 s); lost: boot 40 of 0123456789ab (1 run stored)")
    assert line(took(0, None)).endswith("heartbeat lost (its heartbeat row was gone); lost: no boot in flight")


def test_a_takeover_round_trips_through_its_dict():
    assert Takeover.from_dict(took(2).to_dict()) == took(2)


def test_the_mail_says_a_campaign_was_taken_over_and_one_never_taken_over_says_nothing():
    found = BisectResult(BisectOutcome.FOUND, culprit=CULPRIT)
    assert "Workers: taken over once; 1 boot lost (`vmbisect status 12` says from which, when, why)." in " ".join(
        body(ended(found, taken_over="taken over once; 1 boot lost")).split())  # the text part wraps at 78 columns
    assert "Workers:" not in body(ended(found))
