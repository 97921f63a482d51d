"""`vmbisect bisect CAMPAIGN.yaml`: run a bisection campaign to its culprit."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.bisect.engine import Outcome
    from orchestrator.campaign import Campaign
    from orchestrator.store import Store


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", help="SQLAlchemy URL (default: SQLite in the data directory)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bisect", help="bisect a kernel range on a metric, as a campaign file says")
    p.add_argument("campaign", type=Path, help="campaign file (YAML; see docs/campaign.md)")
    p.add_argument("--json", action="store_true", help="progress as JSON lines instead of a live view")
    add_store_option(p)


def execute(campaign: Campaign, store: Store, campaign_id: int, uri: str, as_json: bool) -> int:
    """Run (or resume) a stored campaign with the real parts; scipy, SQLAlchemy and libvirt are
    imported here, not at start-up, so other commands stay quick."""
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.bisect.session import campaign_workdir, run_campaign
    from orchestrator.progress import LiveView, json_lines

    print(f"vmbisect: campaign {campaign_id} ({campaign.name}); resume with: vmbisect resume {campaign_id}",
          file=sys.stderr)
    if as_json:
        outcome = run_campaign(campaign, store, campaign_id, uri, json_lines())
    else:
        gb = GitBisect(campaign.repository, campaign_workdir(campaign_id))
        gb.prepare()
        total = gb.count_between(gb.resolve(campaign.good, "good"), gb.resolve(campaign.bad, "bad"),
                                 campaign.first_parent)
        with LiveView(total) as view:
            outcome = run_campaign(campaign, store, campaign_id, uri, view)
    print(summary(outcome, campaign_id))
    return 0


def summary(outcome: Outcome, campaign_id: int) -> str:
    from orchestrator.bisect.engine import confidence_words

    if outcome.kind == "found":
        head = f"culprit: {outcome.culprit}\n{confidence_words(outcome.confidence, [])}"
        for key in ("confirmation", "revert"):
            part = outcome.confirmation.get(key)
            if part:
                head += f"\n{key}: {part['verdict']}" + ("" if part["text"].startswith(part["verdict"])
                                                         else f": {part['text']}")
    elif outcome.kind == "inconclusive":
        head = "inconclusive: the first bad commit is one of: " + " ".join(c[:12] for c in outcome.candidates)
    else:
        head = "only skipped commits left; the first bad commit is one of: " + " ".join(
            c[:12] for c in outcome.candidates)
    notes = "".join(f"\nnote: {n}" for n in outcome.notes)
    return f"{head}{notes}\nreport: vmbisect report {campaign_id} --format md"


def run(a: argparse.Namespace) -> int:
    import yaml

    from orchestrator.bisect.session import stored_spec
    from orchestrator.campaign import load_campaign
    from orchestrator.store import Store

    campaign = load_campaign(a.campaign)
    store = Store(a.store)
    raw = yaml.safe_load(a.campaign.read_text())
    campaign_id = store.new_campaign(campaign.name, stored_spec(raw, campaign))
    return execute(campaign, store, campaign_id, a.uri, a.json)
