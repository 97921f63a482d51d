"""The profile diff of a campaign from its stored profile row (Store.profiles; written by
orchestrator/explain/profile_boots.py), for the reports: the last profile of parent against
culprit, or the note saying why none could be taken."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from orchestrator.explain.perfscript import parse_folded
from orchestrator.explain.profile import Profile, ProfileDiff, diff


class ProfileStore(Protocol):
    def profiles(self, campaign_id: int) -> Sequence[Any]: ...  # rows with parent, culprit, event, stacks, note


@dataclass(frozen=True)
class Profiled:
    """What the reports show: the diff, or why there is none."""

    diff: ProfileDiff | None
    note: str = ""


def of_row(row: Any) -> Profiled:
    sides = row.stacks or {}
    if row.note or not sides.get("parent") or not sides.get("culprit"):
        return Profiled(None, row.note or "the profile boots gave no samples")
    parent = Profile(row.parent, row.event, tuple(parse_folded(t) for t in sides["parent"]))
    culprit = Profile(row.culprit, row.event, tuple(parse_folded(t) for t in sides["culprit"]))
    return Profiled(diff(parent, culprit))


def collect(store: ProfileStore, campaign_id: int, parent: str, culprit: str) -> Profiled | None:
    """The last profile of `parent` against `culprit`; None when none was asked for."""
    rows = [r for r in store.profiles(campaign_id) if r.parent == parent and r.culprit == culprit]
    return of_row(rows[-1]) if rows else None
