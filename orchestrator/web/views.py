"""What the dashboard shows, as data: pure functions from what the store holds (campaign rows,
decisions, boots, the stored `git bisect log`) to frozen view records the templates print.
Nothing here reads the store, git or the clock; orchestrator/web/reader.py does, and hands the
values in. The time left is the boots left (orchestrator/report/estimate.py, each kind's own)
times the median time between the campaign's boots so far (which includes its builds; a pause
of hours between two boots does not move a median).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from orchestrator.report.bisection import Step
from orchestrator.report.estimate import Estimate

RUNNING = "running"


def seconds_per_boot(started: Sequence[dt.datetime]) -> float | None:
    """The median time between consecutive boots (builds included); None before two boots."""
    gaps = [(b - a).total_seconds() for a, b in zip(started, started[1:])]
    gaps = [g for g in gaps if g >= 0]
    return statistics.median(gaps) if gaps else None


def eta_seconds(estimate: Estimate, per_boot: float | None) -> float | None:
    if estimate.boots_left is None or per_boot is None:
        return None
    return estimate.boots_left * per_boot


def duration(seconds: float | None) -> str:
    """`1 h 05 min`, `12 min`, `40 s`; '-' for unknown."""
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 90:
        return f"{s} s"
    if s < 3600:
        return f"{round(s / 60)} min"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def ago(when: dt.datetime | None, now: dt.datetime) -> str:
    return "-" if when is None else f"{duration(max(0.0, (now - when).total_seconds()))} ago"


def short(commit: str) -> str:
    """A commit as 12 hex digits; a kernel file (a comparison's variant) by its last part."""
    if re.fullmatch(r"[0-9a-f]{13,64}", commit):
        return commit[:12]
    return commit.rsplit("/", 1)[-1][:40]


@dataclass(frozen=True)
class CampaignView:
    id: int
    name: str
    kind: str
    state: str
    result: str  # the kind's status line once it ended
    metric: str
    steps: int
    boots: int
    runs: int
    current: str  # the commit (or kernel) of the latest boot while it runs
    current_subject: str
    left: str  # what the estimate rests on
    eta: str  # "about 12 min" or "-"
    fraction: float | None
    updated: dt.datetime
    report: str  # the report file written when it ended ("" for none yet)
    last_boot: dt.datetime | None = None  # when the latest boot began
    building: str = ""  # the commit whose kernel builds now (while it runs and no guest does)
    building_subject: str = ""
    building_since: dt.datetime | None = None
    actions: tuple[str, ...] = ()  # what control can do to it now: cancel, requeue

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    @property
    def active(self) -> dt.datetime:
        """The campaign's latest sign of work: its row's update, its last boot, the build under way."""
        return max(t for t in (self.updated, self.last_boot, self.building_since) if t is not None)

    @property
    def percent(self) -> int | None:
        return None if self.fraction is None else int(round(100 * self.fraction))


@dataclass(frozen=True)
class DecisionView:
    n: int
    role: str
    commit: str
    subject: str
    verdict: str
    backed_by: str  # the decision's Kind: measured, inherited, build_failed...
    boots: int
    runs: int
    median: float | None
    reason: str


@dataclass(frozen=True)
class HostBoots:
    host: str
    status: str
    boots: int


def decision_views(steps: Sequence[Step]) -> list[DecisionView]:
    """The rows of `vmbisect report` (report.steps_of: the same decisions, boots, runs and
    median of boot means), as the dashboard prints them."""
    return [DecisionView(s.index, s.role, short(s.commit.sha) if s.commit.sha else "-", s.commit.subject, s.verdict,
                         s.backed_by, s.commit.boots, s.commit.n, None if math.isnan(s.commit.median) else s.commit.median,
                         s.reason) for s in steps]


@dataclass(frozen=True)
class Building:
    """A kernel being built while the campaign runs: its commit and since when."""

    commit: str
    since: dt.datetime


def building(builds: Sequence[tuple[str, str, dt.datetime]], last_boot: dt.datetime | None) -> Building | None:
    """(commit, status, created) of every build row in order -> the newest build started and not
    yet ended (a `building` row with no later row of its commit), when it started after the last
    boot began; None when a guest, not a build, is the campaign's latest work."""
    started: dict[str, dt.datetime] = {}
    for commit, status, created in builds:
        if status == "building":
            started[commit] = created
        else:
            started.pop(commit, None)
    if not started:
        return None
    commit, since = max(started.items(), key=lambda kv: kv[1])
    return Building(commit, since) if last_boot is None or since >= last_boot else None


def host_boots(boots: Sequence[tuple[str, str]]) -> list[HostBoots]:
    """(host, status) of every boot -> counts by host and status."""
    return [HostBoots(h or "-", s, n) for (h, s), n in sorted(Counter(boots).items())]
