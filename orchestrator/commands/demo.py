"""`vmbisect demo`: the built-in demo, a real bisection of the shipped series (make demo)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from orchestrator.commands.storeopts import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="bisect the built-in demo series on linux-source-6.1 (real builds and guests)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    """The demo's campaign run as any campaign (kinds/run.py writes its reports to
    reports/demo-<id>.md and .html); the answer checked against the shipped culprit."""
    import yaml

    from orchestrator.campaign.file import load_campaign
    from orchestrator.demo import CAMPAIGN, ensure_demo_repo
    from orchestrator.kinds.bisect_kind import preflight
    from orchestrator.kinds.run import execute, report_files
    from orchestrator.kinds.specs import BisectSpec
    from orchestrator.kinds.table import record
    from orchestrator.results import BisectResult
    from orchestrator.store import Store

    started = time.monotonic()
    demo = ensure_demo_repo()
    campaign = load_campaign(CAMPAIGN)
    preflight(campaign)
    store = Store(a.store)
    campaign_id = record(store, campaign.name, BisectSpec.of(yaml.safe_load(CAMPAIGN.read_text()), campaign))
    execute(store, campaign_id, uri=a.uri, as_json=a.json)
    row = store.campaign(campaign_id)
    named = BisectResult.from_dict(row.result).culprit
    md, page = report_files(row)
    verdict = "the shipped culprit" if named == demo.culprit else f"NOT the shipped culprit {demo.culprit}"
    print(f"demo: named {named or 'no single commit'}: {verdict}")
    print(f"demo: reports {md} and {page}")
    print(f"demo: wall time {(time.monotonic() - started) / 60:.1f} min")
    print(f"demo: {BisectResult.from_dict(row.result).boots} guest boots")
    return 0 if named == demo.culprit else 1
