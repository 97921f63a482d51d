"""Where a campaign keeps its files (the engine itself is wired with the real parts in
orchestrator/wiring.py)."""

from __future__ import annotations

from pathlib import Path

from orchestrator import paths
from orchestrator.store import Store


def campaign_workdir(store: Store, campaign_id: int) -> Path:
    """vmbisect's clone and scratch files of one campaign. Ids are per store, so the store's key
    (a hash of its URL) is part of the path: two stores' campaign 1 never share a clone."""
    return paths.data_dir() / "campaigns" / store.key / str(campaign_id)

