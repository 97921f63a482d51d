"""`vmbisect bisect --from-compare ID ROW [--write-campaign FILE]`: the campaign that bisects
a row of a stored comparison that regressed (orchestrator/compare/tobisect.py), written to a
file, or checked and started like a campaign file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import UserError

if TYPE_CHECKING:
    from orchestrator.store import Store


def add_options(p: argparse.ArgumentParser) -> None:
    from orchestrator.commands.argtypes import output_file

    p.add_argument("--from-compare", nargs=2, metavar=("ID", "ROW"),
                   help="bisect a row of comparison ID that regressed (the commands compare prints; docs/compare.md)")
    p.add_argument("--write-campaign", type=output_file, metavar="FILE",
                   help="with --from-compare: write the campaign file (- for standard output) and start nothing")


def campaign_text(store: Store, compare_id: str, key: str) -> str:
    """The campaign file for row `key` of stored comparison `compare_id`."""
    from orchestrator.compare.collect import comparison, stored_runs
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.compare.tobisect import campaign_text as text
    from orchestrator.kinds.table import stored

    compares = [r.id for r in store.campaigns() if r.kind == "compare"]
    listed = ", ".join(map(str, compares)) or "none in this store"
    if not compare_id.isdigit() or int(compare_id) not in compares:
        raise UserError(f"from-compare: ID {compare_id!r} is not a comparison; comparisons: {listed}")
    cid = int(compare_id)
    plan = plan_from_spec(stored(store.campaign(cid)))
    return text(comparison(plan, stored_runs(store, cid)), plan, cid, key)


def run(a: argparse.Namespace) -> int:
    import yaml

    from orchestrator.campaign.file import parse_campaign
    from orchestrator.kinds.bisect_kind import check_range, preflight
    from orchestrator.kinds.run import execute
    from orchestrator.kinds.specs import BisectSpec
    from orchestrator.kinds.table import record
    from orchestrator.store import Store

    if a.campaign is not None:
        raise UserError("campaign: give a campaign file or --from-compare ID ROW, not both")
    store = Store(a.store, create=False)
    text = campaign_text(store, *a.from_compare)
    if a.write_campaign is not None:
        _write(text, a.write_campaign)
        return 0
    raw: dict[str, Any] = yaml.safe_load(text)
    campaign = parse_campaign(raw)
    preflight(campaign)
    check_range(campaign)
    campaign_id = record(store, campaign.name, BisectSpec.of(raw, campaign))
    return execute(store, campaign_id, uri=a.uri, as_json=a.json)


def _write(text: str, path: Path) -> None:
    if str(path) == "-":
        sys.stdout.write(text)
        return
    try:
        path.write_text(text)
    except OSError as exc:
        raise UserError(f"write-campaign: cannot write {path}: {exc.strerror}") from None
    print(f"campaign file {path}; start it with: vmbisect bisect {path}", file=sys.stderr)
