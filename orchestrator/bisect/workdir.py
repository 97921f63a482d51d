"""Where a campaign keeps its files, and vmbisect's clone of its repository made in one place
(`clone`; the engine itself is wired with the real parts in orchestrator/wiring.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from orchestrator import paths
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.store import Store


def campaign_workdir(store: Store, campaign_id: int) -> Path:
    """vmbisect's clone and scratch files of one campaign. Ids are per store, so the store's key
    (a hash of its URL) is part of the path: two stores' campaign 1 never share a clone."""
    return paths.data_dir() / "campaigns" / store.key / str(campaign_id)


def clone(store: Store, campaign_id: int, repository: Path, note: Callable[[str], None] = lambda _m: None) -> GitBisect:
    """The campaign's clone of `repository` (a bare copy in its working directory; `prepare`
    makes or refreshes it; `note` hears when it is made again)."""
    workdir = campaign_workdir(store, campaign_id)
    return GitBisect(repository, workdir, note)

