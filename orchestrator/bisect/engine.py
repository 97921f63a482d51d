"""The bisection loop: measure both endpoints, then build -> boot -> measure -> decide per step,
then doubt the answer until it holds, confirm it, and give one confidence.

The boot is the unit of replication (orchestrator.stats): every commit gets at least
`boots_per_commit` guests of `runs_per_boot` runs, a step more boots (up to
`max_boots_per_commit`) until the sequential test is sure, and the references are booted again
whenever a few boots of other commits passed since their last one, alternating which goes first
(ABBA), so a drifting host shows as drift instead of as a regression.

A step whose kernel image (sha256) equals an image already judged inherits that verdict without
booting ("same image as <commit>"), and follows it when a re-examination changes it. Before an
answer is given it is doubted: a culprit whose image equals its parent's, a verdict that is not
sure against the references measured since (given doubtful at the cap, or moved by drift), a
culprit that does not differ from its parent, or whose revert does not restore the metric, when
measured on boots of their own, interleaved: each sends the verdicts that led there back for
more boots, and if one changes the bisection is replayed with it. Ambiguous candidates are
measured again while that still adds boots. What still does not hold ends inconclusive, saying
why.

Every build, boot, run, sample and decision goes to the store as it happens, and the git bisect
log after every mark, so `resume` picks up after a crash (mid-confirmation too): boots already
taken are reused, never taken twice.

Every boot a decision uses comes from one lab host: hosts differ in speed, so a step is judged
only against references measured on its own host. When that host fails (HostFailed) and the
campaign was not pinned to it, the campaign goes on on another host: the boot in flight is
stored as lost (its runs kept, never compared), the move is stored as a decision of role
`host`, the references are measured again on the new host, the verdicts already taken stand
(each was judged against its own host's references), and a confirmation under way starts
afresh. A pinned host, or no host left, pauses the campaign as any host fault does.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from orchestrator.backends.gitlog import BisectState
from orchestrator.bisect.pairs import Pairs
from orchestrator.bisect.posterior import llr_of
from orchestrator.bisect.rounds import NOMINATE
from orchestrator.bisect.search import Search, SearchEnd, latest
from orchestrator.bisect.steps import (
    Share,
    combined,
    in_history,
    mark_crossing,
    partial_line,
    reverted,
    settles_by,
    share,
    step_of,
    stop,
    together,
    worth_searching,
)
from orchestrator.campaign.file import Campaign
from orchestrator.decisions import JUDGED, Basis, Decided, PairVerdict, Role, Verdict
from orchestrator.errors import (
    BootFailed,
    BuildFailed,
    InfraError,
    KernelFault,
    UserError,
)
from orchestrator.measure.decide import ERROR, verdict_of
from orchestrator.measure.endpoints import (
    EndpointCheck,
    endpoint_decisions,
    measure_endpoints,
)
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.lab import JudgeHost, Judges, hosts_of
from orchestrator.measure.pairs import Sequential, measure_pair, pair_since, pair_state, settled
from orchestrator.ports import Event, KernelBuilds, Measurer
from orchestrator.results import BisectOutcome, BisectResult, RegressionStep, StepsEnd, StopKind, Stopped
from orchestrator.stats import TwoSample, compare_pooled, drift, pooled_boot_variance

# Build-ahead builds the next picks of this many of the likeliest outcomes of a round.
AHEAD_OUTCOMES = 2
# A re-examined step may have this many times max_boots_per_commit, once more for each further
# re-examination, up to REEXAMINATIONS of them.
REEXAMINE_BOOTS = 2
REEXAMINATIONS = 2
# Rounds of doubt (re-examine, replay when a verdict changed) before the answer is given with
# what still does not hold.
MAX_ROUNDS = 6
# A confidence below this is called low in every output.
HIGH_CONFIDENCE = 0.95
# The most confidence an answer gets when its confirmation or revert still contradicts it.
CONTRADICTED = 0.5

class Doubt(StrEnum):
    """Why an answer is doubted before it is given (the sentence beside it is for people):
    the culprit builds its parent's image (`noop`), verdicts not sure against the references
    measured since (`unsure`), the revert does not restore the metric (`revert`), the culprit
    does not differ from its parent re-measured (`not_seen`), only ambiguous skips left
    (`ambiguous`)."""

    NOOP = "noop"
    UNSURE = "unsure"
    REVERT = "revert"
    NOT_SEEN = "not_seen"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class Doubts:
    """The verdicts to re-examine before an answer can be given, and why (`kind` none: none)."""

    commits: list[str] = field(default_factory=list)
    kind: Doubt | None = None
    why: str = ""


@dataclass(frozen=True)
class Outcome:
    """What `run` answers: the bisection's `outcome` (found: a culprit; only_skipped: the culprit
    is one of `candidates`, which could not be tested; inconclusive: `candidates` is the range
    left, `notes` say why), the typed `result` the store keeps, the endpoints' check and the
    steps taken."""

    outcome: BisectOutcome
    culprit: str = ""
    candidates: tuple[str, ...] = ()
    endpoints: EndpointCheck | None = None
    steps: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    confidence: float = 0.0
    result: BisectResult | None = None


class CampaignRefused(UserError):
    """The endpoints do not allow a meaningful bisection; the message says why."""


class EndpointFailed(CampaignRefused):
    """The good or bad endpoint does not build, boot or run the workload: no step can be judged
    against it. The campaign is stored as failed with this message as its reason."""

    WHAT = {BuildFailed: "does not build", BootFailed: "does not boot"}

    def __init__(self, role: str, commit: str, fault: KernelFault) -> None:
        what = next((w for cls, w in self.WHAT.items() if isinstance(fault, cls)), "fails the workload")
        super().__init__(f"campaign refused: the {role} endpoint {commit[:12]} {what}: {fault}")
        self.fault = fault


def confidence_words(confidence: float, doubtful: list[str]) -> str:
    """One line for status, the live view and the report."""
    shown = ">99.9%" if confidence > 0.999 else f"{confidence:.1%}"
    if confidence >= HIGH_CONFIDENCE:
        return f"confidence {shown}"
    where = f"; doubtful steps: {', '.join(c[:12] for c in doubtful)}" if doubtful else ""
    return f"LOW confidence {shown}: the answer may be wrong{where}"


class Vcs(Protocol):
    """What the engine needs of the repository: orchestrator/backends/git_bisect.py's GitBisect
    (tests/fakes.py FakeVcs for the simulator)."""

    repo: Path

    def prepare(self) -> None: ...
    def resolve(self, rev: str, field: str) -> str: ...
    def start(self, good: str, bad: str, first_parent: bool = False) -> BisectState: ...
    def rev_list(self, good: str, bad: str, first_parent: bool = False) -> str: ...
    def parent(self, commit: str) -> str: ...
    def is_ancestor(self, ancestor: str, commit: str) -> bool: ...
    def revert(self, commit: str, onto: str) -> Any: ...


class Engine:
    """A bisection of `campaign` over `vcs`'s history: kernels from `builder`, guests from
    `measurer` (the home host: endpoints, search, confirmation). `slots`: the campaign's slots
    on the lab, one measurer per slot, each pinned to its host (orchestrator/wiring.py
    `lab_slots`; empty: one slot, `measurer`, which may move to another host when its host
    fails); slots of one host share that host's judge and references. `build_cpus`: CPUs of this
    machine that build the likeliest next picks while a round measures (the lab's `build_cpus`;
    empty: no build-ahead)."""

    def __init__(
        self,
        campaign: Campaign,
        direction: str,
        vcs: Vcs,
        builder: KernelBuilds,
        measurer: Measurer,
        store: CampaignStore,
        on_event: Callable[[Event], None] = lambda e: None,
        error: float = ERROR,
        slots: Sequence[Measurer] = (),
        build_cpus: Sequence[int] = (),
    ) -> None:
        self.c = campaign
        self.direction = direction
        self.vcs = vcs
        self.builder = builder
        self.measurer = measurer
        self.store = store
        self.on_event = on_event
        self.error = error
        self.slots = list(slots)
        self.build_cpus = tuple(build_cpus)
        self._start = time.monotonic()
        self._judge_of: Judge | None = None
        self._search: Search | None = None
        self._lab: Judges | None = None

    @property
    def search(self) -> Search:
        assert self._search is not None, "the search exists once a campaign runs"
        return self._search

    @property
    def judge(self) -> Judge:
        """The home host's judge: the first live host of the campaign's lab (endpoint decisions,
        doubts, confirmation and revert are measured there)."""
        if self._lab is not None and self._lab.hosts:
            return self._lab.hosts[0].judge
        assert self._judge_of is not None, "the judge exists once a campaign runs (judge_for)"
        return self._judge_of

    def judge_for(self, campaign_id: int, measurer: Measurer | None = None) -> Judge:
        """The campaign's judge (orchestrator/measure/judge.py) on `measurer`'s host (default: the
        home judge, through which every boot of a one-slot campaign goes)."""
        if measurer is not None and measurer is not self.measurer:
            return Judge(campaign_id, self.store, self.builder, measurer, self.c.metric.name, self.c.runs_per_boot,
                         lambda phase, key, samples, message: self._emit(phase, key, samples, message))
        if self._judge_of is None or self._judge_of.campaign_id != campaign_id:
            self._judge_of = Judge(campaign_id, self.store, self.builder, self.measurer, self.c.metric.name,
                                   self.c.runs_per_boot,
                                   lambda phase, key, samples, message: self._emit(phase, key, samples, message))
        return self._judge_of

    def lab_of(self, campaign_id: int) -> Judges:
        """The campaign's lab of judges (orchestrator/measure/lab.py): one host per distinct host
        of `slots` (its first slot's measurer boots its guests, on any of its slots), home first;
        without slots, the one measurer."""
        if self._lab is not None:
            return self._lab
        home = self.judge_for(campaign_id)
        if len(self.slots) <= 1:
            self._lab = Judges([JudgeHost(self.measurer.host or "", home)], self.store, campaign_id, self._emit)
            return self._lab
        first = self.slots[0]
        self._lab = Judges(hosts_of(self.slots, lambda m: home if m is first else self.judge_for(campaign_id, m)),
                           self.store, campaign_id, self._emit, lambda commit: commit[:12])
        self._home_moved()
        return self._lab

    def _home_moved(self) -> None:
        assert self._lab is not None
        self._judge_of = self._lab.home.judge
        self.measurer = self._judge_of.measurer

    # ---- the campaign ----------------------------------------------------------------------

    def run(self, campaign_id: int) -> Outcome:
        """Start (or resume) the campaign stored under `campaign_id`."""
        lab = self.lab_of(campaign_id)
        try:
            if len(self.slots) <= 1:
                return self.judge.moving(lambda: self._run(campaign_id))
            # the home host failed outside a round: the next host is home
            return lab.moving(lambda: self._run(campaign_id), self._home_moved)
        finally:
            lab.close()

    def _run(self, campaign_id: int) -> Outcome:
        c = self.c
        self.vcs.prepare()
        good = self.vcs.resolve(c.good, "good")
        bad = self.vcs.resolve(c.bad, "bad")
        self.vcs.start(good, bad, c.first_parent)  # pins the range in vmbisect's clone
        check = self._endpoints(campaign_id, good, bad)
        if check.threshold is not None and check.threshold != c.metric.threshold:  # `threshold: measured`
            c = self.c = dataclasses.replace(c, metric=dataclasses.replace(c.metric, threshold=check.threshold))
        if not any(d.role is Role.GOOD for d in self.store.decisions(campaign_id)):
            for d in endpoint_decisions(check, good, bad, self.judge.runs):
                self.store.add_decision(campaign_id, d)
        relative = c.metric.threshold.value if c.metric.threshold.kind == "relative" else None
        search = self._search = Search(c, self.store, campaign_id, self.vcs, good, bad, self.lab_of(campaign_id),
                                       self.error, self._emit, relative)
        if self.build_cpus:
            search.ahead = lambda outcomes: self._build_ahead(search, outcomes)
        unresolved = Doubts()
        confirmation: dict[str, Any] = {}
        asked: dict[tuple[str, ...], int] = {}
        # the first candidate is confirmed as soon as it holds 1 - NOMINATE of the mass; one whose
        # confirmation does not carry it to 1 - error, or is doubted, sends the search on to
        # 1 - error (decided from the store: a resumed campaign does the same)
        nominate = 0.0 if self._confirmed_before(campaign_id) else NOMINATE
        for round_no in range(MAX_ROUNDS + 1):
            state = self._crossing(campaign_id, search.run(nominate), good, bad)
            self.store.set_bisect_log(campaign_id, search.log(state))
            if state.kind is BisectOutcome.FOUND:
                doubts, confirmation = self._doubts(campaign_id, state.culprit, good, bad, state.mass)
                if state.mass < 1 - self.error and (doubts.commits or answer_confidence(
                        state.mass, confirmation, confirmation.get("revert")) < 1 - self.error):
                    nominate = 0.0
                    self._emit("recheck", state.culprit, message=(
                        f"the candidate {state.culprit[:12]} ({state.mass:.1%} of the mass) was not carried to "
                        f"{1 - self.error:.0%} by its confirmation: the search goes on"))
                    continue
            else:
                doubts = self._ambiguous(campaign_id, state)
            if not doubts.commits:
                break
            doubt = (str(doubts.kind), *sorted(doubts.commits))
            booted = sum(len(self.judge.evidence().get(x, [])) for x in doubts.commits)
            # the same doubt again ends the doubting: its verdicts were re-examined and held; only
            # ambiguous candidates are measured once more, while their boots still grow
            again = doubt in asked and (state.kind is BisectOutcome.FOUND or asked[doubt] == booted)
            if round_no == MAX_ROUNDS or again:
                unresolved = doubts
                break
            asked[doubt] = booted
            self._emit("recheck", state.culprit, message=doubts.why)
            self._reexamine(campaign_id, doubts.commits, good, bad, doubts.why)
            # the posterior is computed again from every boot: the next search goes on from there
        outcome = self._finish(campaign_id, state, check, good, bad, unresolved, confirmation)
        self._emit("done", outcome.culprit, message=f"{outcome.outcome}; {confidence_words(outcome.confidence, [])}")
        return outcome

    def _emit(self, phase: str, commit: str = "", samples: int = 0, message: str = "", steps_left: int = 0) -> None:
        step = self._search.steps if self._search is not None else 0
        self.on_event(Event(phase, commit, step, steps_left, samples, message, time.monotonic() - self._start))

    def _build_ahead(self, search: Search, outcomes: list[tuple[float, tuple[str, ...]]]) -> None:
        """The next picks of the two likeliest ways the round can end, built in the background
        on the build CPUs while the round measures (processes inherit the thread's CPUs; the
        builder is serialised per repository; a build-ahead's fault is found again when the
        commit is measured)."""
        slots = max(1, search.lab.slots)
        commits = search.likeliest(outcomes, slots, AHEAD_OUTCOMES * slots)
        judge, cpus = self.judge, self.build_cpus

        def build() -> None:
            os.sched_setaffinity(0, cpus)  # this thread only: the guests' cores stay theirs
            for commit in commits:
                try:
                    judge.kernel(commit)
                except (BuildFailed, InfraError):
                    continue

        threading.Thread(target=build, name="build-ahead", daemon=True).start()

    # ---- the endpoints -----------------------------------------------------------------------

    def _endpoints(self, campaign_id: int, good: str, bad: str) -> EndpointCheck:
        """Every host's references, checked sequentially (`endpoints_next`) on that host; the
        campaign is refused (or failed) on the home host's check; another host whose check does
        not start leaves the lab."""
        lab = self.lab_of(campaign_id)
        try:
            if len(lab.hosts) > 1:
                checks = lab.on_every_host(lambda h: self._check_endpoints(h.judge, good, bad))
                for h, ch in list(zip(lab.hosts, checks))[1:]:
                    if not ch.ok:
                        lab.drop(h.name)
                check = checks[0]
            else:
                check = self._check_endpoints(self.judge, good, bad)
        except EndpointFailed as exc:
            self.store.set_state(campaign_id, "failed", Stopped(StopKind.FAILED, str(exc)).to_dict())
            raise
        if not check.ok:
            self.store.set_state(campaign_id, "refused", Stopped(StopKind.REFUSED, check.message, check.problem or "",
                                                                 check.suggested).to_dict())
            raise CampaignRefused(f"campaign refused: {check.message}")
        return check

    def _check_endpoints(self, judge: Judge, good: str, bad: str) -> EndpointCheck:
        """Both endpoints on `judge`'s host, checked sequentially (measure/endpoints.py)."""
        c = self.c
        try:
            return measure_endpoints(judge, good, bad, self.direction, c.metric.threshold, c.runs_per_boot,
                                     c.boots_per_commit, c.max_boots_per_commit, c.alpha, self.error,
                                     lambda check: self._emit("endpoints", message=check.message), early=True)
        except KernelFault as exc:
            raise EndpointFailed("good" if judge.booting == good else "bad", judge.booting, exc) from exc

    def _latest(self, campaign_id: int) -> list[Decided]:
        """Each step commit's latest decision (a revisit or re-examination overrides the step),
        in the order the commits were first decided."""
        return list(latest(self.store.decisions(campaign_id)).values())

    # ---- doubting the answer -----------------------------------------------------------------

    def _doubts(self, campaign_id: int, culprit: str, good: str, bad: str,
                mass: float) -> tuple[Doubts, dict[str, Any]]:
        """The steps to re-examine before `culprit` can be named, and why; and the confirmation
        measured on the way (culprit against parent, then the revert), which carry the
        candidate from its posterior `mass` to the campaign's 1 - error."""
        latest = self._latest(campaign_id)
        judged = [d for d in latest if d.verdict in JUDGED]
        parent = self.vcs.parent(culprit)
        images = self.judge.images()
        try:
            self.judge.kernel(parent)
            self.judge.kernel(culprit)
            images = self.judge.images()
        except BuildFailed:
            pass
        if images.get(parent) and images.get(parent) == images.get(culprit):
            # the culprit's badness and the parent's goodness cannot both hold: re-examine the
            # verdicts that made the culprit bad and the ones that made its parent good
            return Doubts(self._boundary(campaign_id, judged, culprit, parent), Doubt.NOOP, (
                f"the culprit {culprit[:12]}'s kernel image is identical to its parent {parent[:12]}'s: a commit "
                "that changes nothing cannot be the culprit")), {}
        moved = []
        rechecked = {d.commit for d in self.store.decisions(campaign_id) if d.role is Role.RECHECK}
        for d in judged:
            if d.inherited or d.commit in (good, bad) or d.commit in rechecked:
                continue
            # a verdict the boots measured since turned around (the posterior weighs the rest)
            odds = self.judge.odds(good, bad, d.commit)
            if odds is not None and verdict_of(odds, self.search.threshold) != d.verdict \
                    and len(self.judge.evidence().get(d.commit, [])) < REEXAMINE_BOOTS * self.c.max_boots_per_commit:
                moved.append(d.commit)
        if moved:
            return Doubts(moved, Doubt.UNSURE, (
                f"{len(moved)} verdict(s) are not sure against the references measured since (a doubtful verdict, "
                f"drift or noise): {', '.join(x[:12] for x in moved)}")), {}
        pairs = Pairs(self.c, self.direction, self.store, campaign_id, lambda: self.judge, self.vcs.revert, self.error,
                      self._emit)
        prior = llr_of(mass)
        confirmation = pairs.confirm(culprit, parent, good, bad, prior, int(self.c.confirm == "revert"))
        if self.c.confirm == "revert" and "change" in confirmation and confirmation["verdict"] is not PairVerdict.NOT_SEEN:
            confirmation["revert"] = pairs.revert(culprit, good, bad, prior + confirmation["evidence"])
            if confirmation["revert"]["verdict"] is PairVerdict.NOT_RESTORED and not self._partial(confirmation["revert"]):
                return Doubts(self._boundary(campaign_id, judged, culprit, parent), Doubt.REVERT, (
                    f"the culprit {culprit[:12]} reverted on bad does not restore the metric: "
                    f"{confirmation['revert']['text']}")), confirmation
        if confirmation.get("verdict") is PairVerdict.NOT_SEEN:
            return Doubts(self._boundary(campaign_id, judged, culprit, parent), Doubt.NOT_SEEN, (
                f"the culprit {culprit[:12]} does not differ from its parent when both are re-measured "
                f"interleaved: {confirmation['text']}")), confirmation
        return Doubts(), confirmation

    def _confirmed_before(self, campaign_id: int) -> bool:
        """A confirmation was measured already in this campaign (a nomination's, or one before a
        resume): the search goes on to 1 - error from here."""
        return any(d.role is Role.CONFIRM and d.kind is not Basis.MEASURING for d in self.store.decisions(campaign_id))

    def _ambiguous(self, campaign_id: int, state: SearchEnd) -> Doubts:
        """When only skipped commits are left: the candidates skipped as ambiguous (not the ones
        that failed to build, boot or run) and the verdicts next to them, to be re-examined with
        more boots."""
        latest = {d.commit: d for d in self._latest(campaign_id)}
        unclear = [x for x in state.candidates if x in latest and latest[x].kind is Basis.AMBIGUOUS]
        if not unclear:
            return Doubts()
        # the verdicts around the range too: a wrong one there puts the culprit outside it
        judged = [d for d in latest.values() if d.verdict in JUDGED]
        around = [x for c in unclear for x in self._boundary(campaign_id, judged, c, self.vcs.parent(c))]
        return Doubts(list(dict.fromkeys(unclear + around)), Doubt.AMBIGUOUS, (
            f"{len(unclear)} candidate(s) were skipped as ambiguous: {', '.join(x[:12] for x in unclear)}"))

    def _boundary(self, campaign_id: int, judged: list[Decided], culprit: str, parent: str) -> list[str]:
        """The verdicts that made `culprit` the answer: the nearest bad ones at or after it and the
        nearest good ones at or after its parent (one of them is wrong when the two do not
        differ), followed to the measurements they were inherited from."""
        blamed = [d.commit for d in judged if d.verdict is Verdict.BAD and self.vcs.is_ancestor(culprit, d.commit)]
        cleared = [d.commit for d in judged if d.verdict is Verdict.GOOD and self.vcs.is_ancestor(parent, d.commit)]
        # nearest: no other blamed commit between the culprit and it; no other cleared one after it
        blamed = [x for x in blamed if not any(y != x and self.vcs.is_ancestor(y, x) for y in blamed)]
        cleared = [x for x in cleared if not any(y != x and self.vcs.is_ancestor(x, y) for y in cleared)]
        return self._own_judgements(campaign_id, [*blamed, *cleared, culprit, parent])

    def _source(self, campaign_id: int, commit: str, latest: dict[str, Decided]) -> str:
        """The commit whose measured verdict `commit` carries: itself, or for an inherited verdict
        the measured commit with the same kernel image (`commit` when that is an endpoint)."""
        d = latest.get(commit)
        if d is None or not d.inherited:
            return commit
        images = self.judge.images()
        return next((x for x, e in latest.items() if x != commit and images.get(x) == images.get(commit)
                     and not e.inherited), commit)

    def _own_judgements(self, campaign_id: int, commits: list[str]) -> list[str]:
        """The commits whose verdicts were measured, following inherited ones to their source."""
        latest = {d.commit: d for d in self._latest(campaign_id)}
        out = []
        for commit in commits:
            commit = self._source(campaign_id, commit, latest)
            if commit in latest and commit not in out:
                out.append(commit)
        return out

    def _follow(self, campaign_id: int, source: Decided) -> None:
        """A re-examined verdict carried over to the commits that inherited the old one (the same
        kernel image), so no mark contradicts the measurement it came from."""
        images = self.judge.images()
        for d in self._latest(campaign_id):
            if d.commit != source.commit and d.inherited and d.verdict != source.verdict \
                    and images.get(d.commit) == images.get(source.commit):
                self.store.add_decision(campaign_id, Decided(
                    d.commit, Role.RECHECK, source.verdict, f"same image as {source.commit[:12]} ({source.verdict}); "
                    "not booted", source.confidence, 0, Basis.INHERITED, source.commit))

    def _reexamine(self, campaign_id: int, commits: list[str], good: str, bad: str, why: str) -> bool:
        """Each of `commits` booted as many times again (at least boots_per_commit, up to
        REEXAMINE_BOOTS x max_boots_per_commit, twice that when it was re-examined before) and
        judged on all its boots, ten times stronger evidence asked; True when a verdict
        changed."""
        changed = False
        decisions = self.store.decisions(campaign_id)
        latest = {d.commit: d for d in self._latest(campaign_id)}
        for commit in commits:
            before = latest.get(commit)
            have = len(self.judge.evidence().get(commit, []))
            times = sum(1 for d in decisions if d.commit == commit and d.role is Role.RECHECK)
            cap = REEXAMINE_BOOTS * self.c.max_boots_per_commit * min(times + 1, REEXAMINATIONS)
            if have >= cap:
                continue
            more = max(self.c.boots_per_commit, have)  # as many fresh boots again: the old ones may be the doubt
            d = self.search.visit(self.judge, commit, Role.RECHECK, max(have + more, self.c.boots_per_commit),
                                  max(cap, have + 1), self.error / 10)
            d = dataclasses.replace(d, reason=f"re-examined ({why[:200]}): {d.reason}")
            self._emit("decide", commit, d.samples, f"{d.verdict}: {d.reason}")
            self.store.add_decision(campaign_id, d)
            if before is None or before.verdict != d.verdict:
                changed = True
                self._follow(campaign_id, d)
        return changed

    # ---- confirmation ------------------------------------------------------------------------

    # ---- the answer --------------------------------------------------------------------------

    def _finish(self, campaign_id: int, state: SearchEnd, check: EndpointCheck, good: str, bad: str,
                unresolved: Doubts, confirmation: dict[str, Any]) -> Outcome:
        latest = self._latest(campaign_id)
        measured = [d for d in latest if d.verdict in JUDGED and not d.inherited]
        # the posterior's mass of the answer (every boot of every commit, as the search weighs
        # them now): the chance that the culprit is the one named (or in the class named)
        confidence = state.mass
        doubtful = [d.commit for d in measured if d.confidence < 1 - self.error]
        moves = [d.reason for d in self.store.decisions(campaign_id) if d.role is Role.HOST]
        if moves and len(self.slots) <= 1:
            moves.append(f"the references were measured again on {self.judge.on}, which measured every step "
                         "after the move; no sample of one host was compared with another's")
        notes = [x for x in (unresolved.why, self._drift(campaign_id, good, bad), *moves) if x]
        everywhere = self.store.boot_samples(campaign_id, self.c.metric.name)
        kind, culprit, candidates = state.kind, state.culprit, state.candidates
        if state.kind is BisectOutcome.FOUND and unresolved.kind is Doubt.NOOP:
            kind, culprit = BisectOutcome.INCONCLUSIVE, ""
            candidates = (self.vcs.parent(state.culprit), state.culprit)
            confidence = 0.0
        revert = confirmation.pop("revert", None) if kind is BisectOutcome.FOUND else None
        if kind is BisectOutcome.FOUND:
            # a revert that takes part of the gap away weighs nothing: its evidence is for all of it
            confidence = answer_confidence(confidence, confirmation, None if self._partial(revert) else revert)
            if unresolved.kind in (Doubt.REVERT, Doubt.NOT_SEEN):
                # its own confirmation contradicts the answer after the steps were re-examined and
                # held: the sequential pairs stop early, so their evidence alone may not outweigh
                # the steps'; the answer is named, never with high confidence
                confidence = min(confidence, CONTRADICTED)
        steps: dict[str, Any] = {}
        if kind is BisectOutcome.FOUND and confirmation.get("verdict") is PairVerdict.CONFIRMED:
            log = self.search.log(state)
            steps = self._steps(campaign_id, culprit, good, bad, revert, state.mass, notes)
            self.store.set_bisect_log(campaign_id, log)  # the searches for more steps wrote theirs
            everywhere = self.store.boot_samples(campaign_id, self.c.metric.name)
        result = BisectResult(
            kind, culprit, self.vcs.parent(culprit) if culprit else "",
            () if kind is BisectOutcome.FOUND else tuple(candidates), confidence, confidence_words(confidence, doubtful),
            tuple(doubtful), tuple(notes), sum(1 for d in latest if d.inherited), self.judge.on,
            sum(len(v) for v in everywhere.values()), confirmation if kind is BisectOutcome.FOUND else {}, revert,
            **steps)
        self.store.set_state(campaign_id, "done", result.to_dict())
        return Outcome(result.outcome, culprit, tuple(candidates), check, self.search.steps, tuple(notes), confidence, result)

    # ---- the regression's steps -------------------------------------------------------------

    def _steps(self, campaign_id: int, culprit: str, good: str, bad: str, revert: dict[str, Any] | None,
               mass: float, notes: list[str]) -> dict[str, Any]:
        """The confirmed culprit's share of the good-to-bad gap and, when it carries clearly less
        than all of it and the campaign did not ask for the first step only, the other steps:
        each range left (good to the culprit's parent, the culprit to bad) that carries a part
        worth a search (steps.worth_searching) is bisected against its own ends, its culprit
        confirmed against its parent on fresh boots, until the steps add up (steps.stop); then
        bad with every step reverted together against bad: when nothing of the gap is seen left
        with all of them reverted (the interval of where it lands reaches good), the steps add
        up though their shares, each measured at its own time, summed short of the whole. The
        BisectResult's step fields; why a search named nothing goes to `notes`."""
        parent = self.vcs.parent(culprit)
        gap = self._pooled(good, bad)
        if gap is None or self._pooled(parent, culprit) is None:
            return {}
        first = self._share_check(campaign_id, culprit, parent, bad, gap, revert)
        own = self._pooled(parent, culprit)
        assert own is not None
        gap_log = math.log1p(gap.change)
        position = (revert or {}).get("position")
        rest = math.expm1(gap_log * (position if position is not None else 1 - first.value))
        named = [step_of(culprit, parent, first, own, True, self._alone(own))]
        shares = [first]
        end = stop(shares, self.c.steps.min_share)
        if end is None and self.c.steps.first:
            end = StepsEnd.FIRST
        ranges = [(good, parent), (culprit, bad)]
        while end is None and ranges:
            lo, hi = ranges.pop(0)
            found = self._step_in(campaign_id, lo, hi, gap, mass, notes)
            if found is not None:
                step, part = found
                named.append(step)
                shares.append(part)
                ranges += [(lo, step.parent), (step.commit, hi)]
                end = stop(shares, self.c.steps.min_share)
        steps = in_history(named, lambda a, b: self.vcs.is_ancestor(a, b))
        if len(steps) > 1 and self.c.metric.threshold.kind == "relative":
            levels = [self._pooled(good, x.commit) for x in steps]
            steps = mark_crossing(steps, [t.change if t is not None else 0.0 for t in levels],
                                  self.c.metric.threshold.value, self.direction)
        reverted = self._all_reverted(campaign_id, steps, good, bad) if len(steps) > 1 else None
        if end is None and reverted is not None and reverted.get("low", 1.0) <= 0:
            # the shares were measured apart, each pair at its own time; bad with every step
            # reverted together is one fresh pair, and nothing of the gap is seen left
            end = StepsEnd.ADD_UP
            notes.append(f"the steps' own shares add up to {together(shares).describe()} of the regression; bad "
                         f"with all of them reverted is back at good ({reverted['position']:.0%} of the gap, 95% CI "
                         f"{reverted['low']:.0%}..{reverted['high']:.0%}): together they carry all of it")
        elif end is None:
            notes.append(f"the steps named carry {together(shares).describe()} of the regression; no range left "
                         f"carries a part of it surely, {self.c.steps.min_share:.0%} or more possibly")
        return {"steps": steps, "steps_end": end or StepsEnd.NOT_FOUND,
                "partial": partial_line(culprit, first, rest) if first.partial else "", "reverted": reverted}

    def _partial(self, revert: dict[str, Any] | None) -> bool:
        """Bad with the culprit reverted does not come back to good, yet is significantly nearer
        it: the culprit is one step of a regression in several (unless the campaign asked for
        the first step only), not a wrong answer."""
        if revert is None or self.c.steps.first or revert.get("verdict") is not PairVerdict.NOT_RESTORED:
            return False
        better = revert.get("change", 0.0) > 0 if self.direction == "higher" else revert.get("change", 0.0) < 0
        return better and revert.get("p", 1.0) < self.c.alpha and 0 < revert.get("position", 1.0) < 1

    def _crossing(self, campaign_id: int, state: SearchEnd, good: str, bad: str) -> SearchEnd:
        """A search that ended with only skipped commits left, some of them apart from both
        references or ambiguous between them (the regression came in steps): the candidate
        where the metric moved most towards bad from the commit before it (the last good one
        first), each placed on the good(0)-to-bad(1) line by its boots, to be confirmed as a
        culprit; `state` itself when a candidate could not be measured (a build, boot or
        workload failure: the step may be there)."""
        if state.kind is not BisectOutcome.ONLY_SKIPPED:
            return state
        latest = {d.commit: d for d in self._latest(campaign_id)}
        between = (Basis.APART, Basis.AMBIGUOUS)
        if not any(x in latest and latest[x].kind in between for x in state.candidates):
            return state
        order = sorted(state.candidates, key=lambda x: sum(self.vcs.is_ancestor(o, x) for o in state.candidates if o != x))
        placed: list[tuple[float, str]] = []  # the measured commits on the line, the last good one first
        for x in [self.vcs.parent(order[0]), *order]:
            d, odds = latest.get(x), self.judge.odds(good, bad, x)
            if odds is not None:
                placed.append((odds.position, x))
            elif d is not None and d.verdict in (Verdict.GOOD, Verdict.BAD):
                placed.append((0.0 if d.verdict is Verdict.GOOD else 1.0, x))
            elif d is not None:  # a fault: the step may be there
                return state
        if len(placed) < 2:
            return state
        moves = [(b - a, x) for (a, _), (b, x) in zip(placed, placed[1:])]
        move, x = max(moves, key=lambda m: m[0])
        if move <= 0:
            return state
        self._emit("steps", x, message=(
            f"{sum(1 for c in order if latest.get(c) and latest[c].kind in between)} commit(s) lie between good and "
            f"bad (a regression in steps): {x[:12]} moves the metric most ({move:.0%} of the gap)"))
        return SearchEnd(BisectOutcome.FOUND, x, mass=state.mass)

    def _share_check(self, campaign_id: int, culprit: str, parent: str, bad: str, gap: TwoSample,
                     revert: dict[str, Any] | None) -> Share:
        """The culprit's share of the gap, from the culprit against its parent and bad with it
        reverted against bad (steps.combined), on the boots already taken; while it is neither
        clearly less than all (its interval excludes 100%) nor clearly near all (what it may
        leave is below min_share), and more boots could still tell (steps.settles_by), the
        confirmation pair gets one more boot pair, up to its cap (a one-step regression pays
        this at most)."""
        judge, cap, min_share = self.judge, self.c.max_boots_per_commit, self.c.steps.min_share

        def now() -> Share:
            own = self._pooled(parent, culprit)
            assert own is not None
            part = share(own, gap)
            undone = self._pooled(bad, revert["commit"]) if revert and revert.get("commit") else None
            return combined(part, reverted(undone, gap)) if undone is not None else part

        def settled_share() -> bool:
            part = now()
            fresh = min(len([b for b in judge.evidence().get(x, []) if b.seq >= since]) for x in (parent, culprit))
            return part.partial or part.low >= 1 - min_share or fresh >= cap \
                or not settles_by(part, fresh, cap, min_share)

        since = pair_since(self.store, campaign_id, judge, Role.CONFIRM, culprit)
        if not settled_share():
            self._emit("steps", culprit, message=f"{culprit[:12]} carries {now().describe()} of the regression: "
                                                 "measuring it against its parent again to tell")
            measure_pair(judge, parent, culprit, since, Sequential(settled_share))
        return now()

    def _alone(self, change: TwoSample) -> bool:
        """A step's change against its parent reaches the campaign's threshold by itself."""
        threshold = self.c.metric.threshold
        if threshold.kind != "relative":
            return False
        return change.change <= threshold.value if self.direction == "higher" else change.change >= threshold.value

    def _ends(self, lo: str, hi: str) -> TwoSample | None:
        """`hi` against `lo`, both booted boots_per_commit times at least."""
        for key in (lo, hi):
            while len(self.judge.evidence().get(key, [])) < self.c.boots_per_commit:
                self.judge.boot_once(key)
        return self._pooled(lo, hi)

    def _pooled(self, a: str, b: str) -> TwoSample | None:
        """`b` against `a` on all their boots, the boot noise pooled over the campaign's other
        boots (one noise model, as the pairs)."""
        boots = self.judge.evidence()
        ss, df = pooled_boot_variance([bs for x, bs in boots.items() if x not in (a, b)])
        return compare_pooled(boots.get(a, []), boots.get(b, []), ss, df)

    def _step_in(self, campaign_id: int, lo: str, hi: str, gap: TwoSample, mass: float,
                 notes: list[str]) -> tuple[RegressionStep, Share] | None:
        """The step in the range `lo`..`hi` when it carries a part of the gap worth a search: its
        culprit by a search against `lo` and `hi`, confirmed against its parent on fresh boots."""
        if lo == hi or self.vcs.is_ancestor(hi, lo):
            return None
        ends = self._ends(lo, hi)
        if ends is None or not worth_searching(share(ends, gap), self.c.steps.min_share):
            return None
        part = share(ends, gap)
        self._emit("steps", hi, message=f"{lo[:12]}..{hi[:12]} carries {part.describe()} of the regression: "
                                        "searching it for another step")
        search = Search(self.c, self.store, campaign_id, self.vcs, lo, hi, self.lab_of(campaign_id), self.error,
                        self._emit)
        end = self._crossing(campaign_id, search.run(), lo, hi)
        if end.kind is not BisectOutcome.FOUND:
            notes.append(f"{lo[:12]}..{hi[:12]} carries {part.describe()} of the regression, but its search named no "
                         f"single commit ({end.kind.value.replace('_', ' ')})")
            return None
        commit, parent = end.culprit, self.vcs.parent(end.culprit)
        t = self._confirm_step(campaign_id, commit, parent, lo, hi, llr_of(end.mass))
        if t is None:
            notes.append(f"{commit[:12]} ends the search of {lo[:12]}..{hi[:12]} but is not confirmed against its parent")
            return None
        own = self._pooled(parent, commit) or t  # every boot of both: the search's and the pair's
        step_share = share(own, gap)
        return step_of(commit, parent, step_share, own, False, self._alone(own)), step_share

    def _confirm_step(self, campaign_id: int, commit: str, parent: str, lo: str, hi: str,
                      prior: float) -> TwoSample | None:
        """`commit` against its parent on fresh boots, interleaved (measure/pairs.py), until the
        pair answered for the change from `lo` to `hi` (or the cap); its test when `commit` is
        significantly worse, else None. Stored as a confirm decision."""
        judge, cap = self.judge, self.c.max_boots_per_commit
        try:
            judge.kernel(parent)
            since = pair_since(self.store, campaign_id, judge, Role.CONFIRM, commit)

            def done() -> bool:
                state = pair_state(judge, parent, commit, since, lo, hi, self.error)
                return state.boots >= cap or settled([state], cap, self.error, prior)

            measure_pair(judge, parent, commit, since, Sequential(done))
        except (BuildFailed, BootFailed, KernelFault) as exc:
            self.store.add_decision(campaign_id, Decided(commit, Role.CONFIRM, PairVerdict.CANNOT_TELL,
                                                         f"step against parent: could not be measured: {exc}"[:500],
                                                         0.0, 0))
            return None
        t = pair_state(judge, parent, commit, since, lo, hi, self.error).test
        worse = t is not None and t.p < self.c.alpha and (t.change < 0 if self.direction == "higher" else t.change > 0)
        verdict = PairVerdict.CONFIRMED if worse else PairVerdict.NOT_SEEN if t is not None else PairVerdict.CANNOT_TELL
        text = f"step against parent {t.describe()}" if t is not None else "step against parent: too few boots"
        self.store.add_decision(campaign_id, Decided(commit, Role.CONFIRM, verdict, text, 1 - t.p if t else 0.0,
                                                     t.n_b if t else 0))
        self._emit("confirm", commit, message=f"{verdict}: {text}")
        return t if worse else None

    def _all_reverted(self, campaign_id: int, steps: tuple[RegressionStep, ...], good: str,
                      bad: str) -> dict[str, Any]:
        """Bad with every step reverted together (newest first, each onto the last) against bad,
        on fresh boots interleaved: where it lands on the good(0)-to-bad(1) line, with its 95%
        interval; it restores the metric when what is left is not surely min_share or more."""
        onto = bad
        for step in reversed(steps):
            made = self.vcs.revert(step.commit, onto)
            if not made.commit:
                return {"verdict": PairVerdict.NO_APPLY, "text": f"{PairVerdict.NO_APPLY}: {step.commit[:12]}: "
                                                                 f"{made.reason}"[:500]}
            onto = made.commit
        judge, cap = self.judge, self.c.max_boots_per_commit
        since = pair_since(self.store, campaign_id, judge, Role.REVERT, onto)

        def done() -> bool:
            state = pair_state(judge, bad, onto, since, good, bad, self.error, -1)
            return state.boots >= cap or settled([state], cap, self.error)

        try:
            measure_pair(judge, bad, onto, since, Sequential(done))
        except (BuildFailed, BootFailed, KernelFault) as exc:
            return {"verdict": PairVerdict.CANNOT_TELL, "commit": onto, "text": f"could not be measured: {exc}"[:500]}
        t = pair_state(judge, bad, onto, since, good, bad, self.error, -1).test
        gap = self._pooled(good, bad)
        if t is None or gap is None:
            return {"verdict": PairVerdict.CANNOT_TELL, "commit": onto, "text": "too few boots to compare"}
        removed = share(t, gap)  # negative: the part of the gap the reverts take away
        left, low, high = 1 + removed.value, 1 + removed.low, 1 + removed.high
        verdict = PairVerdict.RESTORES if low < self.c.steps.min_share else PairVerdict.NOT_RESTORED
        text = (f"{verdict}: bad with all {len(steps)} steps reverted ({onto[:12]}) against bad {t.describe()}, "
                f"at {left:.0%} of the good-to-bad gap (95% CI {low:.0%}..{high:.0%})")
        self.store.add_decision(campaign_id, Decided(steps[-1].commit, Role.REVERT, verdict, text, 0.0, 0))
        self._emit("confirm", onto, message=text)
        return {"verdict": verdict, "commit": onto, "change": t.change, "p": t.p, "position": left, "low": low,
                "high": high, "text": text}

    def _drift(self, campaign_id: int, good: str, bad: str) -> str:
        """The drift guard's report: the references' common linear drift over the campaign, when
        it is significant (|t| > 3)."""
        boots = self.judge.evidence()
        rate, t = drift(boots.get(good, []), boots.get(bad, []))
        if abs(t) < 3:
            return ""
        span = max(b.seq for bs in boots.values() for b in bs) / 100.0
        return (f"the references drifted by {math.expm1(rate * span):+.1%} over the campaign's "
                f"{int(span * 100) + 1} boots (t={t:.1f}); the steps were judged against the drift-corrected "
                f"references and re-checked against all of them at the end")


def answer_confidence(mass: float, confirmation: dict[str, Any], revert: dict[str, Any] | None) -> float:
    """The posterior's mass of the culprit is the prior; the culprit-against-parent evidence and
    the revert's (bad with it reverted back at good, against no change), fresh boots of their
    own, update it. A revert that does not restore the tip lowers the confidence even when a
    later change built on the culprit is the reason: the answer is then not confirmed, and says
    so."""
    odds = llr_of(mass) + confirmation.get("evidence", 0.0) + (revert or {}).get("evidence", 0.0)
    return 1 / (1 + math.exp(-max(-700.0, min(700.0, odds))))

