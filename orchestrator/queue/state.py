"""What the lab is doing, read from the store (the dashboard's view, `vmbisect serve`), and the
two changes a person may make to the queue: cancel a campaign, put one back in the queue.

    lab_state(store)          the queue, the workers with their last heartbeat, the lab's slots
    cancel(store, id)         a queued campaign never starts; a running one stops at its next
                              boot boundary (its worker's pool refuses the next slot: no VM left)
    requeue(store, id)        a paused, failed or cancelled campaign back in the queue
    submit(store, name, kind, spec, priority)   a new campaign, queued

A campaign's state is the campaigns row's: queued (submitted, waiting for a worker), running,
done, refused, failed, paused (the host's fault), cancelled.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from orchestrator.errors import UserError
from orchestrator.queue.rows import CANCELLED, QUEUED, RUNNING, beat_alive, now
from orchestrator.store import CampaignRow, LabSlotRow, QueueRow, SlotLeaseRow, WorkerRow

if TYPE_CHECKING:
    from orchestrator.store import Store

CANCELLABLE = (QUEUED, RUNNING, "paused")
REQUEUEABLE = ("paused", "failed", CANCELLED)


@dataclass(frozen=True)
class QueuedCampaign:
    campaign_id: int
    name: str
    kind: str
    priority: int
    submitted: dt.datetime
    state: str  # queued|running|done|refused|failed|paused|cancelled
    worker: str | None  # the worker running it now


@dataclass(frozen=True)
class WorkerBeat:
    name: str
    machine: str
    pid: int
    campaign_id: int | None
    last_beat: dt.datetime
    alive: bool


@dataclass(frozen=True)
class SlotLease:
    host: str
    slot: int
    cpus: tuple[int, ...]
    campaign_id: int | None
    owner: str | None
    expires: dt.datetime | None


@dataclass(frozen=True)
class LabState:
    queue: list[QueuedCampaign]
    workers: list[WorkerBeat]
    slots: list[SlotLease]


def cpus_of(text: str) -> tuple[int, ...]:
    return tuple(int(c) for c in text.split(",") if c.strip())


def lab_state(store: Store) -> LabState:
    """The queue (waiting and running first, by priority then submission; then the rest, newest
    first), every registered worker, and every slot of the workers' labs with its lease (a slot
    leased by a pool that is no longer renewing it shows free). Read-only."""
    at = now()
    with store.session() as s:
        rows = s.execute(select(QueueRow, CampaignRow).join(CampaignRow, CampaignRow.id == QueueRow.campaign_id)).all()
        workers = list(s.scalars(select(WorkerRow).order_by(WorkerRow.name)))
        slots = list(s.scalars(select(LabSlotRow).order_by(LabSlotRow.host, LabSlotRow.slot)))
        leases = list(s.scalars(select(SlotLeaseRow).where(SlotLeaseRow.expires > at)))
    queue = [QueuedCampaign(c.id, c.name, c.kind, q.priority, q.submitted, c.state,
                            q.worker if c.state == RUNNING else None) for q, c in rows]
    live = [q for q in queue if q.state in (QUEUED, RUNNING)]
    live.sort(key=lambda q: (q.state != RUNNING, -q.priority, q.submitted, q.campaign_id))
    rest = sorted((q for q in queue if q.state not in (QUEUED, RUNNING)), key=lambda q: q.submitted, reverse=True)
    beats = [WorkerBeat(w.name, w.machine, w.pid, w.campaign_id, w.last_beat, beat_alive(w, at)) for w in workers]
    by_slot = {(lease.machine, lease.slot): lease for lease in leases}
    out = []
    for slot in slots:
        lease = by_slot.pop((slot.machine, slot.slot), None)
        out.append(SlotLease(slot.host, slot.slot, cpus_of(slot.cpus), lease.campaign_id if lease else None,
                             lease.owner if lease else None, lease.expires if lease else None))
    for lease in by_slot.values():  # a slot leased by a controller whose lab no worker registered
        out.append(SlotLease(lease.host, lease.slot, cpus_of(lease.cpus), lease.campaign_id, lease.owner,
                             lease.expires))
    return LabState(live + rest, beats, out)


def _campaign_in(s: Session, campaign_id: int, states: tuple[str, ...], which: str) -> CampaignRow:
    """The campaign's row, locked for the change, if its state is one of `states`; else a
    one-line UserError saying `which` states can be changed."""
    row = s.get(CampaignRow, campaign_id, with_for_update=True)
    if row is None:
        raise UserError(f"id: no campaign with id {campaign_id}; see `vmbisect status`")
    if row.state not in states:
        raise UserError(f"id: campaign {campaign_id} is {row.state}; {which}")
    return row


def cancel(store: Store, campaign_id: int) -> None:
    """A queued (or paused) campaign is cancelled at once; a running one stops at its next boot
    boundary: its worker's pool refuses it the next slot, so no guest is left running.
    UserError when the campaign has ended already, or runs in the foreground (not queued)."""
    with store.session() as s, s.begin():
        row = _campaign_in(s, campaign_id, CANCELLABLE, "only a queued, running or paused one can be cancelled")
        if row.state == RUNNING and s.get(QueueRow, campaign_id) is None:
            raise UserError(f"id: campaign {campaign_id} runs in the foreground (vmbisect bisect or resume), not "
                            "from the queue; stop it with Ctrl-C where it runs")
        row.state = CANCELLED


def requeue(store: Store, campaign_id: int) -> None:
    """A paused, failed or cancelled campaign back in the queue, behind the campaigns of its
    priority submitted before now; it goes on from what it measured. UserError otherwise."""
    from orchestrator.queue.jobs import enqueue

    with store.session() as s, s.begin():
        row = _campaign_in(s, campaign_id, REQUEUEABLE, "only a paused, failed or cancelled one can be queued again")
        queued = s.get(QueueRow, campaign_id)
        priority = queued.priority if queued is not None else 0
        if queued is None:
            s.add(QueueRow(campaign_id=campaign_id, priority=priority, submitted=now()))
        else:
            queued.submitted, queued.worker = now(), None
        row.state = QUEUED
    enqueue(store, campaign_id, priority)


def submit(store: Store, name: str, kind: str, spec: Mapping[str, Any], priority: int) -> int:
    """A new campaign of `kind` (its typed spec wrote `spec`: orchestrator/kinds/table.py) in
    state queued, with its queue row, in one transaction (a worker never sees half of it);
    handed to the workers. Its id."""
    import json

    from orchestrator.queue.jobs import enqueue

    with store.session() as s, s.begin():
        row = CampaignRow(name=name, kind=kind, spec=json.dumps(dict(spec), default=str), state=QUEUED)
        s.add(row)
        s.flush()
        s.add(QueueRow(campaign_id=row.id, priority=priority, submitted=now()))
    enqueue(store, row.id, priority)
    return row.id
