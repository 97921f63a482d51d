"""Takeovers on record: a queued campaign taken over from a runner whose heartbeat stopped is
written to the store as it happens (campaign_takeovers), as data: from which runner on which
machine, by which runner, why, when, how long the heartbeat had been silent against its
timeout, and the boots in flight it cut. `vmbisect status`, the dashboard, the report and the
mail read it back; nothing parses the words `line` and `summary` make.

    record(session, id, previous, by, at)   inside the transaction that gives the campaign to `by`
    of(store, id)                           a campaign's takeovers, oldest first
    line(t) / summary(ts)                   the words for people
"""

from __future__ import annotations

import datetime as dt
import socket
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from orchestrator.queue.rows import beat_alive
from orchestrator.store import BootRow, RunRow, TakeoverRow, WorkerRow, process_start

if TYPE_CHECKING:
    from orchestrator.store import Store

IN_FLIGHT = "booting"  # a boot whose guest never came up nor failed (Store.start_boot)


class TakeoverCause(StrEnum):
    """Why a campaign changed runner: its runner's heartbeat stopped for longer than its timeout
    (killed, frozen, its machine lost), or its process on this machine is gone although its
    last heartbeat is younger than that (the queue gave its campaign away first)."""

    HEARTBEAT_LOST = "heartbeat_lost"
    PROCESS_GONE = "process_gone"


WORDS = {TakeoverCause.HEARTBEAT_LOST: "heartbeat lost", TakeoverCause.PROCESS_GONE: "its process is gone"}


@dataclass(frozen=True)
class LostBoot:
    """A boot in flight when its runner was lost: its id, commit and the runs it had stored."""

    boot_id: int
    commit: str
    runs: int


@dataclass(frozen=True)
class Takeover:
    campaign_id: int
    at: dt.datetime  # the store's clock, naive UTC
    from_worker: str
    from_machine: str  # "" when the runner's row was gone
    by_worker: str
    why: TakeoverCause
    silent_s: float | None  # how long its heartbeat had been silent; None when its row was gone
    timeout_s: float | None
    lost: tuple[LostBoot, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "at": self.at.isoformat(), "why": self.why.value,
                "lost": [asdict(b) for b in self.lost]}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Takeover:
        return Takeover(int(d["campaign_id"]), dt.datetime.fromisoformat(d["at"]), d["from_worker"],
                        d["from_machine"], d["by_worker"], TakeoverCause(d["why"]), d["silent_s"], d["timeout_s"],
                        tuple(_lost(b) for b in d["lost"]))


def _lost(b: dict[str, Any]) -> LostBoot:
    return LostBoot(int(b["boot_id"]), str(b["commit"]), int(b["runs"]))


def record(s: Session, campaign_id: int, previous: str, by: str, at: dt.datetime) -> Takeover | None:
    """The takeover of `campaign_id` by runner `by` from `previous`, written in `s`'s transaction,
    and the lost runner's heartbeat row removed (listed as lost until now). None, and nothing
    written, when `previous` still beats and, on this machine, still runs: then the campaign is
    not taken (its lock decides)."""
    worker = s.get(WorkerRow, previous)
    gone = (worker is not None and worker.machine == socket.gethostname()
            and process_start(worker.pid) != worker.pid_started)
    if worker is not None and beat_alive(worker, at) and not gone:
        return None
    in_flight = [b for b in s.scalars(select(BootRow).where(BootRow.campaign_id == campaign_id,
                                                             BootRow.status.in_([IN_FLIGHT, "ok"]))
                                      .order_by(BootRow.id))
                 if b.status == IN_FLIGHT or cut_short(b, worker)]
    runs: dict[int, int] = dict(s.execute(select(RunRow.boot_id, func.count()).where(
        RunRow.boot_id.in_([b.id for b in in_flight])).group_by(RunRow.boot_id)).all())
    why = TakeoverCause.HEARTBEAT_LOST if worker is None or not beat_alive(worker, at) else TakeoverCause.PROCESS_GONE
    took = Takeover(campaign_id, at, previous, worker.machine if worker else "", by, why,
                    round((at - worker.last_beat).total_seconds(), 1) if worker else None,
                    worker.timeout_s if worker else None,
                    tuple(LostBoot(b.id, b.commit, runs.get(b.id, 0)) for b in in_flight))
    s.add(TakeoverRow(campaign_id=campaign_id, at=at, from_worker=took.from_worker, from_machine=took.from_machine,
                      by_worker=by, why=took.why.value, silent_s=took.silent_s, timeout_s=took.timeout_s,
                      lost=[asdict(b) for b in took.lost]))
    if worker is not None:
        s.delete(worker)
    return took


def cut_short(boot: BootRow, worker: WorkerRow | None) -> bool:
    """A boot the lost runner had up and measuring: its guest came up (`ok`) after the runner
    started, and its end (`whole`, measure/judge.py) was never stored."""
    return worker is not None and boot.created >= worker.started and not (boot.facts or {}).get("whole")


def of(store: Store, campaign_id: int) -> list[Takeover]:
    with store.session() as s:
        rows = list(s.scalars(select(TakeoverRow).where(TakeoverRow.campaign_id == campaign_id)
                              .order_by(TakeoverRow.id)))
    return [Takeover(r.campaign_id, r.at, r.from_worker, r.from_machine, r.by_worker, TakeoverCause(r.why), r.silent_s,
                     r.timeout_s, tuple(_lost(b) for b in r.lost))
            for r in rows]


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _boots(n: int) -> str:
    return f"{n} boot{'' if n == 1 else 's'} lost"


def summary(takeovers: list[Takeover]) -> str:
    """"taken over once; 1 boot lost"; "" for a campaign never taken over."""
    if not takeovers:
        return ""
    return f"taken over {_times(len(takeovers))}; {_boots(sum(len(t.lost) for t in takeovers))}"


def line(t: Takeover) -> str:
    """One takeover in a line: when, by whom, from whom, why, what it cut."""
    silent = ("its heartbeat row was gone" if t.silent_s is None
              else f"silent {t.silent_s:g} s, timeout {t.timeout_s:g} s")
    lost = "; ".join(f"boot {b.boot_id} of {b.commit[:12]} ({b.runs} run{'' if b.runs == 1 else 's'} stored)"
                     for b in t.lost) or "no boot in flight"
    where = f" on {t.from_machine}" if t.from_machine else ""
    return (f"{t.at:%Y-%m-%d %H:%M:%S} UTC taken over by {t.by_worker} from {t.from_worker}{where}: "
            f"{WORDS[t.why]} ({silent}); lost: {lost}")
