"""The progress view: at a terminal, decisions printed as lines above a live table whose step count
grows past the first estimate instead of showing "6 of ~5" and whose last row (at `done`) keeps
the culprit's samples; elsewhere (a log, a pipe) the same decision lines, builds and boots as
lines, and no table."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.ports import Event
from orchestrator.progress import LiveView


def test_live_view_prints_decisions_and_a_step_count_that_grows_past_the_estimate() -> None:
    out = io.StringIO()
    with LiveView(20, Console(file=out, force_terminal=True, width=120)) as view:
        view(Event("decide", "a" * 40, 1, 4, 3, "skip: build failed", 10.0))
        view(Event("decide", "b" * 40, 6, 0, 3, "bad: median at 101% of the gap", 60.0))
        view(Event("done", "b" * 40, 6, 0, 0, "", 61.0))
    text = out.getvalue()
    assert "step 1: aaaaaaaaaaaa skip: build failed" in text and "step 6: bbbbbbbbbbbb bad" in text
    assert "6 of ~6" in text and "of ~5" not in text.split("step 6:")[1]


def test_the_live_tables_last_row_at_done_shows_the_culprits_samples_not_zero() -> None:
    out = io.StringIO()
    with LiveView(20, Console(file=out, force_terminal=True, width=120)) as view:
        view(Event("measure", "b" * 40, 2, 1, 6, "", 50.0))
        view(Event("done", "b" * 40, 2, 0, 0, "found; confidence 99%", 61.0))
        last = view._table(view.last)
    assert list(last.columns[3].cells) == ["6"]


def test_a_log_gets_builds_boots_and_decisions_as_lines_and_no_table() -> None:
    out = io.StringIO()
    with LiveView(20, Console(file=out, width=120), boots=2) as view:
        view(Event("endpoints", "", 0, 0, 0, "good 100, bad 90 (-10%)", 1.0))
        view(Event("build", "a" * 40, 1, 4, 0, "", 70.0))
        view(Event("built", "a" * 40, 1, 4, 0, "built in 8.2 min (cold)", 562.0))
        view(Event("boot", "a" * 40, 1, 4, 0, "", 562.0))
        view(Event("measure", "a" * 40, 1, 4, 0, "", 570.0))
        view(Event("stalled", "a" * 40, 1, 4, 0, "a run stalled in the guest (fio timed out): booting it again", 580.0))
        view(Event("boot", "a" * 40, 1, 4, 0, "", 580.0))
        view(Event("booted", "a" * 40, 1, 4, 3, "read_iops 8250 (median of 3 runs)", 600.0))
        view(Event("decide", "a" * 40, 1, 4, 3, "bad: 2 boots at 103% of the gap", 700.0))
    assert out.getvalue().splitlines() == [
        "range: 20 commits from good to bad, ~5 steps",
        "endpoints: good 100, bad 90 (-10%)",
        "build aaaaaaaaaaaa: started (1.2 min in)",
        "build aaaaaaaaaaaa: built in 8.2 min (cold)",
        "stalled: aaaaaaaaaaaa a run stalled in the guest (fio timed out): booting it again",
        "boot aaaaaaaaaaaa: 1 of ~2, read_iops 8250 (median of 3 runs)",
        "step 1: aaaaaaaaaaaa bad: 2 boots at 103% of the gap",
    ]
