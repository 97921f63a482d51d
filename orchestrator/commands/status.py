"""`vmbisect status [ID]`: campaigns and where they stand."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.bisect import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("status", help="list campaigns, or show one")
    p.add_argument("id", type=campaign_id, nargs="?", help="campaign id")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from orchestrator.commands.kinds import status_line
    from orchestrator.decisions import Role
    from orchestrator.store import Store

    store = Store(a.store)
    rows = [store.campaign(a.id)] if a.id is not None else store.campaigns()
    table = Table(title="vmbisect campaigns")
    for col in ("id", "kind", "name", "state", "steps", "samples", "result", "updated"):
        table.add_column(col)
    for row in rows:
        decisions = store.decisions(row.id)
        samples = store.sample_count(row.id)
        shown = status_line(row)
        table.add_row(str(row.id), row.kind, row.name, row.state, str(sum(d.role is Role.STEP for d in decisions)),
                      str(samples), shown, f"{row.updated:%Y-%m-%d %H:%M}")
    Console().print(table)
    return 0
