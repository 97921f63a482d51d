"""The one writer of a campaign's state (the store's `state` and `result` columns): every
search, kind, run path and queue runner says how a campaign stopped or ended through here, so
a state is always written with its typed reason or result."""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.results import Stopped


class StateStore(Protocol):
    def set_state(self, campaign_id: int, state: str, result: Any = None) -> None: ...


def stop(store: StateStore, campaign_id: int, stopped: Stopped) -> None:
    """The campaign stopped before its answer (refused, failed, paused): its state and why."""
    store.set_state(campaign_id, stopped.stop.value, stopped.to_dict())


def end(store: StateStore, campaign_id: int, result: Any) -> None:
    """The campaign answered: state done, its typed result (anything with `to_dict`) stored."""
    store.set_state(campaign_id, "done", result.to_dict())


def running(store: StateStore, campaign_id: int) -> None:
    """The campaign goes on (a pause's reason is no longer why)."""
    store.set_state(campaign_id, "running", {})
