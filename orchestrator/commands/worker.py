"""`vmbisect worker --lab LAB [--once]`: run queued campaigns on a lab, any number of workers
on any number of machines sharing one PostgreSQL store (one machine with a SQLite store).

Runs one campaign per runner at a time (default: as many runners as the lab has slots), each
through the one run path of `bisect`/`resume`; SIGTERM or Ctrl-C stops every campaign at its
next boot boundary and queues it again. docs/lab.md sets a lab up.
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType
from typing import Any

from orchestrator.commands.argtypes import count, seconds
from orchestrator.commands.storeopts import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("worker", help="run queued campaigns (vmbisect submit) on a lab")
    p.add_argument("--lab", type=Path, required=True, help="lab file: the hosts and slots this worker uses "
                                                            "(docs/hosts.md)")
    p.add_argument("--once", action="store_true", help="exit once no submitted campaign waits or runs")
    p.add_argument("--runners", type=count(1, 256), default=None,
                   help="campaigns run at once (default: the lab's slots); with several, each campaign "
                        "measures on one slot, with one it measures on every slot of the lab")
    p.add_argument("--heartbeat-timeout", type=seconds(2.0, 3600.0), default=60.0, metavar="S",
                   help="a worker silent this long is dead: its campaign goes to another (default 60)")
    add_store_option(p)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(a: argparse.Namespace) -> int:
    from orchestrator.hosts.labfile import load_lab
    from orchestrator.kinds.run import run_stored
    from orchestrator.queue.worker import Config, run_worker
    from orchestrator.store import Store

    lab = load_lab(a.lab)
    store = Store(a.store)
    runners = a.runners or sum(len(h.slots) for h in lab.hosts)
    signal.signal(signal.SIGTERM, _interrupt)
    return run_worker(store, Config(run_stored, a.lab.resolve(), a.uri, a.heartbeat_timeout, a.once,
                                    campaign_slots=1 if runners > 1 else None), runners)
