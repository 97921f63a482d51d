"""Slots of a lab's hosts leased in the store, so controllers and workers on any machine that
share one store never put two guests on the same host CPUs (the pool's SlotLeases backend,
orchestrator/hosts/pool.py).

A lease is one row per host CPU the slot uses (cpulocks.units: `cpu<N>`; an unpinned slot of a
remote host: `slot<N>`; a kernel build's CPUs of this machine are a slot too, numbered -1 and
named `build`: orchestrator/hosts/buildcpus.py) of the machine (cpulocks.machine_key: SSH host and port, or the libvirt URI), keyed by
(machine, unit): two pools cannot both insert a row, and overlapping CPU sets exclude each
other. Each row names its owner (this pool) and expires `ttl_s` after its last renewal; a
thread of the pool renews them every ttl/3. A controller that dies (SIGKILL, power) stops
renewing, and its slots are free again once its rows expire. A pool that waits says so in
slot_waits (renewed the same way) until its wait ends (a wait over several slots or machines keeps
its place); a free slot goes to the waiters in orchestrator/queue/
fair.py's order. Before each wait the pool asks whether its campaign is to stop (cancelled,
its lock taken over by another worker, its worker stopping): then the wait raises
CampaignStopped, between two boots, and no guest of it is left.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.errors import UserError
from orchestrator.hosts.cpulocks import machine_key, units
from orchestrator.hosts.labfile import Host, Lab, Slot
from orchestrator.queue.fair import Waiter, may_take
from orchestrator.queue.rows import CANCELLED, now
from orchestrator.store import CampaignRow, LabSlotRow, Owner, QueueRow, SlotLeaseRow, SlotWaitRow

if TYPE_CHECKING:
    from orchestrator.hosts.leasing import SlotLeases
    from orchestrator.store import Store

DEFAULT_TTL_S = 30.0

# Set by a worker told to stop (SIGTERM, Ctrl-C): its campaigns stop before their next boot.
STOPPING = threading.Event()


class CampaignStopped(UserError):
    """The campaign is to stop before its next boot (cancelled, taken over, worker stopping)."""


def lease_ttl() -> float:
    """How long a lease outlives its owner's last renewal: VMBISECT_LEASE_TTL_S, else 30 s."""
    raw = os.environ.get("VMBISECT_LEASE_TTL_S", "")
    try:
        return float(raw) if raw else DEFAULT_TTL_S
    except ValueError:
        raise UserError(f"VMBISECT_LEASE_TTL_S: {raw!r} is not a number of seconds") from None


def register_slots(store: Store, lab: Lab) -> None:
    """The lab's slots in lab_slots (the dashboard lists them, leased or not). Two workers
    registering the same new slot at once: one inserts it, the other updates it after."""
    for attempt in range(3):
        try:
            with store.session() as s, s.begin():
                for host in lab.hosts:
                    for slot in (sl for sl in host.slots if sl.index >= 0):  # a build's lease is no slot
                        s.merge(LabSlotRow(machine=machine_key(host), slot=slot.index, host=host.name,
                                           cpus=",".join(map(str, slot.cpus))))
            return
        except IntegrityError:
            if attempt == 2:
                raise


def stop_reason(store: Store, campaign_id: int) -> str | None:
    """Why the campaign's run is to stop before its next boot, or None to go on."""
    if STOPPING.is_set():
        return "its worker is stopping; it stays queued for the next one"
    row = store.campaign(campaign_id)
    if row.state == CANCELLED:
        return "cancelled"
    holder = store.lock_owner(campaign_id)
    if holder is not None and holder != Owner.me():
        return f"its lock was taken over by pid {holder.pid} on host {holder.host}"
    return None


@dataclass(frozen=True)
class Held:
    machine: str
    units: tuple[str, ...]
    local: Any  # the flock backend's hold, or None


