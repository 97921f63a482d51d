"""Everything a campaign does, written as it happens: SQLite by default, PostgreSQL by URL.

A run and its samples are committed in one transaction, so a controller killed mid-run leaves
either the whole run or none of it: resuming never duplicates a sample.

One controller at a time per campaign: `lock()` holds a row in `campaign_locks` naming the
owner (host, pid, the pid's start time). A second controller is refused with the owner's
name; a lock is stale, and taken over, when its owner was on this host and that process is
gone (a SIGKILLed controller); a lock held from another host is only taken over when asked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, cast

from sqlalchemy import (
    JSON,
    CursorResult,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    TypeDecorator,
    create_engine,
    delete,
    event,
    func,
    inspect,
    select,
    update,
)
from sqlalchemy.engine import Engine, ExceptionContext
from sqlalchemy.exc import ArgumentError, IntegrityError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

from orchestrator import paths
from orchestrator.decisions import Basis, Decided, Role, said
from orchestrator.errors import InfraError, UserError
from orchestrator.stats import Boot


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Short(TypeDecorator[str]):
    """VARCHAR(n) that refuses a longer value on every database: PostgreSQL refuses it, SQLite
    would store it, so a value too long for its column fails the SQLite tests too."""

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        if value is not None and len(value) > self.length:
            raise ValueError(f"store: {value[:40]!r}... is {len(value)} characters, its column holds {self.length}")
        return value


class Base(DeclarativeBase):
    pass


class CampaignRow(Base):
    __tablename__ = "campaigns"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(Short(64))
    kind: Mapped[str] = mapped_column(Short(16), default="bisect")  # orchestrator/kinds/specs.py: what `spec` is
    spec: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(Short(16), default="running")
    bisect_log: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created: Mapped[dt.datetime] = mapped_column(default=_now)
    updated: Mapped[dt.datetime] = mapped_column(default=_now, onupdate=_now)


class BuildRow(Base):
    __tablename__ = "builds"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    commit: Mapped[str] = mapped_column(Short(64), index=True)
    status: Mapped[str] = mapped_column(Short(16))  # building (when it started), then ok or failed
    image: Mapped[str] = mapped_column(Text, default="")
    sha256: Mapped[str] = mapped_column(Short(64), default="")
    cache_hit: Mapped[bool] = mapped_column(default=False)
    duration_s: Mapped[float] = mapped_column(Float, default=0.0)
    # how the image was obtained (orchestrator/kbuild/kernelstore.py: cached, incremental, ccache,
    # cold); "" for a failed build, a build still running and builds of a store from before it
    how: Mapped[str] = mapped_column(Short(16), default="")
    error: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[dt.datetime] = mapped_column(default=_now)


class BootRow(Base):
    __tablename__ = "boots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    commit: Mapped[str] = mapped_column(Short(64), index=True)
    status: Mapped[str] = mapped_column(Short(16), default="booting")
    boot_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str] = mapped_column(Text, default="")
    # the lab host the guest ran on ("" for a boot that never came up, and for boots a store from
    # before hosts holds: those ran on the campaign's one host)
    host: Mapped[str] = mapped_column(Short(64), default="")
    # what the host was doing when the guest started and where the boot's time went:
    # {"host_state": HostState.to_dict(), "phases": {phase: seconds}} (orchestrator/backends/quiet.py,
    # LibvirtProvider.boot), and the guest's clock ("clock": workloads/clock.py BootClock.to_dict());
    # {} for boots of a store from before them, and no "clock" for boots from before it
    facts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created: Mapped[dt.datetime] = mapped_column(default=_now)


class RunRow(Base):
    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    boot_id: Mapped[int] = mapped_column(ForeignKey("boots.id"))
    commit: Mapped[str] = mapped_column(Short(64), index=True)
    raw: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created: Mapped[dt.datetime] = mapped_column(default=_now)


class SampleRow(Base):
    __tablename__ = "samples"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    commit: Mapped[str] = mapped_column(Short(64), index=True)
    metric: Mapped[str] = mapped_column(Short(128))
    value: Mapped[float] = mapped_column(Float)


class DecisionRow(Base):
    __tablename__ = "decisions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    commit: Mapped[str] = mapped_column(Short(64))
    role: Mapped[str] = mapped_column(Short(16))
    verdict: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text)
    confidence: Mapped[float] = mapped_column(Float, default=0.0)
    samples: Mapped[int] = mapped_column(Integer, default=0)
    # orchestrator/decisions.py: what backs the decision, the commit an inherited verdict comes
    # from, the first boot of a pair measurement (-1: none)
    kind: Mapped[str] = mapped_column(Short(16), default="measured")
    inherited_from: Mapped[str] = mapped_column(Short(64), default="")
    since: Mapped[int] = mapped_column(Integer, default=-1)
    created: Mapped[dt.datetime] = mapped_column(default=_now)


class LockRow(Base):
    __tablename__ = "campaign_locks"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), primary_key=True)
    host: Mapped[str] = mapped_column(Short(255))
    pid: Mapped[int] = mapped_column(Integer)
    pid_started: Mapped[str] = mapped_column(Short(32))
    acquired: Mapped[dt.datetime] = mapped_column(default=_now)


class QueueRow(Base):
    """A campaign submitted to the queue (orchestrator/queue/): its priority (higher first),
    when it was submitted, and the worker running it now (None while it waits)."""

    __tablename__ = "campaign_queue"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), primary_key=True)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    submitted: Mapped[dt.datetime] = mapped_column(default=_now)
    worker: Mapped[str | None] = mapped_column(Short(255), nullable=True, default=None)
    runs: Mapped[int] = mapped_column(Integer, default=0)  # how many times a worker started it


class WorkerRow(Base):
    """A queue worker (one per campaign it can run at once): renewed by its heartbeat."""

    __tablename__ = "queue_workers"
    name: Mapped[str] = mapped_column(Short(255), primary_key=True)
    machine: Mapped[str] = mapped_column(Short(255))
    pid: Mapped[int] = mapped_column(Integer)
    pid_started: Mapped[str] = mapped_column(Short(32))
    lab: Mapped[str] = mapped_column(Text, default="")
    campaign_id: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    started: Mapped[dt.datetime] = mapped_column(default=_now)
    last_beat: Mapped[dt.datetime] = mapped_column(default=_now)
    timeout_s: Mapped[float] = mapped_column(Float, default=60.0)  # silent this long: dead


class TakeoverRow(Base):
    """A queued campaign taken over from a runner whose heartbeat stopped, as it happened
    (orchestrator/queue/takeovers.py reads and writes it): from which runner on which machine,
    by which, why, how long the heartbeat had been silent against its timeout (None: no row was
    left to tell), and the boots in flight it cut ([{boot_id, commit, runs}])."""

    __tablename__ = "campaign_takeovers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    at: Mapped[dt.datetime] = mapped_column(default=_now)
    from_worker: Mapped[str] = mapped_column(Short(255))
    from_machine: Mapped[str] = mapped_column(Short(255), default="")
    by_worker: Mapped[str] = mapped_column(Short(255))
    why: Mapped[str] = mapped_column(Short(32))
    silent_s: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
    timeout_s: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
    lost: Mapped[list[dict[str, Any]]] = mapped_column(JSON, default=list)


class LabSlotRow(Base):
    """A slot of a lab host as a worker's lab file describes it (for the dashboard)."""

    __tablename__ = "lab_slots"
    machine: Mapped[str] = mapped_column(Short(255), primary_key=True)
    slot: Mapped[int] = mapped_column(Integer, primary_key=True)
    host: Mapped[str] = mapped_column(Short(64))
    cpus: Mapped[str] = mapped_column(Short(255), default="")


