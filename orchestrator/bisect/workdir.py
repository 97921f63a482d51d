"""Where a bisection keeps its files, and what the store keeps of its campaign file (the
engine itself is wired with the real parts in orchestrator/wiring.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from orchestrator import paths
from orchestrator.campaign import Campaign
from orchestrator.store import Store


def campaign_workdir(store: Store, campaign_id: int) -> Path:
    """vmbisect's clone and scratch files of one campaign. Ids are per store, so the store's key
    (a hash of its URL) is part of the path: two stores' campaign 1 never share a clone."""
    return paths.data_dir() / "campaigns" / store.key / str(campaign_id)


def stored_spec(raw: Mapping[str, Any], campaign: Campaign) -> dict[str, Any]:
    """What the store keeps of a bisection's campaign file (orchestrator/specs.py BisectSpec)."""
    from orchestrator.specs import BisectSpec

    return BisectSpec.of(raw, campaign).to_dict()
