"""Showing a campaign's progress: a live rich view for people, JSON lines for automation."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict
from typing import Callable, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from orchestrator.ports import Event


def json_lines(stream: TextIO = sys.stdout) -> Callable[[Event], None]:
    def emit(event: Event) -> None:
        stream.write(json.dumps(asdict(event)) + "\n")
        stream.flush()

    return emit


def _eta(event: Event, step_times: list[float]) -> str:
    if not step_times or not event.steps_left:
        return "-"
    per_step = step_times[-1] / max(1, len(step_times))
    return f"~{math.ceil(per_step * (event.steps_left + 1) / 60)} min"


class LiveView:
    """A table that is redrawn on every event: step, commit, phase, samples, time, ETA."""

    def __init__(self, total_commits: int, console: Console | None = None) -> None:
        self.about = max(1, math.ceil(math.log2(max(2, total_commits))))
        self.console = console or Console(stderr=True)
        self.live = Live(self._table(None), console=self.console, refresh_per_second=4, transient=False)
        self.step_times: list[float] = []
        self.last: Event | None = None

    def __enter__(self) -> "LiveView":
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(*exc)  # type: ignore[arg-type]
        if not self.console.is_terminal:  # a log file gets the final table's line ended
            self.console.line()

    def __call__(self, event: Event) -> None:
        if self.last is not None and event.step != self.last.step:
            self.step_times.append(event.elapsed_s)
        self.last = event
        if event.phase == "decide" and event.message:
            self.console.print(f"step {event.step}: {event.commit[:12]} {event.message}", markup=False,
                               soft_wrap=True)
        elif event.phase in ("endpoints", "recheck", "confirm", "done") and event.message:
            self.console.print(f"{event.phase}: {event.commit[:12] + ' ' if event.commit else ''}{event.message}",
                               markup=False, soft_wrap=True)
        self.live.update(self._table(event))

    def _table(self, e: Event | None) -> Table:
        t = Table(show_header=True, header_style="bold")
        for col in ("step", "commit", "phase", "samples", "elapsed", "left"):
            t.add_column(col)
        if e is not None:
            t.add_row(f"{e.step} of ~{max(self.about, e.step + e.steps_left)}", e.commit[:12] or "-", e.phase, str(e.samples),
                      f"{e.elapsed_s / 60:.1f} min", _eta(e, self.step_times))
        return t
