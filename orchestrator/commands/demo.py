"""`vmbisect demo`: the built-in demo, a real bisection of the shipped series (make demo)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from orchestrator.commands.bisect import add_store_option, execute, preflight


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="bisect the built-in demo series on linux-source-6.1 (real builds and guests)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    import yaml

    from orchestrator import paths
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.bisect.workdir import campaign_workdir, stored_spec
    from orchestrator.campaign import load_campaign
    from orchestrator.demo import CAMPAIGN, ensure_demo_repo
    from orchestrator.report import collect, render_markdown
    from orchestrator.report_html import render_html
    from orchestrator.store import Store

    started = time.monotonic()
    demo = ensure_demo_repo()
    campaign = load_campaign(CAMPAIGN)
    preflight(campaign)
    store = Store(a.store)
    campaign_id = store.new_campaign(campaign.name, stored_spec(yaml.safe_load(CAMPAIGN.read_text()), campaign))
    execute(campaign, store, campaign_id, a.uri, a.json)
    gb = GitBisect(campaign.repository, campaign_workdir(store, campaign_id))
    report = collect(store, campaign_id, campaign.metric.name, choose_workload(campaign).direction, gb.info)
    out = paths.data_dir() / "reports"
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / f"demo-{campaign_id}.md", out / f"demo-{campaign_id}.html"
    md.write_text(render_markdown(report))
    page.write_text(render_html(report))
    named = report.culprit.sha if report.culprit else ""
    verdict = "the shipped culprit" if named == demo.culprit else f"NOT the shipped culprit {demo.culprit}"
    print(f"demo: named {named or 'no single commit'}: {verdict}")
    print(f"demo: reports {md} and {page}")
    print(f"demo: wall time {(time.monotonic() - started) / 60:.1f} min")
    return 0 if named == demo.culprit else 1
