"""What the queue's rows say, for every module of the queue: the states of a submitted
campaign, the store's clock, and whether a heartbeat row is still alive."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.store import WorkerRow

QUEUED, RUNNING, CANCELLED = "queued", "running", "cancelled"


def now() -> dt.datetime:
    """The store's clock: naive UTC, as every row's timestamps."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def beat_alive(row: WorkerRow, at: dt.datetime) -> bool:
    """Whether the runner's last heartbeat is younger than its timeout at `at`."""
    return (at - row.last_beat).total_seconds() < row.timeout_s
