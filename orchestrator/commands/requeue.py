"""`vmbisect requeue ID...`: a paused, failed or cancelled campaign back in the queue.

It goes behind the campaigns of its priority submitted before now, and a worker goes on from
what it measured (nothing is measured twice). The same as the dashboard's requeue
(orchestrator/queue/state.py)."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.storeopts import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("requeue", help="put paused, failed or cancelled campaigns back in the queue")
    p.add_argument("ids", type=campaign_id, nargs="+", metavar="ID", help="campaign ids (vmbisect status)")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.queue.state import requeue
    from orchestrator.store import Store

    store = Store(a.store, create=False)
    for cid in a.ids:
        requeue(store, cid)
        print(f"campaign {cid} queued again")
    return 0
