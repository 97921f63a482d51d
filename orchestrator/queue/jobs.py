"""Where a queued campaign waits for a worker, and how a worker takes one.

On a PostgreSQL store: pgqueuer's job table (docs/lab.md says why pgqueuer). `submit` enqueues
a job per campaign with the campaign's priority and `dedupe_key` campaign-<id> (a campaign is
never queued twice); a worker's runner dequeues with its own queue-manager id and at most one
job at a time; while it runs the campaign it renews the job's heartbeat, and a job whose
heartbeat stops (the worker was killed, the machine lost power) is dequeued again by any
runner after `heartbeat_timeout`: pgqueuer's own `FOR UPDATE SKIP LOCKED` pick, so two runners
never take one job at once.

On SQLite (one machine): the store's campaign_queue table is the queue; a runner takes the
first queued campaign in orchestrator/queue/fair.py's order, or a running one whose runner's
heartbeat (queue_workers) stopped, with a compare-and-swap on the campaign's state.

Either way the campaign's row says queued/running and which runner runs it (the dashboard
reads those, never pgqueuer's tables).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, TypeVar, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.engine import make_url

from orchestrator.errors import InfraError
from orchestrator.queue.fair import Queued, next_campaign
from orchestrator.queue.rows import QUEUED, RUNNING, beat_alive, now
from orchestrator.store import CampaignRow, QueueRow, WorkerRow

if TYPE_CHECKING:
    from orchestrator.store import Store

ENTRYPOINT = "vmbisect-campaign"
T = TypeVar("T")


@dataclass(frozen=True)
class Ticket:
    """A campaign a runner took, and the queue's handle on it (pgqueuer's job, or None)."""

    campaign_id: int
    job: Any = None
    # the runner that was running it when it was taken (SQLite: the swap replaces it in the row)
    previous: str | None = None


class Jobs(Protocol):
    def enqueue(self, campaign_id: int, priority: int) -> None: ...

    def take(self, runner: str, heartbeat_timeout_s: float) -> Ticket | None: ...

    def beat(self, ticket: Ticket) -> None: ...

    def finish(self, ticket: Ticket) -> None: ...

    def give_back(self, ticket: Ticket) -> None: ...


def shared(store: Store) -> bool:
    """Whether several machines can share the store (PostgreSQL) or not (SQLite)."""
    return store.engine.dialect.name == "postgresql"


def jobs_for(store: Store) -> Jobs:
    return PgJobs(store) if shared(store) else TableJobs(store)


def enqueue(store: Store, campaign_id: int, priority: int) -> None:
    """The campaign (its campaign_queue row written) handed to the workers."""
    jobs_for(store).enqueue(campaign_id, priority)


# ---- PostgreSQL: pgqueuer --------------------------------------------------------------------

def asyncpg_args(url: str) -> dict[str, Any]:
    """asyncpg's connect() arguments for the store's SQLAlchemy URL (a Unix socket directory as
    `?host=`, and `?sslmode=`, included; a password may also come from ~/.pgpass, as libpq's)."""
    u = make_url(url)
    args: dict[str, Any] = {"user": u.username, "password": u.password, "database": u.database,
                            "host": u.host, "port": u.port}
    query = dict(u.query)
    if "host" in query:
        args["host"] = query["host"]
    if "port" in query:
        args["port"] = int(str(query["port"]))
    if "sslmode" in query:  # libpq's disable/prefer/require/verify-ca/verify-full: asyncpg's `ssl` takes them
        args["ssl"] = str(query["sslmode"])
    return {k: v for k, v in args.items() if v is not None}


_INSTALL_LOCK = 0x766D6271  # "vmbq": one installer of pgqueuer's schema at a time


class PgJobs:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.args = asyncpg_args(store.engine.url.render_as_string(hide_password=False))
        self._managers: dict[str, uuid.UUID] = {}
        self._installed = False

    def _call(self, work: Callable[[Any, Any], Awaitable[T]]) -> T:
        """`work(queries, connection)` on a connection of its own (each runner thread calls
        from its own event loop)."""
        import asyncpg  # type: ignore[import-untyped]
        from pgqueuer.queries import Queries

        async def run() -> T:
            try:
                conn = await asyncpg.connect(**self.args)
            except (OSError, asyncpg.PostgresError) as exc:
                raise InfraError(f"store: pgqueuer cannot connect: {exc}") from exc
            try:
                queries = Queries.from_asyncpg_connection(conn)
                if not self._installed:
                    await conn.execute("SELECT pg_advisory_lock($1)", _INSTALL_LOCK)
                    try:
                        if not await queries.schema_is_installed():
                            await queries.install()
                    finally:
                        await conn.execute("SELECT pg_advisory_unlock($1)", _INSTALL_LOCK)
                    self._installed = True
                return await work(queries, conn)
            finally:
                await conn.close()

        return asyncio.run(run())

    def enqueue(self, campaign_id: int, priority: int) -> None:
        async def put(q: Any, _conn: Any) -> None:
            await q.enqueue(ENTRYPOINT, str(campaign_id).encode(), priority, dedupe_key=f"campaign-{campaign_id}",
                            on_conflict="skip")

        self._call(put)

    def take(self, runner: str, heartbeat_timeout_s: float) -> Ticket | None:
        from pgqueuer.ports.repository import EntrypointExecutionParameter

        manager = self._managers.setdefault(runner, uuid.uuid4())

        async def pick(q: Any, _conn: Any) -> list[Any]:
            return cast(list[Any], await q.dequeue(
                batch_size=1, entrypoints={ENTRYPOINT: EntrypointExecutionParameter(concurrency_limit=0)},
                queue_manager_id=manager, global_concurrency_limit=1,
                heartbeat_timeout=dt.timedelta(seconds=heartbeat_timeout_s)))

        jobs = self._call(pick)
        if not jobs:
            return None
        job = jobs[0]
        return Ticket(int((job.payload or b"0").decode()), job)

    def beat(self, ticket: Ticket) -> None:
        async def renew(q: Any, _conn: Any) -> None:
            await q.update_heartbeat([ticket.job.id])

        self._call(renew)

    def _ours(self, conn: Any, ticket: Ticket) -> Awaitable[Any]:
        table = self.store.engine.dialect.identifier_preparer.quote("pgqueuer")
        return cast(Awaitable[Any], conn.fetchval(f"SELECT queue_manager_id FROM {table} WHERE id = $1",
                                                  ticket.job.id))

    def finish(self, ticket: Ticket) -> None:
        """The job is done (unless another runner picked it again meanwhile: then it is theirs)."""
        async def done(q: Any, conn: Any) -> None:
            if await self._ours(conn, ticket) == ticket.job.queue_manager_id:
                await q.log_jobs([(ticket.job, "successful", None)])

        self._call(done)

    def give_back(self, ticket: Ticket) -> None:
        """The job queued again at once (its worker is stopping)."""
        async def back(q: Any, conn: Any) -> None:
            if await self._ours(conn, ticket) == ticket.job.queue_manager_id:
                await q.retry_job(ticket.job, dt.timedelta(0), None)

        self._call(back)


# ---- SQLite: the store's own table -----------------------------------------------------------

class _Lost(Exception):
    """Another runner changed the campaign first (rolls the swap back)."""


class TableJobs:
    def __init__(self, store: Store) -> None:
        self.store = store

    def enqueue(self, campaign_id: int, priority: int) -> None:
        pass  # the campaign_queue row is the queue

    def take(self, runner: str, heartbeat_timeout_s: float) -> Ticket | None:
        """The next queued campaign, or a running one whose runner stopped beating (or is this
        runner, which runs nothing while it asks: it lost the campaign to an error)."""
        at = now()
        with self.store.session() as s:
            rows = s.execute(select(QueueRow, CampaignRow.state).join(CampaignRow, CampaignRow.id == QueueRow.campaign_id)
                             .where(CampaignRow.state.in_([QUEUED, RUNNING]))).all()
            beats = {w.name: w for w in s.scalars(select(WorkerRow))}
        open_ = [(q, state) for q, state in rows if state == QUEUED or q.worker == runner or (
            q.worker is not None and (q.worker not in beats or not beat_alive(beats[q.worker], at)))]
        while open_:
            chosen = next_campaign(Queued(q.campaign_id, q.priority, q.submitted) for q, _ in open_)
            assert chosen is not None
            queued, state = next((q, st) for q, st in open_ if q.campaign_id == chosen.campaign_id)
            open_ = [(q, st) for q, st in open_ if q.campaign_id != chosen.campaign_id]
            if self._swap(queued, state, runner):
                return Ticket(queued.campaign_id, previous=queued.worker if state == RUNNING else None)
        return None

    def _swap(self, queued: QueueRow, state: str, runner: str) -> bool:
        """The campaign marked running by `runner` if nobody changed it since it was read."""
        try:
            with self.store.session() as s, s.begin():
                same = QueueRow.worker.is_(None) if queued.worker is None else QueueRow.worker == queued.worker
                if cast(CursorResult[Any], s.execute(update(QueueRow).where(
                        QueueRow.campaign_id == queued.campaign_id, same).values(worker=runner))).rowcount != 1:
                    raise _Lost()
                if cast(CursorResult[Any], s.execute(update(CampaignRow).where(
                        CampaignRow.id == queued.campaign_id, CampaignRow.state == state).values(
                        state=RUNNING))).rowcount != 1:
                    raise _Lost()
        except _Lost:
            return False
        return True

    def beat(self, ticket: Ticket) -> None:
        pass  # the runner's queue_workers row is its heartbeat

    def finish(self, ticket: Ticket) -> None:
        pass

    def give_back(self, ticket: Ticket) -> None:
        pass
