"""The lab of judges (`Judges`): a campaign's lab hosts, one judge per host against its own
references, and the slot loop that keeps every slot measuring; both searches (commit
bisection's rounds, orchestrator/bisect/search.py, and a set bisection's candidates,
orchestrator/setbisect/setbisection.py) call it with what to measure next and read the verdicts
back from the store; neither owns a thread. The campaign shell (orchestrator/measure/shell.py)
builds it, for any slot count.

- Hosts: `JudgeHost`, one per distinct host of the campaign's slots (wiring.lab_slots), its
  judge, how many slots it gives and the lock under which its references are booted; the first
  live one is home (endpoints, confirmation, re-examination are measured there).
- The slot loop (`until`): every free slot measures the next key wanted (`measure(host, key)`,
  in a thread of its own), at most one slot per key; it waits for the first to end and fills
  again, until the caller's `done()`.
- A host failing (HostFailed): its boot in flight is stored as lost (the judge does), its slots
  leave the campaign and the move is stored (`lost`, one decision of role `host`:
  decisions.moved), and what it measured goes to another slot when still wanted. Home failing
  outside the loop (`moving`, the one move of every campaign) makes the next live host home; a
  campaign of one slot goes on on the host its measurer moves on to (measure/judge.py `move`).
  Any other failure stops the other slots at their next boot (`halt`), with their boots stored
  and no verdict, and is raised once they stopped: a resumed campaign goes on from the store.
- Build-ahead (`build_ahead`): the kernels a search may ask next, built by a thread of the lab
  on the build CPUs while a round measures.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from orchestrator.decisions import moved
from orchestrator.errors import BuildFailed, HostFailed, InfraError
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.ports import Measurer

T = TypeVar("T")


class Halted(Exception):
    """A slot stopped between two boots because another slot failed."""


@dataclass
class JudgeHost:
    """A lab host of the campaign: its judge (its own references), its slots, and the lock under
    which its references are booted before its first measurement."""

    name: str
    judge: Judge
    slots: int = 1
    references: threading.Lock = field(default_factory=threading.Lock)


def hosts_of(slots: Sequence[Measurer], judge_of: Callable[[Measurer], Judge]) -> list[JudgeHost]:
    """One host per distinct host of `slots` (the lab's slots, each pinned to its host), in their
    order (the first is home), its judge `judge_of` its first slot's measurer (which boots its
    guests on any of its slots), its slots counted."""
    hosts: dict[str, JudgeHost] = {}
    for m in slots:
        name = m.host or ""
        if name in hosts:
            hosts[name].slots += 1
        else:
            hosts[name] = JudgeHost(name, judge_of(m))
    return list(hosts.values())


class Judges:
    """The campaign's live hosts, in order (the first is home), and their slots' loop. `emit(phase,
    key, message=...)` reports progress; `label(key)` names a key in the moves stored. `one`: the
    campaign has one slot, whose measurer may go on on another host of the pool when its host
    fails (`on_move`: how that move is recorded, default the judge's decision of role `host`)."""

    def __init__(self, hosts: list[JudgeHost], store: CampaignStore, campaign_id: int,
                 emit: Callable[..., None] = lambda *a, **k: None, label: Callable[[str], str] = lambda k: k,
                 one: bool = False, on_move: Callable[[HostFailed], None] | None = None) -> None:
        self.hosts, self.store, self.campaign_id, self.emit, self.label = hosts, store, campaign_id, emit, label
        self.one, self.on_move = one, on_move
        self.halt = threading.Event()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._running: dict[Future[None], tuple[JudgeHost, str]] = {}

    @classmethod
    def of(cls, judge: Judge, on_move: Callable[[HostFailed], None] | None = None) -> Judges:
        """The lab of one slot: `judge`'s measurer, which may move to another host."""
        return cls([JudgeHost(judge.measurer.host or "", judge)], judge.store, judge.campaign_id, one=True,
                   on_move=on_move)

    @property
    def slots(self) -> int:
        """The live slots."""
        return sum(h.slots for h in self.hosts)

    @property
    def home(self) -> JudgeHost:
        return self.hosts[0]

    def drop(self, name: str) -> None:
        self.hosts = [h for h in self.hosts if h.name != name]

    # ---- a host failing ----------------------------------------------------------------------

    def lost(self, host: JudgeHost, exc: HostFailed, key: str = "", what: str = "") -> None:
        """`host` failed under `key` (or, with none, outside a measurement): its boot in flight is
        stored as lost (the judge did), its slots leave the campaign, and the move is stored,
        once. `what`: what goes on (default: the campaign, on the other hosts)."""
        what = what or "the campaign goes on on the other hosts"
        with self._lock:
            if host not in self.hosts:
                return
            self.drop(host.name)
            self.store.add_decision(self.campaign_id, moved(exc.host, exc.reason, key, what))
        self.emit("requeue", key, message=f"{exc}; {what}")

    def moving(self, work: Callable[[], T]) -> T:
        """`work` (the campaign), started again whenever its host fails outside the slot loop
        (the endpoints, the confirmation): with one slot, on the host its measurer moves on to;
        with several, while another host is left, that one is home from then on."""
        while True:
            try:
                return work()
            except HostFailed as exc:
                if not self._moved(exc):
                    raise

    def _moved(self, exc: HostFailed) -> bool:
        if self.one:
            return self.home.judge.move(exc, self.on_move)
        host = next((h for h in self.hosts if h.name == exc.host), None)
        if host is None or len(self.hosts) <= 1:
            return False
        self.lost(host, exc)
        return True

    def build_ahead(self, keys: list[str], cpus: Sequence[int]) -> None:
        """`keys`' kernels built in the background by home's judge on the build CPUs `cpus` while
        a round measures (processes inherit the thread's CPUs; the builder is serialised per
        repository; a build-ahead's fault is found again when the key is measured)."""
        judge = self.home.judge

        def build() -> None:
            os.sched_setaffinity(0, cpus)  # this thread only: the guests' cores stay theirs
            for key in keys:
                try:
                    judge.kernel(key)
                except (BuildFailed, InfraError):
                    continue

        threading.Thread(target=build, name="build-ahead", daemon=True).start()

    # ---- the slot loop -----------------------------------------------------------------------

    def until(self, done: Callable[[], bool], wanted: Callable[[int], list[str]],
              measure: Callable[[JudgeHost, str], None], ahead: bool = False) -> None:
        """Measure until `done()`: every free slot takes the next of `wanted(slots)` not measured
        yet (`measure(host, key)`); a key whose host failed is wanted again on another slot.
        `ahead`: the keys after the first are the ones the search may ask next (measured ahead,
        and said so), and a key booted already (under way when the campaign stopped) goes on on
        its own host, once a slot of it is free (elsewhere its boots would not count)."""
        while not done():
            self._fill(wanted(self.slots), measure, ahead)
            if not self._running:
                raise InfraError(f"no host of the lab is up to measure {', '.join(wanted(self.slots))}")
            self._wait()

    def on_every_host(self, work: Callable[[JudgeHost], T]) -> list[T]:
        """`work(host)` on every live host at once; the answers in the hosts' order (the first
        failure raised once all ended)."""
        with ThreadPoolExecutor(len(self.hosts), thread_name_prefix="host") as pool:
            futures = [pool.submit(work, h) for h in self.hosts]
        return [f.result() for f in futures]

    def warm(self, references: Callable[[JudgeHost], None]) -> None:
        """Each host but home boots its references (`references(host)`) on one of its slots, while
        home checks the endpoints: its first measurement then needs no wait for them."""
        for host in self.hosts[1:]:
            self._running[self._executor().submit(references, host)] = (host, "")

    def drain(self) -> None:
        """Wait for every measurement still under way (its verdict is stored as evidence)."""
        while self._running:
            self._wait()

    def close(self) -> None:
        self.halt.set()
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max(1, self.slots), thread_name_prefix="slot")
        return self._pool

    def _fill(self, keys: list[str], measure: Callable[[JudgeHost, str], None], ahead: bool) -> None:
        busy = Counter(host.name for host, _key in self._running.values())
        running = {key for _host, key in self._running.values()}
        first = keys[0] if keys else ""
        for key in dict.fromkeys(keys):
            if key in running:
                continue
            free = [h for h in self.hosts if busy[h.name] < h.slots]
            if not free:
                return
            booted = [h for h in self.hosts if h.judge.evidence().get(key)] if ahead else []
            if booted and booted[0] not in free:
                continue
            host = booted[0] if booted else free[0]
            busy[host.name] += 1
            running.add(key)
            if ahead and key != first:
                self.emit("round", key, message=f"measured ahead on {host.name or 'the home host'} (the search may "
                          "ask it next)")
            self._running[self._executor().submit(measure, host, key)] = (host, key)

    def _wait(self) -> None:
        done, _ = wait(self._running, return_when=FIRST_COMPLETED)
        failure: BaseException | None = None
        for f in done:
            host, key = self._running.pop(f)
            try:
                f.result()
            except HostFailed as exc:
                self.lost(host, exc, key, f"{self.label(key)} goes to another slot" if key else "")
            except BaseException as exc:  # noqa: BLE001 -- raised below, once every slot stopped
                failure = failure or exc
        if failure is not None:
            self.halt.set()
            for f in list(self._running):
                try:
                    f.result()
                except BaseException:  # noqa: BLE001, S110 -- stopped (Halted) or failing too: the first one is raised
                    pass
            self._running.clear()
            raise failure
