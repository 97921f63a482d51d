"""`vmbisect status [ID] [--since AGE]`: campaigns and where they stand; one campaign's steps
and boots; the morning view (what ended in the last AGE, how, and where its report is)."""

from __future__ import annotations

import argparse
import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.storeopts import add_store_option

if TYPE_CHECKING:
    from orchestrator.store import Store

ENDED = ("done", "refused", "failed", "paused", "cancelled")
UNITS = {"m": 60, "h": 3600, "d": 86400}


def age(text: str) -> dt.timedelta:
    """`30m`, `12h`, `2d`: how far back --since looks."""
    match = re.fullmatch(r"(\d{1,6})([mhd])", text.strip())
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"expected an age like 30m, 12h or 2d, got {text[:40]!r}")
    return dt.timedelta(seconds=int(match.group(1)) * UNITS[match.group(2)])


def add_parser(sub: Any) -> None:
    p = sub.add_parser("status", help="list campaigns, show one, or what ended recently (--since)")
    p.add_argument("id", type=campaign_id, nargs="?", help="campaign id: its steps and boots")
    p.add_argument("--since", type=age, metavar="AGE", help="what ended in the last AGE (30m, 12h, 2d), how, "
                                                              "and where its report is")
    add_store_option(p)


def counts(store: Store, row: Any) -> tuple[int, int]:
    """Boots and runs of the campaign's metric (every boot and run when it names none)."""
    from orchestrator.kinds.table import metric_of

    metric = metric_of(row)
    if metric is None:
        return len(store.boots(row.id)), sum(1 for _ in store.runs(row.id))
    boots = store.boot_samples(row.id, metric)
    return sum(len(bs) for bs in boots.values()), sum(len(b.runs) for bs in boots.values() for b in bs)


def run(a: argparse.Namespace) -> int:
    from rich.console import Console

    from orchestrator.store import Store

    store = Store(a.store, create=a.store is None)  # the default store may not be made yet: no campaigns
    console = Console()
    if a.id is not None:
        for table in one(store, a.id):
            console.print(table)
    elif a.since is not None:
        console.print(ended(store, a.since))
    else:
        console.print(listing(store))
    return 0


def listing(store: Store) -> Any:
    from rich.table import Table

    from orchestrator.decisions import Role
    from orchestrator.kinds.table import status_line

    table = Table(title="vmbisect campaigns")
    for col in ("id", "kind", "name", "state", "steps", "boots", "runs", "result", "updated"):
        table.add_column(col)
    for row in store.campaigns():
        boots, runs = counts(store, row)
        steps = sum(d.role in (Role.STEP, Role.CANDIDATE) for d in store.decisions(row.id))
        table.add_row(str(row.id), row.kind, row.name, row.state, str(steps), str(boots), str(runs),
                      status_line(row), f"{row.updated:%Y-%m-%d %H:%M}")
    return table


def ended(store: Store, since: dt.timedelta) -> Any:
    """The morning view: campaigns that ended (done, refused, failed, paused, cancelled) in the window."""
    from rich.table import Table

    from orchestrator.kinds.table import status_line

    cutoff = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - since
    table = Table(title=f"ended in the last {since.total_seconds() / 3600:g} h")
    for col in ("id", "kind", "name", "state", "how", "report", "ended"):
        table.add_column(col)
    for row in store.campaigns():
        if row.state in ENDED and row.updated >= cutoff:
            table.add_row(str(row.id), row.kind, row.name, row.state, status_line(row), where(row),
                          f"{row.updated:%Y-%m-%d %H:%M}")
    return table


def where(row: Any) -> str:
    """Where an ended campaign's report is: the file written when it ended (kinds/run.py),
    or the command that makes it (a report written on another machine, or by an older
    vmbisect); how to go on with a paused or cancelled one."""
    from orchestrator.kinds.run import report_files

    if row.state == "paused":
        return f"vmbisect resume {row.id}"
    if row.state == "cancelled":
        return f"vmbisect requeue {row.id}"
    md, _html = report_files(row)
    return str(md) if md.is_file() else f"vmbisect report {row.id} --format md"


def one(store: Store, campaign: int) -> list[Any]:
    """A campaign's row, its decisions (commit, verdict, boots and runs of its metric, median,
    reason) and its boots by host and status."""
    import statistics
    from collections import Counter

    from rich.table import Table

    from orchestrator.kinds.table import metric_of, status_line
    from orchestrator.render.scale import whole_or_4g

    row = store.campaign(campaign)
    metric = metric_of(row)
    boots = store.boot_samples(campaign, metric) if metric else {}
    head = Table(title=f"campaign {row.id}: {row.name} ({row.kind})")
    for col in ("state", "metric", "boots", "runs", "result", "updated"):
        head.add_column(col)
    total_boots, total_runs = counts(store, row)
    head.add_row(row.state, metric or "-", str(total_boots), str(total_runs), status_line(row),
                 f"{row.updated:%Y-%m-%d %H:%M}")
    steps = Table(title="decisions")
    for col in ("#", "role", "commit", "verdict", "boots", "runs", "median", "reason"):
        steps.add_column(col)
    for i, d in enumerate(store.decisions(campaign), 1):
        mine = boots.get(d.commit, [])
        runs = [v for b in mine for v in b.runs]
        median = whole_or_4g(statistics.median(runs)) if runs else "-"
        steps.add_row(str(i), d.role.value, d.commit[:12] or "-", d.verdict, str(len(mine)), str(len(runs)), median,
                      d.reason[:100])
    by = Counter((b.host or "-", b.status) for b in store.boots(campaign))
    hosts = Table(title="boots")
    for col in ("host", "status", "boots"):
        hosts.add_column(col)
    for (host, status), n in sorted(by.items()):
        hosts.add_row(host, status, str(n))
    return [head, steps, hosts]