class SlotLeaseRow(Base):
    """One host CPU (or a slot that pins none) of a lab machine leased to a guest pool until
    `expires`, renewed by the pool's heartbeat (orchestrator/queue/leases.py)."""

    __tablename__ = "slot_leases"
    machine: Mapped[str] = mapped_column(Short(255), primary_key=True)
    unit: Mapped[str] = mapped_column(Short(32), primary_key=True)  # cpu<N> or slot<N>
    host: Mapped[str] = mapped_column(Short(64))
    slot: Mapped[int] = mapped_column(Integer)
    cpus: Mapped[str] = mapped_column(Short(255), default="")
    campaign_id: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    owner: Mapped[str] = mapped_column(Short(255))
    expires: Mapped[dt.datetime] = mapped_column()


class SlotWaitRow(Base):
    """A guest pool waiting for a slot of a lab machine: the fair order (priority, then
    submission, then how long it has waited) picks who gets a freed slot."""

    __tablename__ = "slot_waits"
    owner: Mapped[str] = mapped_column(Short(255), primary_key=True)
    campaign_id: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    submitted: Mapped[dt.datetime] = mapped_column()
    since: Mapped[dt.datetime] = mapped_column()
    machines: Mapped[str] = mapped_column(Text, default="")  # the lab machines it can use, one a line
    expires: Mapped[dt.datetime] = mapped_column()


