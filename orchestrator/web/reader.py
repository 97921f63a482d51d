"""The dashboard's reads: the store (campaigns, decisions, boots; the queue's lab state), the
kind table (status lines, metric, report files, reports; a Catalogue handed in) and, read-only, the campaign's git
clone or repository (commit subjects, commits left) -> the view records of views.py.

An ended campaign's view is kept per (id, last update): a page showing a hundred finished
campaigns reads only the running ones again at each refresh.
"""

from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.decisions import Role
from orchestrator.errors import UserError
from orchestrator.report.estimate import Estimate, commits_of, marks
from orchestrator.web.views import (
    RUNNING,
    CampaignView,
    DecisionView,
    HostBoots,
    building,
    decision_views,
    duration,
    eta_seconds,
    host_boots,
    seconds_per_boot,
    short,
)

if TYPE_CHECKING:
    from orchestrator.queue.state import LabState
    from orchestrator.store import BootRow, CampaignRow, Store

LISTED = 100  # campaigns on the overview, newest first (running ones always)


@dataclass(frozen=True)
class Catalogue:
    """What the dashboard asks of the kind table (orchestrator/kinds/) and of `vmbisect status`
    (its counts), handed in by commands/serve.py so that nothing here imports the kinds or the
    commands: a campaign's status line, its metric, where its reports are written, its report
    made now (store, id, format), its boots and runs of its metric, the states whose reports are
    written at the end, its typed spec (UserError when it no longer reads) and the estimate of
    the boots a running one has left."""

    status_line: Callable[[Any], str]
    metric_of: Callable[[Any], str | None]
    report_files: Callable[[Any], tuple[Path, Path]]
    report: Callable[["Store", int, str], str]
    counts: Callable[["Store", Any], tuple[int, int]]
    reported: tuple[str, ...]
    spec: Callable[[Any], Any]
    estimate: Callable[["Store", Any, "list[BootRow]"], Estimate]


