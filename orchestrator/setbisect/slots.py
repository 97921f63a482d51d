"""A set bisection on the lab's slots (orchestrator/wiring.py `lab_slots`, as commit bisection's):
one judge per lab host, judging against references booted on that host (while home checks the
endpoints: `warm`); the slots of one host share its judge. While the search waits for the
candidate it asks, the other slots measure the candidates it may ask next (search.ahead:
`base + B` while it asks `base + A`). Each verdict is stored when it is reached, and the search takes it
from the store when it asks that candidate, as a resumed search does; one it never asks for
stays stored as evidence (the report and the result list it as measured ahead).

A slot's host failing (HostFailed) stores its boot in flight as lost (the judge does), drops
that host's slots, records a decision of role `host` naming the candidate, and the candidate
goes to another slot when the search still wants it. Any other failure of a slot (a controller
killed) stops the other slots at their next boot, with their boots stored and no verdict, and
is raised: a resumed campaign goes on with those candidates from their stored boots.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from orchestrator.decisions import Decided, Kind, Marker, Role
from orchestrator.errors import HostFailed, InfraError
from orchestrator.measure.judge import CampaignStore, Judge

T = TypeVar("T")


class Halted(Exception):
    """A slot stopped between two boots because another slot failed."""


@dataclass
class Host:
    """A lab host of the campaign: its judge (its own references), its slots, and the lock under
    which its references are booted before its first candidate."""

    name: str
    judge: Judge
    slots: int = 1
    references: threading.Lock = field(default_factory=threading.Lock)


class Slots:
    """`hosts`' slots (the first host is home), each measuring one candidate at a time with
    `measure(host, key)`, which judges `key` on `host` and stores its verdict."""

    def __init__(self, hosts: list[Host], measure: Callable[[Host, str], None], store: CampaignStore,
                 campaign_id: int, emit: Callable[..., None]) -> None:
        self.hosts, self.measure, self.store, self.campaign_id, self.emit = hosts, measure, store, campaign_id, emit
        self.halt = threading.Event()
        self._pool = ThreadPoolExecutor(max(1, self.live), thread_name_prefix="slot")
        self._running: dict[Future[None], tuple[Host, str]] = {}

    @property
    def live(self) -> int:
        return sum(h.slots for h in self.hosts)

    def drop(self, name: str) -> None:
        self.hosts = [h for h in self.hosts if h.name != name]

    def answer(self, key: str, decided: Callable[[str], bool], wanted: Callable[[int], list[str]]) -> None:
        """Measure until `key` has a verdict, every free slot measuring what `wanted(slots)`
        names after it (the candidates the search may ask next)."""
        while not decided(key):
            self._fill([key, *wanted(self.live)], decided)
            if not self._running:
                raise InfraError(f"no host of the lab is up to measure {key}")
            self._wait()

    def warm(self, references: Callable[[Host], None]) -> None:
        """Each host but home boots its references (`references(host)`) on one of its slots, while
        home checks the endpoints: its first candidate then needs no wait for them."""
        for host in self.hosts[1:]:
            self._running[self._pool.submit(references, host)] = (host, "")

    def drain(self) -> None:
        """Wait for every candidate still measured (their verdicts are stored as evidence)."""
        while self._running:
            self._wait()

    def close(self) -> None:
        self.halt.set()
        self._pool.shutdown(wait=True)

    def _fill(self, keys: list[str], decided: Callable[[str], bool]) -> None:
        busy = Counter(host.name for host, _key in self._running.values())
        running = {key for _host, key in self._running.values()}
        for key in dict.fromkeys(keys):
            if key in running or decided(key):
                continue
            free = [h for h in self.hosts if busy[h.name] < h.slots]
            if not free:
                return
            # a candidate booted already (under way when the campaign stopped) goes on on its host,
            # once a slot of it is free: elsewhere its boots would not count
            booted = [h for h in self.hosts if h.judge.evidence().get(key)]
            if booted and booted[0] not in free:
                continue
            host = booted[0] if booted else free[0]
            busy[host.name] += 1
            running.add(key)
            if key != keys[0]:
                self.emit("round", key, message=f"measured ahead on {host.name or 'the home host'} (the search may "
                          "ask it next)")
            self._running[self._pool.submit(self.measure, host, key)] = (host, key)

    def _wait(self) -> None:
        done, _ = wait(self._running, return_when=FIRST_COMPLETED)
        failure: BaseException | None = None
        for f in done:
            host, key = self._running.pop(f)
            try:
                f.result()
            except HostFailed as exc:
                self._lost(host, exc, key)
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

    def moving(self, work: Callable[[], T]) -> T:
        """`work` (the campaign), started again whenever home fails outside the search (the
        endpoints, the confirmation) while another host is left: that one is home from then on."""
        while True:
            try:
                return work()
            except HostFailed as exc:
                home = next((h for h in self.hosts if h.name == exc.host), None)
                if home is None or len(self.hosts) <= 1:
                    raise
                self._lost(home, exc, "")

    def _lost(self, host: Host, exc: HostFailed, key: str) -> None:
        """A slot's host failed under `key` (or, with none, outside a candidate): its boot in
        flight is stored as lost (the judge did), its slots leave the campaign, and the move is
        stored."""
        if host not in self.hosts:
            return
        self.drop(host.name)
        what = f"{key} goes to another slot" if key else "the campaign goes on on the other hosts"
        self.store.add_decision(self.campaign_id, Decided(
            key, Role.HOST, Marker.MOVED, f"host {exc.host} failed: {exc.reason}; its boots are kept, not compared; {what}",
            0.0, 0, Kind.MOVED))
        self.emit("requeue", key, message=f"{exc}; {what}")
