"""`vmbisect resume ID`: continue a campaign after a crash, reusing its builds and samples."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError

# "paused": stopped by an infrastructure error (kinds/run.py paused_on_infra_error).
RESUMABLE = ("running", "paused")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("resume", help="continue a campaign where it stopped")
    p.add_argument("id", type=campaign_id, help="campaign id (vmbisect status lists them)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    p.add_argument("--take-over", action="store_true",
                   help="take the campaign's lock from a controller on another host that is gone")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.kinds.run import execute
    from orchestrator.store import Store

    store = Store(a.store, create=False)
    row = store.campaign(a.id)
    if row.state not in RESUMABLE:
        raise UserError(f"id: campaign {a.id} is {row.state}, not running or paused; see vmbisect report {a.id}")
    return execute(store, a.id, uri=a.uri, as_json=a.json, take_over=a.take_over)
