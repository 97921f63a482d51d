"""Where a queued campaign waits for a worker: pgqueuer's job table on a PostgreSQL store,
the store's own campaign_queue table on SQLite (one machine)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.store import Store


def enqueue(store: Store, campaign_id: int, priority: int) -> None:
    """The campaign (its campaign_queue row written) handed to the workers."""