def boot_from(seq: int, values: Sequence[float], facts: Mapping[str, Any], boot_id: int = 0) -> Boot:
    """A boot's values with what its facts (BootRow.facts) say of its host: `busy` when the host
    had not settled before it, `taken` the share of its CPUs other work took during it,
    `to_agent_s` how long its guest took to reach the agent (0: not known)."""
    state = facts.get("host_state") or {}
    load = facts.get("load") or {}
    phases = facts.get("phases") or {}
    return Boot(seq, tuple(values), not state.get("quiet", True), float(load.get("taken", 0.0)),
                float(phases.get("to_agent", 0.0)), boot_id)


class CampaignLocked(UserError):
    """Another controller runs this campaign."""


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    pid_started: str

    @staticmethod
    def me() -> "Owner":
        return Owner(socket.gethostname(), os.getpid(), process_start(os.getpid()))

    def alive(self) -> bool | None:
        """Whether the owner process still runs: None when it is on another host (unknowable)."""
        if self.host != socket.gethostname():
            return None
        return process_start(self.pid) == self.pid_started != ""


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" when there is no such process):
    with the pid it names one process, even after the pid is reused."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _host_fault(context: ExceptionContext) -> None:
    """A store that cannot be written or reached (disk full, I/O error, server gone) is the
    host's fault: an InfraError, so the campaign pauses and resumes once it is fixed. Integrity
    errors pass (the lock relies on them)."""
    exc = context.original_exception
    if isinstance(context.sqlalchemy_exception, (OperationalError, InterfaceError)):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InfraError(f"store: {first}") from exc


def default_url() -> str:
    return f"sqlite:///{paths.data_dir() / 'vmbisect.db'}"


# URL schemes meaning "PostgreSQL, whichever driver" and the driver vmbisect installs
# (psycopg2; SQLAlchemy 2.1 would take a bare postgresql:// for psycopg 3, which it does not)
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
POSTGRES_DRIVER = "postgresql+psycopg2://"


def driver_url(url: str) -> str:
    """The store URL with a plain `postgresql://` (or `postgres://`) given its installed driver.
    A password never needs to be in the URL: libpq (and asyncpg, the queue's) take it from
    PGPASSWORD or ~/.pgpass (docs/lab.md)."""
    for scheme in POSTGRES_SCHEMES:
        if url.startswith(scheme):
            return POSTGRES_DRIVER + url.removeprefix(scheme)
    driver = url.partition("://")[0]
    if driver.startswith("postgresql+") and f"{driver}://" != POSTGRES_DRIVER:
        raise UserError(f"store: {driver} is not a driver vmbisect installs; give postgresql://USER@HOST/DB "
                        f"(it uses {POSTGRES_DRIVER.removesuffix('://')})")
    return url


def _widen(engine: Engine) -> None:
    """Columns a newer vmbisect made wider (or unbounded) are widened in a store an older one
    created; SQLite does not bound VARCHAR, so only PostgreSQL needs it."""
    if engine.dialect.name != "postgresql":
        return
    found = inspect(engine)
    with engine.begin() as conn:
        for table in Base.metadata.sorted_tables:
            have = {c["name"]: c["type"] for c in found.get_columns(table.name)}
            for column in table.columns:
                was = getattr(have.get(column.name), "length", None)
                want = getattr(column.type, "length", None)
                if was is not None and (want is None or want > was):
                    kind = "text" if want is None else f"varchar({want})"
                    conn.exec_driver_sql(f'ALTER TABLE {table.name} ALTER COLUMN "{column.name}" TYPE {kind}')


def legacy_kind(spec: str) -> str:
    """The kind of a campaign a store from before the `kind` column holds, from its spec: a
    comparison said so in it, a verification carried its own arguments under `verify`; anything
    else was a bisection. Used once per row, when the column is added."""
    try:
        data = json.loads(spec or "{}")
    except ValueError:
        return "bisect"
    if not isinstance(data, dict):
        return "bisect"
    if data.get("kind") == "compare":
        return "compare"
    return "verify" if "verify" in data else "bisect"


