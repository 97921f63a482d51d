"""Start or resume a campaign with the real parts (the CLI's entry to the engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from orchestrator import paths
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.adapters import choose_workload
from orchestrator.bisect.engine import Engine, Outcome
from orchestrator.campaign import Campaign
from orchestrator.hosts.lab import local_lab
from orchestrator.ports import Event
from orchestrator.store import Store


def campaign_workdir(store: Store, campaign_id: int) -> Path:
    """vmbisect's clone and scratch files of one campaign. Ids are per store, so the store's key
    (a hash of its URL) is part of the path: two stores' campaign 1 never share a clone."""
    return paths.data_dir() / "campaigns" / store.key / str(campaign_id)


def stored_spec(raw: Mapping[str, Any], campaign: Campaign) -> dict[str, Any]:
    """What the store keeps of a bisection's campaign file (orchestrator/specs.py BisectSpec)."""
    from orchestrator.specs import BisectSpec

    return BisectSpec.of(raw, campaign).to_dict()


def engine_for(campaign: Campaign, store: Store, campaign_id: int, uri: str,
               on_event: Callable[[Event], None]) -> Engine:
    """The engine over the real parts: git in vmbisect's clone, the kernel builder (which also
    builds the reverts made in that clone), guests of this machine running the campaign's
    workload (orchestrator/wiring.py)."""
    from orchestrator import wiring

    choice = choose_workload(campaign)
    vcs = GitBisect(campaign.repository, campaign_workdir(store, campaign_id))
    kernels, measurer = wiring.bisection(campaign, choice, vcs.repo, wiring.open_pool(local_lab(uri)))
    return Engine(campaign, choice.direction, vcs, kernels, measurer, store, on_event)


def run_campaign(campaign: Campaign, store: Store, campaign_id: int, uri: str,
                 on_event: Callable[[Event], None]) -> Outcome:
    return engine_for(campaign, store, campaign_id, uri, on_event).run(campaign_id)