class DbLeases:
    """SlotLeases in the store for the pool of campaign `campaign_id` (None: no campaign; it
    waits at the lowest priority), with `local` (the flock backend) taken beside the rows."""

    poll_s = 1.0

    def __init__(self, store: Store, campaign_id: int | None, local: SlotLeases | None = None,
                 ttl_s: float | None = None, stop: Callable[[], str | None] | None = None) -> None:
        self.store, self.campaign_id, self.local = store, campaign_id, local
        self.ttl_s = lease_ttl() if ttl_s is None else ttl_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = stop if stop is not None else (
            (lambda: stop_reason(store, campaign_id)) if campaign_id is not None else (lambda: None))
        self._rank: tuple[int, dt.datetime] | None = None
        self._registered: set[str] = set()
        self._waiting = False
        self._closed = threading.Event()
        self._renewer: threading.Thread | None = None

    # -- the pool's protocol -----------------------------------------------------------------
    def waiting(self, hosts: Sequence[Host]) -> None:
        reason = self._stop()
        if reason is not None:
            raise CampaignStopped(f"id: campaign {self.campaign_id} stopped before its next boot: {reason}")
        self._start_renewing()
        self._register(hosts)
        machines = "\n".join(sorted({machine_key(h) for h in hosts}))
        priority, submitted = self._priority()
        at = now()
        with self.store.session() as s, s.begin():
            row = s.get(SlotWaitRow, self.owner)
            if row is None:
                s.add(SlotWaitRow(owner=self.owner, campaign_id=self.campaign_id, priority=priority,
                                  submitted=submitted, since=at, machines=machines, expires=self._expiry(at)))
            else:
                row.machines, row.expires = machines, self._expiry(at)
        self._waiting = True

    def take(self, host: Host, slot: Slot) -> Held | None:
        machine, mine = machine_key(host), units(host, slot)
        at = now()
        try:
            with self.store.session() as s, s.begin():
                if not self._my_turn(s, host, machine, at):
                    return None
                s.execute(delete(SlotLeaseRow).where(SlotLeaseRow.machine == machine, SlotLeaseRow.unit.in_(mine),
                                                     SlotLeaseRow.expires <= at))
                s.add_all(SlotLeaseRow(machine=machine, unit=u, host=host.name, slot=slot.index,
                                       cpus=",".join(map(str, slot.cpus)), campaign_id=self.campaign_id,
                                       owner=self.owner, expires=self._expiry(at)) for u in mine)
                s.flush()
        except IntegrityError:  # another pool inserted one of those units first
            return None
        local = None
        if self.local is not None:
            local = self.local.take(host, slot)
            if local is None:  # a controller of another store on this machine holds those CPUs
                self._drop(machine, mine)
                return None
        return Held(machine, tuple(mine), local)

    def give(self, held: Held) -> None:
        self._drop(held.machine, list(held.units))
        if self.local is not None and held.local is not None:
            self.local.give(held.local)

    def served(self) -> None:
        if self.local is not None:
            self.local.served()
        if self._waiting:
            with self.store.session() as s, s.begin():
                s.execute(delete(SlotWaitRow).where(SlotWaitRow.owner == self.owner))
            self._waiting = False

    def close(self) -> None:
        self._closed.set()
        with self.store.session() as s, s.begin():
            s.execute(delete(SlotLeaseRow).where(SlotLeaseRow.owner == self.owner))
            s.execute(delete(SlotWaitRow).where(SlotWaitRow.owner == self.owner))
        if self.local is not None:
            self.local.close()

    # -- inside ------------------------------------------------------------------------------
    def _expiry(self, at: dt.datetime) -> dt.datetime:
        return at + dt.timedelta(seconds=self.ttl_s)

    def _priority(self) -> tuple[int, dt.datetime]:
        """The campaign's priority and submission (a campaign run outside the queue: priority
        0, submitted when it was created)."""
        if self._rank is None:
            with self.store.session() as s:
                queued = s.get(QueueRow, self.campaign_id) if self.campaign_id is not None else None
                row = s.get(CampaignRow, self.campaign_id) if self.campaign_id is not None else None
            if queued is not None:
                self._rank = (queued.priority, queued.submitted)
            else:
                self._rank = (0 if row is not None else -(2 ** 31), row.created if row is not None else now())
        return self._rank

    def _my_turn(self, s: Any, host: Host, machine: str, at: dt.datetime) -> bool:
        """Whether this pool's turn has come for one of the machine's free slots."""
        held = set(s.scalars(select(SlotLeaseRow.unit).where(SlotLeaseRow.machine == machine,
                                                             SlotLeaseRow.expires > at)))
        free = sum(1 for slot in host.slots if not held & set(units(host, slot)))
        waits = [Waiter(w.owner, w.priority, w.submitted, w.since)
                 for w in s.scalars(select(SlotWaitRow).where(SlotWaitRow.expires > at))
                 if machine in w.machines.split("\n")]
        if not any(w.owner == self.owner for w in waits):
            return free > len(waits)
        return may_take(self.owner, waits, free)

    def _drop(self, machine: str, mine: list[str]) -> None:
        with self.store.session() as s, s.begin():
            s.execute(delete(SlotLeaseRow).where(SlotLeaseRow.machine == machine, SlotLeaseRow.unit.in_(mine),
                                                 SlotLeaseRow.owner == self.owner))

    def _register(self, hosts: Sequence[Host]) -> None:
        new = [h for h in hosts if h.name not in self._registered]
        if new:
            register_slots(self.store, Lab(tuple(new)))
            self._registered.update(h.name for h in new)

    def _start_renewing(self) -> None:
        if self._renewer is None:
            self._renewer = threading.Thread(target=self._renew, name=f"leases-{self.owner}", daemon=True)
            self._renewer.start()

    def _renew(self) -> None:
        while not self._closed.wait(self.ttl_s / 3):
            try:
                at = now()
                with self.store.session() as s, s.begin():
                    s.execute(update(SlotLeaseRow).where(SlotLeaseRow.owner == self.owner).values(
                        expires=self._expiry(at)))
                    s.execute(update(SlotWaitRow).where(SlotWaitRow.owner == self.owner).values(
                        expires=self._expiry(at)))
            except Exception:  # noqa: BLE001 - the store is away for a moment: the next renewal tries again
                continue
