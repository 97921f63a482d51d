"""`vmbisect submit FILE... [--priority N]`: queue campaigns for the lab's workers.

Every file is checked as `vmbisect bisect` checks it, whatever its kind (`commands/bisect.py`
checked_file: for a commit bisection the campaign file, its workload and metric, the kernel
recipe, the repository and both revisions, the lab file) before any is recorded: one refused
file refuses the whole submission, with its one-line reason, and nothing is queued (submit
them again once fixed). Then each is stored in state queued with its
priority (higher first; default 0) and handed to the workers (`vmbisect worker`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.commands.argtypes import count
from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("submit", help="queue campaign files for the lab's workers (vmbisect worker)")
    p.add_argument("campaigns", type=Path, nargs="+", metavar="FILE", help="campaign files (YAML; docs/campaign.md)")
    p.add_argument("--priority", type=count(-1000, 1000), default=0,
                   help="higher runs first and gets a freed slot first (default 0)")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.commands.bisect import checked_file
    from orchestrator.queue.state import submit
    from orchestrator.store import Store

    specs = []
    for path in a.campaigns:
        try:
            specs.append(checked_file(path))
        except UserError as exc:
            others = "" if len(a.campaigns) == 1 else "; nothing was submitted"
            raise UserError(f"{path}: {exc}{others}") from None
    store = Store(a.store)
    for name, spec in specs:
        cid = submit(store, name, spec.KIND, spec.to_dict(), a.priority)
        print(f"campaign {cid} ({name}, {spec.KIND}) queued, priority {a.priority}")
    return 0
