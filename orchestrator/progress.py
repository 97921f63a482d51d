"""Showing a campaign's progress: a live rich view for people at a terminal, the same words as
lines where the output is not a terminal (a log, a pipe, a worker), JSON lines for automation.

The lines: each build (its commit when it starts, then how long it took and how it went: cold,
ccache, incremental, or the build cache), each boot (its commit, which of about how many, the
metric's median over its runs), each decision; while a build or a boot runs longer than
`HEARTBEAT_S` without a line, one saying what is under way and for how long."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict
from typing import Callable, TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from orchestrator.ports import Event

# A line once a build or a boot has run this long without one, looked for every second: a log
# never stays silent for 30 s (a boot of the demo takes about 32 s between its lines).
HEARTBEAT_S = 25.0
# printed as `phase: ...` at a terminal and in a log alike
DECISIONS = ("endpoints", "recheck", "confirm", "steps", "requeue", "stalled", "done")


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


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _span(seconds: float) -> str:
    """How long something has run: seconds under a minute, then minutes."""
    return f"{seconds:.0f} s" if seconds < 60 else _minutes(seconds)


class LiveView:
    """A table redrawn on every event at a terminal (step, commit, phase, samples, time, ETA),
    lines elsewhere (the module's text); both begin with a line naming the range's size and the
    steps it should take. `total_commits` sizes the first estimate of the steps, `boots` that of
    a commit's boots (the campaign's boots_per_commit)."""

    def __init__(self, total_commits: int, console: Console | None = None, boots: int = 2,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        self.about = max(1, math.ceil(math.log2(max(2, total_commits))))
        self.range = f"range: {total_commits:,} commit{'s' * (total_commits != 1)} from good to bad, ~{self.about} steps"
        self.boots_about = boots
        self.console = console or Console(stderr=True)
        self.lines = not self.console.is_terminal
        self.live = None if self.lines else Live(self._table(None), console=self.console, refresh_per_second=4,
                                                transient=False)
        self.step_times: list[float] = []
        self.last: Event | None = None
        self.samples: dict[str, int] = {}  # runs seen so far per commit
        self.booted: Counter[str] = Counter()  # boots seen per commit
        self.heartbeat_s = heartbeat_s
        self._lock = threading.Lock()
        self._said = time.monotonic()  # when the last line was printed
        self._since = (time.monotonic(), 0.0)  # (monotonic, elapsed_s) of the last event
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> "LiveView":
        self._say(self.range)
        if self.live is not None:
            self.live.__enter__()
        else:
            self._beat = threading.Thread(target=self._heartbeat, name="progress-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)  # type: ignore[arg-type]
            return
        self._stop.set()
        if self._beat is not None:
            self._beat.join()

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self.last is not None and event.step != self.last.step:
                self.step_times.append(event.elapsed_s)
            if event.commit and event.samples:
                self.samples[event.commit] = max(self.samples.get(event.commit, 0), event.samples)
            if event.phase == "booted":
                self.booted[event.commit] += 1
            self.last = event
            self._since = (time.monotonic(), event.elapsed_s)
        line = self._decision(event) or (self._line(event) if self.lines else None)
        if line is not None:
            self._say(line)
        if self.live is not None:
            self.live.update(self._table(event))

    def _say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        self._said = time.monotonic()

    def _decision(self, e: Event) -> str | None:
        """A decision's line, the same at a terminal and in a log."""
        if e.phase == "decide" and e.message:
            return f"step {e.step}: {e.commit[:12]} {e.message}"
        if e.phase in DECISIONS and e.message:
            return f"{e.phase}: {e.commit[:12] + ' ' if e.commit else ''}{e.message}"
        return None

    def _line(self, e: Event) -> str | None:
        """A build's or a boot's line where the output is not a terminal."""
        if e.phase == "build":
            return f"build {e.commit[:12]}: started ({_minutes(e.elapsed_s)} in)"
        if e.phase == "built":
            return f"build {e.commit[:12]}: {e.message}"
        if e.phase == "booted":
            n = self.booted[e.commit]
            return f"boot {e.commit[:12]}: {n} of ~{max(n, self.boots_about)}, {e.message}"
        return None

    def _heartbeat(self) -> None:
        """A line when a build or a boot has run `heartbeat_s` without one."""
        while not self._stop.wait(min(self.heartbeat_s, 1.0)):
            with self._lock:
                e, (at, elapsed) = self.last, self._since
            if e is None or e.phase not in ("build", "boot", "measure") or time.monotonic() - self._said < self.heartbeat_s:
                continue
            what = "building" if e.phase == "build" else "measuring" if e.phase == "measure" else "booting"
            now = elapsed + time.monotonic() - at
            self._say(f"{'build' if e.phase == 'build' else 'boot'} {e.commit[:12]}: {what} for "
                      f"{_span(now - e.elapsed_s)} ({_minutes(now)} in)")

    def _table(self, e: Event | None) -> Table:
        t = Table(show_header=True, header_style="bold")
        for col in ("step", "commit", "phase", "samples", "elapsed", "left"):
            t.add_column(col)
        if e is not None:
            samples = max(e.samples, self.samples.get(e.commit, 0))
            t.add_row(f"{e.step} of ~{max(self.about, e.step + e.steps_left)}", e.commit[:12] or "-", e.phase,
                      str(samples), f"{e.elapsed_s / 60:.1f} min", _eta(e, self.step_times))
        return t