def now() -> dt.datetime:
    """The store's clock: naive UTC."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


# ---- the views --------------------------------------------------------------------------------

def campaign_view(store: Store, kinds: Catalogue, row: CampaignRow) -> CampaignView:
    boots_total, runs = kinds.counts(store, row)
    steps = sum(d.role is Role.STEP for d in store.decisions(row.id))
    current = subject = ""
    est, eta = Estimate(None, ""), "-"
    boots = store.boots(row.id)
    last_boot = boots[-1].created if boots else None
    now_building = None
    if row.state == RUNNING:
        est = kinds.estimate(store, row, boots)
        seconds = eta_seconds(est, seconds_per_boot([b.created for b in boots]))
        eta = "-" if seconds is None else f"about {duration(seconds)}"
        now_building = building([(b.commit, b.status, b.created) for b in store.builds(row.id)], last_boot)
        current = boots[-1].commit if boots else ""
    shown = [c for c in (current, now_building.commit if now_building else "") if c]
    names = _subjects(store, kinds, row, shown) if shown else {}
    subject = names.get(current, "")
    _md, html = kinds.report_files(row)
    return CampaignView(row.id, row.name, row.kind, row.state, kinds.status_line(row), kinds.metric_of(row) or "-",
                        steps,
                        boots_total, runs, short(current) if current else "", subject, est.basis, eta,
                        est.fraction, row.updated, str(html) if html.is_file() else "", last_boot,
                        short(now_building.commit) if now_building else "",
                        names.get(now_building.commit, "") if now_building else "",
                        now_building.since if now_building else None, actions(store, row))


def _subjects(store: Store, kinds: Catalogue, row: CampaignRow, shas: list[str]) -> dict[str, str]:
    """Commit subjects from the stored bisect log, else from git ("" where neither says)."""
    found = {sha: s for sha, s in (marks(row.bisect_log).subjects or {}).items() if sha in shas}
    missing = [sha for sha in shas if sha not in found]
    if missing:
        try:
            found.update(commits_of(store, row, kinds.spec(row)).subjects(missing))
        except UserError:
            pass
    return found


def actions(store: Store, row: CampaignRow) -> tuple[str, ...]:
    """What the dashboard's control can do to the campaign now (queue/state.py's cancel and
    requeue refuse the rest): cancel a queued, paused or queue-run one, requeue a stopped one."""
    from orchestrator.queue.state import CANCELLABLE, REQUEUEABLE
    from orchestrator.store import QueueRow

    with store.session() as s:
        queued = s.get(QueueRow, row.id) is not None
    return tuple(a for a, can in (("cancel", row.state in CANCELLABLE and (row.state != RUNNING or queued)),
                                  ("requeue", row.state in REQUEUEABLE)) if can)


@dataclass(frozen=True)
class Overview:
    campaigns: list[CampaignView]
    lab: LabState
    at: dt.datetime


@dataclass(frozen=True)
class Detail:
    campaign: CampaignView
    decisions: list[DecisionView]
    hosts: list[HostBoots]
    at: dt.datetime
    plot: str = ""  # inline SVG of every commit's runs so far (render/svg.py: its text escaped)
    left_out: str = ""  # the boots left out of the evidence, and why (report.excluded, leftout.sentence)
    range: str = ""  # a bisection's range and steps (report/estimate.py Estimate.range_words)


class Reader:
    """The dashboard's reads over one store; safe to call from several threads."""

    def __init__(self, store: Store, kinds: Catalogue) -> None:
        self.store, self.kinds = store, kinds
        self._kept: dict[int, tuple[dt.datetime, CampaignView]] = {}  # id -> (its update, its view)
        self._lock = threading.Lock()

    def view(self, row: CampaignRow) -> CampaignView:
        """A running campaign's view read now; another's as long as its row is not updated."""
        if row.state == RUNNING:
            return campaign_view(self.store, self.kinds, row)
        with self._lock:
            updated, kept = self._kept.get(row.id, (None, None))
        if kept is None or updated != row.updated:
            kept = campaign_view(self.store, self.kinds, row)
            with self._lock:
                self._kept[row.id] = (row.updated, kept)
        return kept

    def overview(self) -> Overview:
        rows = sorted(self.store.campaigns(), key=lambda r: (r.state != RUNNING, -r.id))
        listed = [r for i, r in enumerate(rows) if r.state == RUNNING or i < LISTED]
        return Overview([self.view(r) for r in listed], self.lab(), now())

    def lab(self) -> LabState:
        from orchestrator.queue.state import lab_state

        return lab_state(self.store)

    def detail(self, campaign_id: int) -> Detail:
        """The campaign's page: its rows are `vmbisect report`'s (report.steps_of over the boots
        of measure.evidence.boots_by_host), its plot the report's, drawn from the boots so far."""
        from orchestrator.measure.evidence import boots_by_host
        from orchestrator.measure.leftout import sentence
        from orchestrator.report.bisection import excluded, steps_of
        from orchestrator.report.bisection_html import samples_plot

        row = self.store.campaign(campaign_id)
        metric = self.kinds.metric_of(row)
        decisions = self.store.decisions(campaign_id)
        subjects = _subjects(self.store, self.kinds, row, sorted({d.commit for d in decisions if d.commit}))
        boots, host_of, _hosts = boots_by_host(self.store, campaign_id, metric) if metric else ({}, {}, "")
        steps = steps_of(decisions, boots, host_of, lambda sha: subjects.get(sha, ""))
        samples = {c: [v for b in bs for v in b.runs] for c, bs in boots.items()}
        plot = samples_plot(steps, samples, metric) if metric and samples else ""
        all_boots = self.store.boots(campaign_id)
        return Detail(self.view(row), decision_views(steps),
                      host_boots([(b.host, b.status) for b in all_boots]), now(), plot,
                      sentence(excluded(self.store, campaign_id, metric)) if metric else "",
                      range=self.kinds.estimate(self.store, row, all_boots).range_words())

    def report(self, campaign_id: int) -> str | None:
        """The campaign's HTML report: the file written when it ended, else, for a campaign that
        ended (its reports written on another machine, or by an older vmbisect), made now by its
        kind; None while it has not ended (a report made now would use the campaign's git clone
        under its running controller)."""
        row = self.store.campaign(campaign_id)
        _md, html = self.kinds.report_files(row)
        if html.is_file():
            return html.read_text(encoding="utf-8", errors="replace")
        if row.state not in self.kinds.reported:
            return None
        return self.kinds.report(self.store, campaign_id, "html")