def _add_kind(engine: Engine) -> None:
    """A store from before the `kind` column gets it, each row's kind derived once from its spec.
    Two controllers opening the same old store at once: one adds it, the other finds it added."""
    if "kind" in {c["name"] for c in inspect(engine).get_columns("campaigns")}:
        return
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE campaigns ADD COLUMN kind VARCHAR(16) NOT NULL DEFAULT 'bisect'")
            rows = conn.exec_driver_sql("SELECT id, spec FROM campaigns").fetchall()
            for campaign_id, spec in rows:
                kind = legacy_kind(spec)
                if kind != "bisect":
                    conn.execute(update(CampaignRow).where(CampaignRow.id == campaign_id).values(kind=kind))
    except (SQLAlchemyError, InfraError):
        if "kind" not in {c["name"] for c in inspect(engine).get_columns("campaigns")}:
            raise


def _add_boot_host(engine: Engine) -> None:
    """A store from before the boots' `host` column gets it, each boot's host taken once from
    its runs (the lab host a run names); a boot whose runs name none keeps "". Two controllers
    opening the same old store at once: one adds it, the other finds it added."""
    if "host" in {c["name"] for c in inspect(engine).get_columns("boots")}:
        return
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE boots ADD COLUMN host VARCHAR(64) NOT NULL DEFAULT ''")
            hosts: dict[int, str] = {}
            for boot_id, raw in conn.execute(select(RunRow.boot_id, RunRow.raw)):
                raw = raw if isinstance(raw, dict) else {}
                host = raw.get("lab_host") or (raw.get("result") or {}).get("lab_host") or ""
                if host:
                    hosts.setdefault(boot_id, str(host)[:64])
            for boot_id, host in hosts.items():
                conn.execute(update(BootRow).where(BootRow.id == boot_id).values(host=host))
    except (SQLAlchemyError, InfraError):
        if "host" not in {c["name"] for c in inspect(engine).get_columns("boots")}:
            raise


def _add_empty(engine: Engine, table: str, column: str, ddl: str) -> None:
    """A store from before `table`'s `column` gets it (`ddl`: its type and default), empty for
    the rows it holds. Two controllers opening the same old store at once: one adds it, the
    other finds it added."""
    if column in {c["name"] for c in inspect(engine).get_columns(table)}:
        return
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")
    except (SQLAlchemyError, InfraError):
        if column not in {c["name"] for c in inspect(engine).get_columns(table)}:
            raise


LEGACY_KINDS = (("same image as ", Basis.INHERITED), ("ambiguous after the cap", Basis.AMBIGUOUS),
                ("doubtful after the cap", Basis.DOUBTFUL), ("build failed:", Basis.BUILD_FAILED),
                ("boot failed:", Basis.BOOT_FAILED), ("workload failed:", Basis.WORKLOAD_FAILED))


def legacy_fields(role: str, verdict: str, reason: str, commits: list[str]) -> tuple[Basis, str, int]:
    """The kind, inherited_from and since of a decision a store from before those columns holds,
    read once from its reason as that version wrote it (`commits`: the campaign's decided
    commits, to name the full commit an inherited verdict came from). The only place a reason
    is read: when the columns are added."""
    if verdict == "measuring":
        words = reason.split()
        return Basis.MEASURING, "", int(words[2].rstrip(":")) if len(words) > 2 and words[2].rstrip(":").isdigit() else 0
    if role == Role.HOST.value:
        return Basis.MOVED, "", -1
    if role in (Role.GOOD.value, Role.BAD.value):
        return Basis.ENDPOINTS, "", -1
    text = reason.removeprefix("re-examined (").split("): ", 1)[-1] if reason.startswith("re-examined (") else reason
    for prefix, kind in LEGACY_KINDS:
        if text.startswith(prefix):
            if kind is Basis.INHERITED:
                short = text.removeprefix(prefix).split()[0]
                return kind, next((c for c in commits if c.startswith(short)), short), -1
            return kind, "", -1
    return Basis.MEASURED, "", -1


