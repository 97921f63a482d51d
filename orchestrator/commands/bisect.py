"""`vmbisect bisect CAMPAIGN.yaml`: run a bisection campaign to its culprit."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bisect", help="bisect a kernel range on a metric, as a campaign file says")
    from orchestrator.commands.fromcompare import add_options

    p.add_argument("campaign", type=Path, nargs="?", help="campaign file (YAML; see docs/campaign.md; with kind: "
                   "settings, docs/settings-bisect.md)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    add_options(p)
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.kinds.run import execute
    from orchestrator.kinds.table import record
    from orchestrator.store import Store

    if a.from_compare is not None:
        from orchestrator.commands.fromcompare import run as from_compare
        return from_compare(a)
    if a.campaign is None or a.write_campaign is not None:
        raise UserError("campaign: give a campaign file, or --from-compare ID ROW (which --write-campaign needs)")
    name, spec = checked_file(a.campaign)
    store = Store(a.store)
    campaign_id = record(store, name, spec)
    return execute(store, campaign_id, uri=a.uri, as_json=a.json)


def checked_file(path: Path) -> tuple[str, Any]:
    """A campaign file checked completely before anything is recorded: its name and its typed
    spec. Without a `kind:` key a commit bisection (orchestrator/kinds/bisect_kind.py); with one, the
    kind table's (`kind: settings`, ...). `bisect` and `submit` share it."""
    from orchestrator.campaign.file import read_campaign_file
    from orchestrator.errors import choices_error
    from orchestrator.kinds import bisect_kind
    from orchestrator.kinds.table import FILES

    raw = read_campaign_file(path)
    if isinstance(raw, dict) and "kind" in raw:
        kind = raw["kind"]
        if kind not in FILES:
            raise choices_error("kind", kind, [*FILES, "(none: a commit bisection)"])
        read = FILES[kind].file
        assert read is not None  # FILES holds the kinds a file starts
        spec = read(raw, path)
        return spec.campaign.name, spec
    spec = bisect_kind.from_file(raw, path)
    return spec.campaign.name, spec
