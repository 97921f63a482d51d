"""`vmbisect cancel ID...`: stop queued or running campaigns of the queue.

A queued (or paused) campaign is cancelled at once; one a worker runs stops at its next boot
boundary (its pool refuses it the next slot), so no guest is left and every boot measured so
far stays in the store; `vmbisect requeue ID` puts it back in the queue, where it goes on from
what it measured. A campaign run in the foreground (`vmbisect bisect`) is stopped with Ctrl-C
where it runs. The same as the dashboard's cancel (orchestrator/queue/state.py)."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.storeopts import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cancel", help="cancel queued or running campaigns of the queue (vmbisect requeue undoes it)")
    p.add_argument("ids", type=campaign_id, nargs="+", metavar="ID", help="campaign ids (vmbisect status)")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.queue.state import cancel
    from orchestrator.store import Store

    store = Store(a.store, create=False)
    for cid in a.ids:
        cancel(store, cid)
        print(f"campaign {cid} cancelled (a running one stops at its next boot; vmbisect requeue {cid} goes on)")
    return 0