def _add_decision_fields(engine: Engine) -> None:
    """A store from before the decisions' kind, inherited_from and since columns gets them, each
    old decision's values derived once (legacy_fields)."""
    if "kind" in {c["name"] for c in inspect(engine).get_columns("decisions")}:
        return
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("ALTER TABLE decisions ADD COLUMN kind VARCHAR(16) NOT NULL DEFAULT 'measured'")
            conn.exec_driver_sql("ALTER TABLE decisions ADD COLUMN inherited_from VARCHAR(64) NOT NULL DEFAULT ''")
            conn.exec_driver_sql("ALTER TABLE decisions ADD COLUMN since INTEGER NOT NULL DEFAULT -1")
            rows = conn.execute(select(DecisionRow.id, DecisionRow.campaign_id, DecisionRow.commit, DecisionRow.role,
                                       DecisionRow.verdict, DecisionRow.reason).order_by(DecisionRow.id)).fetchall()
            commits: dict[int, list[str]] = defaultdict(list)
            for _id, campaign_id, commit, *_rest in rows:
                commits[campaign_id].append(commit)
            for decision_id, campaign_id, _commit, role, verdict, reason in rows:
                kind, source, since = legacy_fields(role, verdict, reason, commits[campaign_id])
                if (kind, source, since) != (Basis.MEASURED, "", -1):
                    conn.execute(update(DecisionRow).where(DecisionRow.id == decision_id).values(
                        kind=kind.value, inherited_from=source, since=since))
    except (SQLAlchemyError, InfraError):
        if "kind" not in {c["name"] for c in inspect(engine).get_columns("decisions")}:
            raise


