"""The campaign shell: what every search over kernels does around its search, written once.
Commit bisection (orchestrator/bisect/engine.py) and set bisection
(orchestrator/setbisect/setbisection.py) stand on it; `verify` and the comparison use its move and
its end state.

- The lab (`lab`): one judge per host of the campaign's slots (measure/judges.py `Judges`), for
  any slot count: one slot is one host whose measurer may move to another host when its host
  fails; several are pinned each to its host. Home (`judge`) is the first live host: endpoints,
  confirmation and re-examination are measured there. `moving` starts the campaign again on the
  next host whenever home fails outside the slot loop: the boot in flight stored as lost (its
  runs kept, never compared), the move as a decision of role `host`, the references measured
  again there. A pinned host, or no host left, raises the failure: the campaign pauses as on any
  host fault (orchestrator/kinds/run.py).
- The endpoints (`endpoints`, `check_on`, `check_every_host`): both sides checked sequentially
  (measure/endpoints.py) on a judge, or on every host at once; a side that does not build, boot
  or run is stored as failed, a check that does not start as refused (each raised to the user as
  the search's own error), and the check that starts the campaign stored once as the endpoint
  decisions.
- The boots of one candidate (`boot_until`): the references refreshed (A B B A), then the boot
  the search's rule asks for, until that rule decides.
- A candidate's fault (`fault_basis`): which skip a build, boot or workload failure is;
  an identical kernel (`inherited`): the verdict of a measured candidate with the same identity
  (kernel image, or kernel and settings) carried without a boot.
- Progress (`emit`) and the end state (`end`, through orchestrator/states.py, the one writer of
  a campaign's state).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from orchestrator.decisions import JUDGED, Basis, Decided, Role
from orchestrator.errors import BootFailed, BuildFailed, KernelFault, UserError
from orchestrator.measure.endpoints import EndpointCheck, Threshold, endpoint_decisions, measure_endpoints
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.judges import Halted, JudgeHost, Judges, hosts_of
from orchestrator.ports import Event, KernelBuilds, Measurer
from orchestrator.results import StopKind, Stopped
from orchestrator.states import end, stop

T = TypeVar("T")


class Refused(UserError):
    """The endpoints do not allow a meaningful search; the message says why (stored as refused)."""


class SideFailed(Refused):
    """A side does not build, boot or run the workload: no candidate can be judged against it.
    Stored as failed, with the message as the reason."""


@dataclass(frozen=True)
class EndpointRules:
    """How the endpoints are checked (measure/endpoints.py measure_endpoints): the metric's
    direction and threshold, runs per boot, boots a side (at least `boots`, at most
    `max_boots`), alpha and the error a verdict may have; `early`: a clear check may start the
    campaign before `boots` a side."""

    direction: str
    threshold: Threshold
    runs_per_boot: int
    boots: int
    max_boots: int
    alpha: float
    error: float
    early: bool = False


def fault_basis(exc: KernelFault) -> Basis:
    """Which skip a candidate's fault is: a build, a boot, or (default) the workload; a
    fault class may name its own (`basis`)."""
    if isinstance(exc, BuildFailed):
        return Basis.BUILD_FAILED
    if isinstance(exc, BootFailed):
        return Basis.BOOT_FAILED
    basis: Basis = getattr(exc, "basis", Basis.WORKLOAD_FAILED)
    return basis


def inherited(key: str, role: Role, known: Sequence[Decided], identity: Callable[[str], Any],
              reason: Callable[[Decided], str]) -> Decided | None:
    """The verdict of the latest measured decision among `known` whose candidate has `key`'s
    identity (its kernel image; for a set bisection, its kernel and settings), carried by `key`
    without a boot (`reason(source)` says so); None when `key` has no identity yet or none
    matches."""
    mine = identity(key)
    if mine is None:
        return None
    for d in reversed(known):
        if d.commit != key and d.verdict in JUDGED and not d.inherited and identity(d.commit) == mine:
            return Decided(key, role, d.verdict, reason(d), d.confidence, 0, Basis.INHERITED, d.commit)
    return None


def boot_until(judge: Judge, good: str, bad: str, next_boot: Callable[[], str | None],
               booted: Callable[[str], None] = lambda _key: None, halt: threading.Event | None = None) -> None:
    """Boots on `judge`'s host until `next_boot()` (the search's rule, on the evidence so far)
    asks for none: each time the references booted again first when due (Judge.refresh), then
    the key it asks for, `booted(key)` told after. With `halt`, no boot starts once it is set
    (another slot failed: Halted)."""
    while (key := next_boot()) is not None:
        if halt is not None and halt.is_set():
            raise Halted(key)
        judge.refresh(good, bad)
        judge.boot_once(key)
        booted(key)


class CampaignShell:
    """Campaign `campaign_id` of `store` measured by `slots` (one measurer per slot, each pinned
    to its host) or, with one slot or none, by `measurer` (which may move to another host when
    its host fails), kernels from `builder`, `metric`
    measured `runs_per_boot` times per guest. `on_event` gets the progress: each event names
    its key by `name(key)` and carries the search's `step()`; `label(key)` names a key in the
    moves stored."""

    def __init__(self, store: CampaignStore, campaign_id: int, builder: KernelBuilds, metric: str,
                 runs_per_boot: int, measurer: Measurer, slots: Sequence[Measurer], on_event: Callable[[Event], None],
                 step: Callable[[], int] = lambda: 0, name: Callable[[str], str] = lambda key: key,
                 label: Callable[[str], str] = lambda key: key) -> None:
        self.store, self.campaign_id, self.builder = store, campaign_id, builder
        self.metric, self.runs_per_boot = metric, runs_per_boot
        self.on_event, self.step, self.name = on_event, step, name
        self._start = time.monotonic()
        self.judges: list[Judge] = []  # every host's, the dropped ones too
        one = len(slots) <= 1  # the one place a campaign's slot count is chosen
        hosts = [JudgeHost(measurer.host or "", self._judge(measurer))] if one else hosts_of(slots, self._judge)
        self.lab = Judges(hosts, store, campaign_id, self.emit, label, one=one)
        self._home = hosts[0].judge

    def _judge(self, measurer: Measurer) -> Judge:
        judge = Judge(self.campaign_id, self.store, self.builder, measurer, self.metric, self.runs_per_boot,
                      lambda phase, key, samples, message: self.emit(phase, key, samples, message))
        self.judges.append(judge)
        return judge

    @property
    def judge(self) -> Judge:
        """The home host's judge: the first live host of the lab (the last one, once none is)."""
        if self.lab.hosts:
            self._home = self.lab.home.judge
        return self._home

    @property
    def several(self) -> bool:
        """The campaign measures on several slots at once (the slot loop), not one after another."""
        return not self.lab.one

    def emit(self, phase: str, key: str = "", samples: int = 0, message: str = "", steps_left: int = 0) -> None:
        self.on_event(Event(phase, self.name(key) if key else "", self.step(), steps_left, samples, message,
                            time.monotonic() - self._start))

    def moving(self, work: Callable[[], T]) -> T:
        """`work` (the campaign), started again on the next host whenever home fails outside the
        slot loop (measure/judges.py `Judges.moving`); the lab's threads stopped at the end."""
        try:
            return self.lab.moving(work)
        finally:
            self.lab.close()

    # ---- the endpoints -----------------------------------------------------------------------

    def check_on(self, judge: Judge, good: str, bad: str, rules: EndpointRules,
                 failed: Callable[[str, str, KernelFault], SideFailed]) -> EndpointCheck:
        """Both sides on `judge`'s host, checked sequentially (measure/endpoints.py); a side's
        fault raised as `failed(side, key, fault)`."""
        r = rules
        try:
            return measure_endpoints(judge, good, bad, r.direction, r.threshold, r.runs_per_boot, r.boots, r.max_boots,
                                     r.alpha, r.error, lambda check: self.emit("endpoints", message=check.message),
                                     early=r.early)
        except KernelFault as exc:
            raise failed("good" if judge.booting == good else "bad", judge.booting, exc) from exc

    def check_every_host(self, good: str, bad: str, rules: EndpointRules,
                         failed: Callable[[str, str, KernelFault], SideFailed]) -> EndpointCheck:
        """Every live host's references checked at once, each on its own host (`check_on`); a
        host other than home whose check does not start leaves the lab; home's check."""
        lab = self.lab
        if len(lab.hosts) <= 1:
            return self.check_on(self.judge, good, bad, rules, failed)
        checks = lab.on_every_host(lambda h: self.check_on(h.judge, good, bad, rules, failed))
        for h, ch in list(zip(lab.hosts, checks))[1:]:
            if not ch.ok:
                lab.drop(h.name)
        return checks[0]

    def endpoints(self, check: Callable[[], EndpointCheck], good: str, bad: str,
                  refused: Callable[[str], Refused]) -> EndpointCheck:
        """The endpoints' check (`check()`, which raises SideFailed for a side's fault: stored as
        failed); one that does not start the campaign stored as refused and raised as
        `refused(message)`; one that does, stored once as the endpoint decisions."""
        try:
            result = check()
        except SideFailed as exc:
            stop(self.store, self.campaign_id, Stopped(StopKind.FAILED, str(exc)))
            raise
        if not result.ok:
            stop(self.store, self.campaign_id, Stopped(StopKind.REFUSED, result.message, result.problem or "",
                                                       result.suggested))
            raise refused(result.message)
        if not any(d.role is Role.GOOD for d in self.store.decisions(self.campaign_id)):
            for d in endpoint_decisions(result, good, bad, self.judge.runs):
                self.store.add_decision(self.campaign_id, d)
        return result

    def end(self, result: Any) -> None:
        end(self.store, self.campaign_id, result)
