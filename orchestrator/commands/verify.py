"""`vmbisect verify CAMPAIGN.yaml COMMIT`: is COMMIT the cause? It is measured against its parent
(and, with --revert-on, that tip with COMMIT reverted against the tip), booted interleaved, on
the campaign file's repository, kernel recipe, guest, workload and metric; the answer is one
line (confirmed / not seen / cannot tell with these boots, and how many would) and the
parent-against-commit table in the mmtests layout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from orchestrator.commands.bisect import add_store_option


def add_parser(sub: Any) -> None:
    p = sub.add_parser("verify", help="measure a suspect commit against its parent (and its revert on a tip)")
    p.add_argument("campaign", type=Path, help="campaign file (YAML): repository, kernel, guest, workload, metric")
    p.add_argument("commit", help="the suspect commit")
    p.add_argument("--revert-on", default="", metavar="REV",
                   help="also measure REV with the commit reverted against REV")
    p.add_argument("--boots", type=int, default=0, help="boots per side (default: 4, or boots_per_commit if larger)")
    add_store_option(p)


def execute(store: Any, campaign_id: int, uri: str, take_over: bool = False) -> int:
    """Run (or resume) a stored verification under the campaign's lock, as a bisection runs."""
    from orchestrator.bisect.verify import verify_commit
    from orchestrator.commands.bisect import paused_on_infra_error
    from orchestrator.progress import json_lines
    from orchestrator.specs import VerifySpec, stored
    from orchestrator.wiring import engine_for

    spec = stored(store.campaign(campaign_id))
    assert isinstance(spec, VerifySpec)
    campaign = spec.campaign
    with store.lock(campaign_id, take_over), paused_on_infra_error(store, campaign_id):
        engine = engine_for(campaign, store, campaign_id, uri, json_lines(sys.stderr))
        print(f"vmbisect: verification {campaign_id}; resume with: vmbisect resume {campaign_id}", file=sys.stderr)
        result = verify_commit(engine, campaign_id, spec.commit, spec.boots, spec.revert_on)
    print(result.answer.line)
    if result.revert:
        print(result.revert)
    print("\n".join(table(result, campaign.metric.name, engine.direction)))
    return 0


def table(result: Any, metric: str, direction: str) -> list[str]:
    """Parent against commit in the mmtests layout, one value per boot."""
    from orchestrator.compare.model import VariantInfo
    from orchestrator.compare.table import MetricMeta, Point, build
    from orchestrator.compare.text import metric_block

    p, c = result.parent, result.commit
    variants = [VariantInfo(p[:12], f"parent {p}"), VariantInfo(c[:12], f"commit {c}")]
    samples = {p[:12]: {"": {metric: result.boot_means[p]}}, c[:12]: {"": {metric: result.boot_means[c]}}}
    comparison = build(f"{c[:12]} against its parent", metric, None, variants, [Point("", None)],
                       {metric: MetricMeta("", direction)}, samples, [metric])
    return metric_block(comparison, metric)


def run(a: argparse.Namespace) -> int:
    from orchestrator.campaign import parse_campaign, read_campaign_file
    from orchestrator.commands.bisect import preflight
    from orchestrator.errors import UserError
    from orchestrator.specs import BisectSpec, VerifySpec, record
    from orchestrator.store import Store

    if a.boots and a.boots < 2:
        raise UserError(f"boots: must be at least 2, got {a.boots}")
    raw = read_campaign_file(a.campaign)
    campaign = parse_campaign(raw, base=a.campaign.parent, source=a.campaign)
    preflight(campaign)
    store = Store(a.store)
    boots = a.boots or max(4, campaign.boots_per_commit)
    spec = VerifySpec(BisectSpec.of(raw, campaign), a.commit, a.revert_on, boots)
    campaign_id = record(store, campaign.name, spec)
    return execute(store, campaign_id, a.uri)