class Store:
    def __init__(self, url: str | None = None, create: bool = True) -> None:
        """The store at `url` (default: SQLite in the data directory). `create` False, for the
        commands that read campaigns run before: a SQLite file that is not there is the user's
        mistake (a mistyped --store), said in one line, never an empty store made in its place."""
        url = driver_url(url or default_url())
        self.key = hashlib.sha256(url.encode()).hexdigest()[:12]
        if url.startswith("sqlite:///"):
            path = Path(url.removeprefix("sqlite:///"))
            if not create and not path.is_file():
                raise UserError(f"store: no database at {path}; give --store the URL the campaigns were run with "
                                f"(default: {default_url()})")
            where = path.parent
            try:
                where.mkdir(parents=True, exist_ok=True)
            except (OSError, ValueError) as exc:
                raise UserError(f"store: cannot create the directory {where}: "
                                f"{getattr(exc, 'strerror', None) or exc}") from None
        try:
            self.engine = create_engine(url)
            event.listen(self.engine, "handle_error", _host_fault)
            Base.metadata.create_all(self.engine)
            _widen(self.engine)
            _add_kind(self.engine)
            _add_boot_host(self.engine)
            _add_empty(self.engine, "boots", "facts", "JSON NOT NULL DEFAULT '{}'")
            _add_empty(self.engine, "builds", "how", "VARCHAR(16) NOT NULL DEFAULT ''")
            _add_decision_fields(self.engine)
        except ArgumentError as exc:
            raise UserError(f"store: {url[:80]!r} is not a database URL; give sqlite:///PATH or "
                            "postgresql://USER@HOST/DB (a password from PGPASSWORD or ~/.pgpass, docs/lab.md)") from exc
        except ModuleNotFoundError as exc:
            raise UserError(f"store: no database driver for {url.split(':')[0]} ({exc.name} is not installed)") from exc
        except SQLAlchemyError as exc:
            raise InfraError(f"store: cannot open {url.split('@')[-1]}: {exc.__class__.__name__}: "
                             f"{str(exc).splitlines()[0]}") from exc
        except InfraError as exc:  # from _host_fault
            raise InfraError(f"store: cannot open {url.split('@')[-1]}: "
                             f"{str(exc).removeprefix('store: ')}") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _session(self) -> Session:
        return self._sessions()

    def session(self) -> Session:
        """A session of the store's database for the packages that keep tables of their own in
        it (orchestrator/queue/: the queue, its workers, slot leases); `with store.session() as
        s, s.begin():` for one transaction."""
        return self._sessions()

    def new_campaign(self, name: str, spec: Mapping[str, Any], kind: str = "bisect") -> int:
        """A campaign of `kind` whose typed spec (orchestrator/kinds/specs.py) wrote `spec`."""
        with self._session() as s, s.begin():
            row = CampaignRow(name=name, kind=kind, spec=json.dumps(spec, default=str))
            s.add(row)
        return row.id

    # ---- the controller lock ----

    @contextmanager
    def lock(self, campaign_id: int, take_over: bool = False) -> Iterator[Owner]:
        """Hold the campaign's lock while the block runs; CampaignLocked if another live
        controller holds it. `take_over`: also take a lock held from another host."""
        me = self.acquire(campaign_id, take_over)
        try:
            yield me
        finally:
            self.release(campaign_id, me)

    def acquire(self, campaign_id: int, take_over: bool = False) -> Owner:
        me = Owner.me()
        try:
            with self._session() as s, s.begin():
                s.add(LockRow(campaign_id=campaign_id, host=me.host, pid=me.pid, pid_started=me.pid_started))
            return me
        except IntegrityError:
            pass
        holder = self.lock_owner(campaign_id)
        if holder is None:  # released in between: try once more
            return self.acquire(campaign_id, take_over)
        alive = holder.alive()
        if alive or (alive is None and not take_over):
            where = "this host" if alive else f"host {holder.host}"
            hint = "" if alive else "; if it is gone, resume with --take-over"
            raise CampaignLocked(f"id: campaign {campaign_id} is being run by pid {holder.pid} on {where}{hint}")
        with self._session() as s, s.begin():  # compare-and-swap: only one taker wins a stale lock
            taken = cast(CursorResult[Any], s.execute(update(LockRow).where(
                LockRow.campaign_id == campaign_id, LockRow.host == holder.host, LockRow.pid == holder.pid,
                LockRow.pid_started == holder.pid_started).values(
                host=me.host, pid=me.pid, pid_started=me.pid_started, acquired=_now()))).rowcount
        if taken != 1:
            return self.acquire(campaign_id, take_over)
        return me

    def release(self, campaign_id: int, me: Owner) -> None:
        with self._session() as s, s.begin():
            s.execute(delete(LockRow).where(LockRow.campaign_id == campaign_id, LockRow.host == me.host,
                                            LockRow.pid == me.pid, LockRow.pid_started == me.pid_started))

    def lock_owner(self, campaign_id: int) -> Owner | None:
        with self._session() as s:
            row = s.get(LockRow, campaign_id)
            return None if row is None else Owner(row.host, row.pid, row.pid_started)

    # ---- campaigns ----

    def campaign(self, campaign_id: int) -> CampaignRow:
        with self._session() as s:
            row = s.get(CampaignRow, campaign_id)
        if row is None:
            raise UserError(f"campaign: no campaign with id {campaign_id}; see `vmbisect status`")
        return row

    def campaigns(self) -> list[CampaignRow]:
        with self._session() as s:
            return list(s.scalars(select(CampaignRow).order_by(CampaignRow.id)))

    def set_state(self, campaign_id: int, state: str, result: Mapping[str, Any] | None = None) -> None:
        with self._session() as s, s.begin():
            row = s.get(CampaignRow, campaign_id)
            assert row is not None
            row.state = state
            if result is not None:
                row.result = dict(result)

    def set_bisect_log(self, campaign_id: int, log: str) -> None:
        with self._session() as s, s.begin():
            row = s.get(CampaignRow, campaign_id)
            assert row is not None
            row.bisect_log = log

    def add_build(self, campaign_id: int, commit: str, status: str, **fields: Any) -> None:
        with self._session() as s, s.begin():
            s.add(BuildRow(campaign_id=campaign_id, commit=commit, status=status, **fields))

    def builds(self, campaign_id: int) -> list[BuildRow]:
        with self._session() as s:
            return list(s.scalars(select(BuildRow).where(BuildRow.campaign_id == campaign_id).order_by(BuildRow.id)))

    def start_boot(self, campaign_id: int, commit: str) -> int:
        with self._session() as s, s.begin():
            row = BootRow(campaign_id=campaign_id, commit=commit)
            s.add(row)
        return row.id

    def end_boot(self, boot_id: int, status: str, boot_seconds: float = 0.0, error: str = "", host: str = "",
                 facts: Mapping[str, Any] | None = None) -> None:
        """`status`: ok (the guest came up on lab host `host`), failed (the kernel did not boot),
        stalled (a run in the guest ran past its budget and the agent killed it: `error` holds
        the agent's snapshot of the guest; its completed runs are kept, the boot cut short) or
        lost (the host failed under it: its runs are kept, never compared). `facts`: the host's
        state before the boot and the boot's phases (BootRow.facts)."""
        with self._session() as s, s.begin():
            row = s.get(BootRow, boot_id)
            assert row is not None
            row.status, row.boot_seconds, row.error = status, boot_seconds, error
            row.host = host or row.host
            if facts is not None:
                row.facts = dict(facts)

    def boots(self, campaign_id: int) -> list[BootRow]:
        with self._session() as s:
            return list(s.scalars(select(BootRow).where(BootRow.campaign_id == campaign_id).order_by(BootRow.id)))

    def add_run(self, campaign_id: int, boot_id: int, commit: str, metrics: Mapping[str, float],
                raw: Mapping[str, Any]) -> int:
        """The run and all its samples in one transaction."""
        with self._session() as s, s.begin():
            run = RunRow(campaign_id=campaign_id, boot_id=boot_id, commit=commit, raw=dict(raw))
            s.add(run)
            s.flush()
            s.add_all(SampleRow(run_id=run.id, campaign_id=campaign_id, commit=commit, metric=m, value=float(v))
                      for m, v in metrics.items())
        return run.id

    def samples(self, campaign_id: int, metric: str) -> dict[str, list[float]]:
        """Samples of one metric by commit, in the order they were taken."""
        out: dict[str, list[float]] = defaultdict(list)
        with self._session() as s:
            q = (select(SampleRow.commit, SampleRow.value)
                 .where(SampleRow.campaign_id == campaign_id, SampleRow.metric == metric).order_by(SampleRow.id))
            for commit, value in s.execute(q):
                out[commit].append(value)
        return dict(out)

    def boot_samples(self, campaign_id: int, metric: str, host: str | None = None,
                     legacy: bool = True, runs_per_boot: int | None = None) -> dict[str, list[Boot]]:
        """Samples of one metric by commit, grouped by the boot that took them (the unit of
        replication; see orchestrator.stats); `seq` numbers the boots returned in time, and what
        BootRow.facts says of the host (`boot_from`). With
        `host`, only boots of that lab host (and, when `legacy`, boots of a store from before
        hosts were recorded, which ran on the campaign's one host): samples of different hosts
        are never compared. Boots a failed host lost are never returned, nor boots cut short (a
        controller killed, a workload that failed): a boot counts when its facts mark it whole
        (its guest ended after its last run) or it has `runs_per_boot` runs (None: as many as
        the campaign's fullest boot; a store from before the mark has none)."""
        runs: dict[tuple[str, int], list[float]] = defaultdict(list)
        facts_of: dict[int, Mapping[str, Any]] = {}
        with self._session() as s:
            q = (select(SampleRow.commit, RunRow.boot_id, SampleRow.value, BootRow.facts)
                 .join(RunRow, RunRow.id == SampleRow.run_id).join(BootRow, BootRow.id == RunRow.boot_id)
                 .where(SampleRow.campaign_id == campaign_id, SampleRow.metric == metric, BootRow.status != "lost"))
            if host is not None:
                q = q.where(BootRow.host.in_([host, ""] if legacy else [host]))
            for commit, boot_id, value, facts in s.execute(q.order_by(SampleRow.id)):
                runs[(commit, boot_id)].append(value)
                facts_of[boot_id] = facts or {}
        need = runs_per_boot if runs_per_boot is not None else max(map(len, runs.values()), default=0)
        whole = sorted(((key, values) for key, values in runs.items()
                        if len(values) >= need or facts_of[key[1]].get("whole")), key=lambda kv: kv[0][1])
        out: dict[str, list[Boot]] = defaultdict(list)
        for seq, ((commit, boot_id), values) in enumerate(whole):
            out[commit].append(boot_from(seq, values, facts_of[boot_id], boot_id))
        return dict(out)

    def sample_count(self, campaign_id: int) -> int:
        with self._session() as s:
            return int(s.scalar(select(func.count(SampleRow.id)).where(SampleRow.campaign_id == campaign_id)) or 0)

    def last_run(self, campaign_id: int) -> RunRow | None:
        with self._session() as s:
            return s.scalars(select(RunRow).where(RunRow.campaign_id == campaign_id)
                             .order_by(RunRow.id.desc()).limit(1)).first()

    def runs(self, campaign_id: int) -> Iterator[RunRow]:
        with self._session() as s:
            yield from s.scalars(select(RunRow).where(RunRow.campaign_id == campaign_id).order_by(RunRow.id))

    def add_decision(self, campaign_id: int, d: Decided) -> None:
        with self._session() as s, s.begin():
            s.add(DecisionRow(campaign_id=campaign_id, commit=d.commit, role=Role(d.role).value, verdict=d.verdict,
                              reason=d.reason, confidence=d.confidence, samples=d.samples, kind=Basis(d.basis).value,
                              inherited_from=d.inherited_from, since=d.since))

    def decisions(self, campaign_id: int) -> list[Decided]:
        with self._session() as s:
            rows = s.scalars(select(DecisionRow).where(DecisionRow.campaign_id == campaign_id).order_by(DecisionRow.id))
            return [Decided(r.commit, Role(r.role), said(r.verdict), r.reason, r.confidence, r.samples, Basis(r.kind),
                            r.inherited_from, r.since) for r in rows]

    # ---- the mail sent when a campaign ends (orchestrator/notify/) ----

    def claim_mail(self, campaign_id: int, recipients: str, again: bool = False,
                   stale_after: dt.timedelta = dt.timedelta(minutes=15)) -> int | None:
        """Claim the campaign's mail for sending: the attempt's number, or None when it was sent
        already (unless `again`) or another controller is sending it. A mail that failed is
        claimed again, and so is one whose sender was killed mid-send (`stale_after`): a
        compare-and-swap, so two controllers never both send it."""
        try:
            with self._session() as s, s.begin():
                s.add(MailRow(campaign_id=campaign_id, state="sending", recipients=recipients, attempts=1))
            return 1
        except IntegrityError:
            pass
        claimable = ["failed", "sent"] if again else ["failed"]
        with self._session() as s, s.begin():
            row = s.get(MailRow, campaign_id)
            if row is None:
                return None
            attempt = row.attempts + 1
            taken = cast(CursorResult[Any], s.execute(update(MailRow).where(
                MailRow.campaign_id == campaign_id, MailRow.attempts == row.attempts,
                (MailRow.state.in_(claimable)) | ((MailRow.state == "sending") & (MailRow.updated < _now() - stale_after))
            ).values(state="sending", recipients=recipients, attempts=attempt, updated=_now()))).rowcount
        return attempt if taken == 1 else None

    def mail_sent(self, campaign_id: int, message_id: str, subject: str) -> None:
        self._end_mail(campaign_id, state="sent", message_id=message_id, subject=subject, error="")

    def mail_failed(self, campaign_id: int, error: str) -> None:
        self._end_mail(campaign_id, state="failed", error=error)

    def _end_mail(self, campaign_id: int, **values: Any) -> None:
        with self._session() as s, s.begin():
            s.execute(update(MailRow).where(MailRow.campaign_id == campaign_id).values(updated=_now(), **values))

    def add_profile(self, campaign_id: int, parent: str, culprit: str, event: str, stacks: Mapping[str, Any],
                    note: str = "") -> int:
        """A profile of parent against culprit (orchestrator/explain/profile_boots.py), kept apart
        from the boots and runs every decision counts: its boots were never measured."""
        with self._session() as s, s.begin():
            row = ProfileRow(campaign_id=campaign_id, parent=parent, culprit=culprit, event=event,
                             stacks=dict(stacks), note=note)
            s.add(row)
            s.flush()
            return row.id

    def profiles(self, campaign_id: int) -> list[ProfileRow]:
        with self._session() as s:
            return list(s.scalars(select(ProfileRow).where(ProfileRow.campaign_id == campaign_id)
                                  .order_by(ProfileRow.id)))

    def mail(self, campaign_id: int) -> MailRow | None:
        with self._session() as s:
            return s.get(MailRow, campaign_id)

    def unsent_mails(self, below: int | None = None) -> list[int]:
        """Campaigns whose mail failed (after fewer than `below` attempts), oldest first."""
        q = select(MailRow.campaign_id).where(MailRow.state == "failed")
        if below is not None:
            q = q.where(MailRow.attempts < below)
        with self._session() as s:
            return list(s.scalars(q.order_by(MailRow.updated)))


