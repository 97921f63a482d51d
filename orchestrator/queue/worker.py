"""A queue worker: runners that take queued campaigns and run each through the one run path
(kinds/run.py run_stored) on the worker's lab, one campaign per runner at a time.

Each runner has a row in queue_workers (`<machine>:<pid>/<n>`) whose heartbeat a thread renews
every timeout/4 while it lives, with the pgqueuer job's heartbeat of the campaign it runs. A
runner that dies stops both: after `heartbeat_timeout` another runner (of any worker, on any
machine) takes the campaign again and resumes it: the campaign's lock in the store is taken
over from the dead runner (its process on this machine is gone, or its heartbeat on another
machine stopped), and the store's runs and samples are where it goes on from, so nothing
measured is measured again. A runner never takes over the lock of a runner that still beats;
a runner whose lock was taken over anyway (it was frozen longer than the timeout) stops before
its next boot (orchestrator/queue/leases.py). Each takeover is recorded as it happens
(orchestrator/queue/takeovers.py); the dead runner stays listed, lost, until then.

A worker told to stop (SIGTERM, Ctrl-C) lets each campaign reach its next boot boundary, then
puts it back in the queue (state queued) for the next worker.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from sqlalchemy import delete, select, update

from orchestrator.errors import UserError, VmbisectError
from orchestrator.exits import exit_code
from orchestrator.hosts.labfile import lab_for
from orchestrator.queue import leases, takeovers
from orchestrator.queue.jobs import Jobs, Ticket, jobs_for, shared
from orchestrator.queue.rows import QUEUED, RUNNING, beat_alive, now
from orchestrator.results import StopKind, Stopped
from orchestrator.states import stop
from orchestrator.store import CampaignRow, QueueRow, WorkerRow, process_start

if TYPE_CHECKING:
    from orchestrator.ports import Event
    from orchestrator.store import Store


# How a runner runs a stored campaign: kinds/run.py run_stored (store, id, lab=, on_event=,
# take_over=, uri=) -> exit code; the worker command passes it in (kinds/ is above this package).
RunStored = Callable[..., int]


@dataclass(frozen=True)
class Config:
    run: RunStored
    lab: Path
    uri: str = "qemu:///system"
    heartbeat_timeout_s: float = 60.0
    once: bool = False  # exit once nothing submitted waits or runs
    poll_s: float = 2.0  # how often an idle runner looks at the queue
    # The most slots each campaign measures on at once: 1 when several runners share the lab
    # (the lease gives each a host); None: one runner gives its campaign every slot of the lab.
    campaign_slots: int | None = None


AWAY_S = 30.0  # how long a runner waits when the store cannot be reached


def say(message: str) -> None:
    print(f"vmbisect worker: {message}", file=sys.stderr, flush=True)


def check_machines(store: Store, machine: str) -> None:
    """A SQLite store is one machine's: a worker is refused while a worker of another machine
    beats in it (a store file on a shared file system)."""
    if shared(store):
        return
    at = now()
    with store.session() as s:
        others = [w for w in s.scalars(select(WorkerRow)) if w.machine != machine and beat_alive(w, at)]
    if others:
        raise UserError(f"store: {store.engine.url.render_as_string()} is SQLite, one machine's store, and worker "
                        f"{others[0].name} on machine {others[0].machine} uses it; workers on several machines "
                        "share a PostgreSQL store: --store postgresql://USER@HOST/DB (docs/lab.md)")


class Runner:
    def __init__(self, store: Store, jobs: Jobs, name: str, config: Config) -> None:
        self.store, self.jobs, self.name, self.config = store, jobs, name, config
        self.ticket: Ticket | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    # -- the heartbeat -----------------------------------------------------------------------
    def register(self) -> None:
        with self.store.session() as s, s.begin():
            s.merge(WorkerRow(name=self.name, machine=socket.gethostname(), pid=os.getpid(),
                              pid_started=process_start(os.getpid()), lab=str(self.config.lab), campaign_id=None,
                              started=now(), last_beat=now(), timeout_s=self.config.heartbeat_timeout_s))

    def beat(self) -> None:
        with self._lock:
            ticket = self.ticket
        with self.store.session() as s, s.begin():
            s.execute(update(WorkerRow).where(WorkerRow.name == self.name).values(
                last_beat=now(), campaign_id=ticket.campaign_id if ticket else None))
        if ticket is not None:
            self.jobs.beat(ticket)

    def _beating(self) -> None:
        while not self._stop.wait(self.config.heartbeat_timeout_s / 4):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - the store away for a moment: beat again next time
                say(f"{self.name}: heartbeat failed: {exc}")

    # -- the loop ----------------------------------------------------------------------------
    def serve(self) -> None:
        """Take and run campaigns until the worker stops (or, with `once`, until nothing
        submitted waits or runs)."""
        self.register()
        beater = threading.Thread(target=self._beating, name=f"beat-{self.name}", daemon=True)
        beater.start()
        try:
            while not leases.STOPPING.is_set():
                try:
                    if self.run_one():
                        continue
                    if self.config.once and not self._anything_left():
                        return
                except VmbisectError as exc:  # the store or pgqueuer away for a while: the night goes on
                    say(f"{self.name}: {exc}; trying again in {AWAY_S:g} s")
                    leases.STOPPING.wait(AWAY_S)
                    continue
                leases.STOPPING.wait(self.config.poll_s)
        finally:
            self._stop.set()
            beater.join()
            with self.store.session() as s, s.begin():
                s.execute(delete(WorkerRow).where(WorkerRow.name == self.name))

    def _anything_left(self) -> bool:
        with self.store.session() as s:
            return s.scalars(select(CampaignRow.id).join(QueueRow, QueueRow.campaign_id == CampaignRow.id).where(
                CampaignRow.state.in_([QUEUED, RUNNING])).limit(1)).first() is not None

    def run_one(self) -> bool:
        """One campaign taken and run to its end (or to its stop); False when none was free."""
        ticket = self.jobs.take(self.name, self.config.heartbeat_timeout_s)
        if ticket is None:
            return False
        with self._lock:
            self.ticket = ticket
        try:
            self.beat()
            self._run(ticket)
        finally:
            with self._lock:
                self.ticket = None
        return True

    def _run(self, ticket: Ticket) -> None:
        cid = ticket.campaign_id
        previous = self._start(ticket)
        if previous is None:  # cancelled or ended meanwhile
            self.jobs.finish(ticket)
            return
        say(f"{self.name}: campaign {cid} started" + (f" (taken over from {previous})" if previous else ""))
        code = exit_code(lambda: self.config.run(
            self.store, cid, lab=lab_for(self.config.lab, self.config.campaign_slots), on_event=self._event(cid),
            take_over=self._may_take_over(cid), uri=self.config.uri))
        self._ended(ticket, code, previous)

    def _start(self, ticket: Ticket) -> str | None:
        """The campaign marked running by this runner; the runner it had before ("" for none),
        or None when it is no longer queued or running (cancelled, ended). Taken from a runner
        whose heartbeat stopped: the takeover is recorded in the same transaction."""
        cid = ticket.campaign_id
        with self.store.session() as s, s.begin():
            row = s.get(CampaignRow, cid)
            queued = s.get(QueueRow, cid)
            if row is None or queued is None or row.state not in (QUEUED, RUNNING):
                return None
            before = ticket.previous if ticket.previous is not None else queued.worker
            previous = before if before and before != self.name and row.state == RUNNING else ""
            if previous:  # recorded unless it still beats (then the store's lock keeps it with that runner)
                takeovers.record(s, cid, previous, self.name, now())
            row.state, queued.worker, queued.runs = RUNNING, self.name, queued.runs + 1
        return previous

    def _may_take_over(self, cid: int) -> bool:
        """Take the campaign's lock from another machine only when its holder is a runner whose
        heartbeat stopped (a holder that is not a runner: only its own machine can tell)."""
        holder = self.store.lock_owner(cid)
        if holder is None or holder.alive() is not None:
            return False  # free, or held on this machine: the store's lock decides alone
        at = now()
        with self.store.session() as s:
            runners = list(s.scalars(select(WorkerRow).where(WorkerRow.machine == holder.host,
                                                             WorkerRow.pid == holder.pid)))
        return bool(runners) and not any(beat_alive(w, at) for w in runners)

    def _event(self, cid: int) -> Callable[[Event], None]:
        def show(e: Event) -> None:
            if e.message:
                say(f"{self.name}: campaign {cid}: {e.commit[:12] + ' ' if e.commit else ''}{e.message}")
        return show

    def _ended(self, ticket: Ticket, code: int, previous: str) -> None:
        cid = ticket.campaign_id
        state = self.store.campaign(cid).state
        mine = self.store.lock_owner(cid) is None
        if not mine and state == RUNNING and previous:  # the runner before still holds it: it stays that runner's
            with self.store.session() as s, s.begin():
                s.execute(update(QueueRow).where(QueueRow.campaign_id == cid, QueueRow.worker == self.name)
                          .values(worker=previous))
        if leases.STOPPING.is_set() and state == RUNNING and mine:
            with self.store.session() as s, s.begin():
                s.execute(update(CampaignRow).where(CampaignRow.id == cid, CampaignRow.state == RUNNING)
                          .values(state=QUEUED))
                s.execute(update(QueueRow).where(QueueRow.campaign_id == cid, QueueRow.worker == self.name)
                          .values(worker=None))
            self.jobs.give_back(ticket)
            say(f"{self.name}: campaign {cid} stopped at a boot boundary and queued again")
            return
        if state == RUNNING and mine and code != 0:
            # it ended without a state of its own (a check refused it, its repository went away)
            stop(self.store, cid, Stopped(StopKind.FAILED, f"the worker's run ended with exit {code}; "
                                          "its one-line reason is in the worker's log"))
            state = "failed"
        if mine:
            self.jobs.finish(ticket)
        say(f"{self.name}: campaign {cid} ended: {state} (exit {code})")


def forget_dead(store: Store, machine: str) -> None:
    """Rows of this machine's runners whose process is gone (SIGKILLed, rebooted away) and that
    hold no campaign. One whose campaign still waits to be taken over stays listed, lost, until
    a runner takes it (orchestrator/queue/takeovers.py removes it then)."""
    with store.session() as s, s.begin():
        held = {q.worker for q, state in s.execute(select(QueueRow, CampaignRow.state).join(
            CampaignRow, CampaignRow.id == QueueRow.campaign_id)) if state == RUNNING}
        for row in s.scalars(select(WorkerRow).where(WorkerRow.machine == machine)):
            if process_start(row.pid) != row.pid_started and row.name not in held:
                s.delete(row)


def run_worker(store: Store, config: Config, runners: int) -> int:
    """`runners` runners in threads until stopped (or drained with `once`); 0."""
    from orchestrator.hosts.labfile import load_lab

    lab = load_lab(config.lab)
    machine = socket.gethostname()
    check_machines(store, machine)
    forget_dead(store, machine)
    leases.register_slots(store, lab)
    jobs = jobs_for(store)
    pool = [Runner(store, jobs, f"{machine}:{os.getpid()}/{i}", config) for i in range(runners)]
    finished = [threading.Event() for _ in pool]

    def serve(runner: Runner, done: threading.Event) -> None:
        try:
            runner.serve()
        finally:
            done.set()

    for runner, done in zip(pool, finished):
        threading.Thread(target=serve, args=(runner, done), name=runner.name).start()
    say(f"{len(pool)} runner(s) on lab {config.lab} ({sum(len(h.slots) for h in lab.hosts)} slot(s)), "
        f"store {store.engine.url.render_as_string()}; heartbeat timeout {config.heartbeat_timeout_s:g} s")
    # Events, not Thread.join: a KeyboardInterrupt inside join() can leave the thread looking
    # finished while it still runs (CPython 3.11), and the worker would exit under its campaigns.
    try:
        for done in finished:
            while not done.wait(0.5):
                pass
    except KeyboardInterrupt:
        say("stopping: each campaign stops at its next boot boundary and is queued again")
        leases.STOPPING.set()
        for done in finished:
            while not done.wait(0.5):
                pass
    return 0
