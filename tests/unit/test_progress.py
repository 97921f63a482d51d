"""The live progress view: decisions printed as lines, the step count growing past the first
estimate instead of showing "6 of ~5", and a log file's last line ended."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.ports import Event
from orchestrator.progress import LiveView


def test_live_view_prints_decisions_and_a_step_count_that_grows_past_the_estimate() -> None:
    out = io.StringIO()
    with LiveView(20, Console(file=out, force_terminal=False, width=120)) as view:
        view(Event("decide", "a" * 40, 1, 4, 3, "skip: build failed", 10.0))
        view(Event("decide", "b" * 40, 6, 0, 3, "bad: median at 101% of the gap", 60.0))
        view(Event("done", "b" * 40, 6, 0, 0, "", 61.0))
    text = out.getvalue()
    assert "step 1: aaaaaaaaaaaa skip: build failed" in text and "step 6: bbbbbbbbbbbb bad" in text
    assert "6 of ~6" in text and "of ~5" not in text.split("step 6:")[1]
    assert text.endswith("┘\n")
