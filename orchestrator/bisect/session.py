"""Start or resume a campaign with the real parts (the CLI's entry to the engine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from orchestrator import paths
from orchestrator.backends.factory import real_launcher
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.adapters import BuilderPort, MeasurerPort, choose_workload
from orchestrator.bisect.engine import Engine, Event, Outcome
from orchestrator.campaign import Campaign
from orchestrator.kbuild.builder import default_builder
from orchestrator.kbuild.recipe import parse_recipe
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
    builds the reverts made in that clone), libvirt guests and the campaign's workload."""
    choice = choose_workload(campaign)
    recipe = parse_recipe(list(campaign.kernel.config) + ([f"cc={campaign.kernel.cc}"] if campaign.kernel.cc else []))
    launcher = real_launcher(uri)
    accel = launcher.choose_accel(campaign.accel).accel
    vcs = GitBisect(campaign.repository, campaign_workdir(store, campaign_id))
    builder = BuilderPort(default_builder(), campaign.repository, recipe, campaign.timeouts.build_s, vcs.repo)
    return Engine(campaign, choice.direction, vcs, builder,
                  MeasurerPort(launcher, campaign, choice, accel), store, on_event)


def run_campaign(campaign: Campaign, store: Store, campaign_id: int, uri: str,
                 on_event: Callable[[Event], None]) -> Outcome:
    return engine_for(campaign, store, campaign_id, uri, on_event).run(campaign_id)