class MailRow(Base):
    """The mail of a campaign that ended (one per campaign): sending, sent or failed (`error`
    says why; retried), to whom, its Message-ID and subject once sent, and how many attempts
    were made. A store from before this table gets it, empty, when it is opened (create_all)."""

    __tablename__ = "mails"
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), primary_key=True)
    state: Mapped[str] = mapped_column(Short(16))
    recipients: Mapped[str] = mapped_column(Text, default="")
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    message_id: Mapped[str] = mapped_column(Text, default="")
    subject: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str] = mapped_column(Text, default="")
    updated: Mapped[dt.datetime] = mapped_column(default=_now)


class ProfileRow(Base):
    """Kernel profiles of profile boots, parent against culprit (docs/explain.md): `stacks` maps
    each side ("parent", "culprit") to a list of its boots' folded stacks (text); `note` says why
    there is none when the profile could not be taken. Never a boot or run: no decision counts it.
    A store from before this table gets it, empty, when it is opened (create_all)."""

    __tablename__ = "profiles"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id"), index=True)
    parent: Mapped[str] = mapped_column(Short(128))
    culprit: Mapped[str] = mapped_column(Short(128))
    event: Mapped[str] = mapped_column(Short(64), default="")
    stacks: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    note: Mapped[str] = mapped_column(Text, default="")
    created: Mapped[dt.datetime] = mapped_column(default=_now)
