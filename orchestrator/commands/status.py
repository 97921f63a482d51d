"""`vmbisect status [ID] [--since AGE] [--format table|json|tsv]`: campaigns and where they
stand; one campaign's steps, boots and takeovers; the morning view (what ended in the last AGE,
how, and where its report is). Each view is built as records first (pure of any output), then
written by orchestrator/commands/listing.py: every value whole off a terminal, JSON for scripts."""

from __future__ import annotations

import argparse
import datetime as dt
import re
from typing import TYPE_CHECKING, Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.listing import add_format_option, cell, plain, to_json, write_table
from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError
from orchestrator.results import DEFAULT_MIN_SHARE, BisectResult

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
    p.add_argument("id", type=campaign_id, nargs="?", help="campaign id: its steps, boots and takeovers")
    p.add_argument("--since", type=age, metavar="AGE", help="what ended in the last AGE (30m, 12h, 2d), how, "
                                                              "and where its report is")
    add_format_option(p)
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
    from orchestrator.store import Store

    store = Store(a.store, create=a.store is None)  # the default store may not be made yet: no campaigns
    if a.id is not None:
        if a.format == "tsv":
            raise UserError("--format: status ID shows several tables; give table or json (tsv lists campaigns: "
                            "status, status --since)")
        shown = one(store, a.id)
        print(to_json(shown) if a.format == "json" else "\n".join(one_text(shown)))
    elif a.since is not None:
        write_table(f"ended in the last {a.since.total_seconds() / 3600:g} h", ENDED_COLUMNS, ended(store, a.since),
                    a.format)
    else:
        write_table("vmbisect campaigns", LIST_COLUMNS, listing(store), a.format)
    return 0


def when(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M}"


LIST_COLUMNS = ("id", "kind", "name", "state", "steps", "boots", "runs", "result", "updated")
ENDED_COLUMNS = ("id", "kind", "name", "state", "how", "takeovers", "report", "ended")


def listing(store: Store) -> list[dict[str, Any]]:
    """Every campaign: id, kind, name, state, steps, boots and runs of its metric, result, updated."""
    from orchestrator.decisions import Role
    from orchestrator.kinds.table import status_line

    out = []
    for row in store.campaigns():
        boots, runs = counts(store, row)
        steps = sum(d.role in (Role.STEP, Role.CANDIDATE) for d in store.decisions(row.id))
        out.append({"id": row.id, "kind": row.kind, "name": row.name, "state": row.state, "steps": steps,
                    "boots": boots, "runs": runs, "result": status_line(row), "updated": when(row.updated)})
    return out


def ended(store: Store, since: dt.timedelta) -> list[dict[str, Any]]:
    """The morning view: campaigns that ended (done, refused, failed, paused, cancelled) in the
    window, how, whether they were taken over, and where the report is."""
    from orchestrator.kinds.table import status_line
    from orchestrator.queue import takeovers

    cutoff = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - since
    return [{"id": row.id, "kind": row.kind, "name": row.name, "state": row.state, "how": status_line(row),
             "takeovers": takeovers.summary(takeovers.of(store, row.id)), "report": where(row),
             "ended": when(row.updated)}
            for row in store.campaigns() if row.state in ENDED and row.updated >= cutoff]


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


def one(store: Store, campaign: int) -> dict[str, Any]:
    """A campaign's row, a bisection's range and steps (Estimate.range_words), its decisions as
    `vmbisect report` and the dashboard show them
    (report.steps_of: commit, verdict, boots and runs of its metric, median of boot means,
    reason; a decision that only said a measurement began is not one), its boots by host and
    status, its takeovers, and the boots its evidence left out (report.excluded)."""
    import math
    from collections import Counter

    from orchestrator.kinds.table import estimate, metric_of, status_line
    from orchestrator.measure.evidence import boots_by_host
    from orchestrator.measure.leftout import Excluded, sentence
    from orchestrator.queue import takeovers
    from orchestrator.render.scale import whole_or_4g
    from orchestrator.report.bisection import excluded, steps_of

    row = store.campaign(campaign)
    metric = metric_of(row)
    boots, host_of, _hosts = boots_by_host(store, campaign, metric) if metric else ({}, {}, "")
    total_boots, total_runs = counts(store, row)
    decisions = [{"n": s.index, "role": str(s.role), "commit": s.commit.sha, "verdict": s.verdict, "kind": s.backed_by,
                  "boots": s.commit.boots, "runs": s.commit.n,
                  "median": None if math.isnan(s.commit.median) else whole_or_4g(s.commit.median), "reason": s.reason}
                 for s in steps_of(store.decisions(campaign), boots, host_of, lambda _sha: "")]
    by = Counter((b.host, b.status) for b in store.boots(campaign))
    took = takeovers.of(store, campaign)
    left = excluded(store, campaign, metric) if metric else Excluded()
    return {"id": row.id, "name": row.name, "kind": row.kind, "state": row.state, "metric": metric,
            "range": estimate(store, row, store.boots(campaign)).range_words(),
            "boots": total_boots, "runs": total_runs, "result": status_line(row), "share": share_line(row),
            "updated": when(row.updated),
            "decisions": decisions,
            "boots_by_host": [{"host": h, "status": st, "boots": n} for (h, st), n in sorted(by.items())],
            "takeovers": [t.to_dict() for t in took], "taken_over": takeovers.summary(took),
            "excluded": left.to_dict(), "evidence": sentence(left)}


def share_line(row: Any) -> str:
    """A bisection's culprit's share of the regression when it carries clearly less than all
    or could not be settled, as the report's head says it ("" otherwise)."""
    from orchestrator.kinds.table import result_of, stored

    result = result_of(row)
    if not isinstance(result, BisectResult):
        return ""
    try:
        min_share = stored(row).campaign.steps.min_share
    except (UserError, AttributeError):
        min_share = DEFAULT_MIN_SHARE
    return result.partial or result.unsettled_share(min_share)


def one_text(c: dict[str, Any]) -> list[str]:
    """`one` as text: the campaign's figures a line each, its decisions as columns with each
    reason whole on a `reason:` line under its row, boots by host, each takeover a line."""
    from orchestrator.queue import takeovers

    out = [f"campaign {c['id']}: {c['name']} ({c['kind']})"]
    for key in ("state", "metric", "range", "boots", "runs", "evidence", "result", "share", "updated", "taken_over"):
        if c[key] not in (None, ""):
            out.append(f"{key.replace('_', ' ')}: {c[key]}")
    out += ["", "decisions"]
    if c["decisions"]:
        cols = ("n", "role", "commit", "verdict", "kind", "boots", "runs", "median")
        lines = plain(["#", *cols[1:]], [[cell(d[k]) for k in cols] for d in c["decisions"]])
        out.append(lines[0])
        for d, line in zip(c["decisions"], lines[1:]):
            out.append(line)
            if d["reason"]:
                out.append(f"    reason: {d['reason']}")
    else:
        out.append("(none yet)")
    out += ["", "boots"]
    out += plain(["host", "status", "boots"], [[cell(b["host"]), b["status"], str(b["boots"])]
                                               for b in c["boots_by_host"]]) if c["boots_by_host"] else ["(none yet)"]
    if c["takeovers"]:
        out += ["", "takeovers"]
        out += [takeovers.line(takeovers.Takeover.from_dict(t)) for t in c["takeovers"]]
    return out
