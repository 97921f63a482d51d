"""The bisection loop: measure both endpoints, then build -> boot -> measure -> decide per step,
then doubt the answer until it holds, confirm it, and give one confidence. The engine keeps the
search (orchestrator/bisect/search.py), the doubt and the answer; it stands on the campaign shell
(orchestrator/measure/shell.py: the lab of judges, the moves to another host, the endpoints and
their refusal, the end state), and the regression's steps have their own room
(orchestrator/bisect/regression.py).

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
taken are reused, never taken twice. Every boot a decision uses comes from one lab host, and a
step is judged only against references measured on its own host; when that host fails, the
shell moves the campaign on (docs/architecture.md), the verdicts already taken stand and a
confirmation under way starts afresh.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Sequence

from orchestrator.bisect.confidence import answer_confidence, confidence_words
from orchestrator.bisect.confirmation import CulpritPairs, Pairs
from orchestrator.bisect.posterior import llr_of
from orchestrator.bisect.regression import Regression
from orchestrator.bisect.rounds import NOMINATE
from orchestrator.bisect.search import Search, SearchEnd, Vcs, latest
from orchestrator.campaign.file import Campaign
from orchestrator.decisions import JUDGED, Basis, Decided, PairVerdict, Role, Verdict
from orchestrator.errors import BootFailed, BuildFailed, KernelFault
from orchestrator.measure.decide import ERROR, verdict_of
from orchestrator.measure.endpoints import EndpointCheck
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.shell import CampaignShell, EndpointRules, Refused, SideFailed
from orchestrator.ports import Event, KernelBuilds, Measurer
from orchestrator.results import BisectOutcome, BisectResult
from orchestrator.stats import drift

# A re-examined step may have this many times max_boots_per_commit, once more for each further
# re-examination, up to REEXAMINATIONS of them.
REEXAMINE_BOOTS = 2
REEXAMINATIONS = 2
# Rounds of doubt (re-examine, replay when a verdict changed) before the answer is given with
# what still does not hold.
MAX_ROUNDS = 6
# The most confidence an answer gets when its confirmation or revert still contradicts it.
CONTRADICTED = 0.5


class Doubt(StrEnum):
    """Why an answer is doubted before it is given (the sentence beside it is for people):
    the culprit builds its parent's image (`noop`), the culprit is a merge whose other parents'
    good verdicts were not re-examined (`merge`), verdicts not sure against the references
    measured since (`unsure`), the revert does not restore the metric (`revert`), the culprit
    does not differ from its parent re-measured (`not_seen`), only ambiguous skips left
    (`ambiguous`)."""

    NOOP = "noop"
    MERGE = "merge"
    UNSURE = "unsure"
    REVERT = "revert"
    NOT_SEEN = "not_seen"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class Doubts:
    """The verdicts to re-examine before an answer is given, the doubt and why (None: none)."""

    commits: list[str] = field(default_factory=list)
    doubt: Doubt | None = None
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


class CampaignRefused(Refused):
    """The endpoints do not allow a meaningful bisection; the message says why."""


class EndpointFailed(CampaignRefused, SideFailed):
    """The good or bad endpoint does not build, boot or run the workload: no step can be judged
    against it. The campaign is stored as failed with this message as its reason."""

    WHAT = {BuildFailed: "does not build", BootFailed: "does not boot"}

    def __init__(self, role: str, commit: str, fault: KernelFault) -> None:
        what = next((w for cls, w in self.WHAT.items() if isinstance(fault, cls)), "fails the workload")
        super().__init__(f"campaign refused: the {role} endpoint {commit[:12]} {what}: {fault}")
        self.fault = fault


class Engine:
    """A bisection of `campaign` over `vcs`'s history: kernels from `builder`, guests from
    `measurer` (the home host: endpoints, search, confirmation). `slots`: the campaign's slots
    on the lab, one measurer per slot, each pinned to its host (orchestrator/wiring.py
    `lab_slots`; empty: one slot, `measurer`, which may move to another host when its host
    fails); slots of one host share that host's judge and references. `build_cpus`: CPUs of this
    machine that build the likeliest next picks while a round measures (the lab's `build_cpus`;
    empty: no build-ahead)."""

    def __init__(self, campaign: Campaign, direction: str, vcs: Vcs, builder: KernelBuilds, measurer: Measurer,
                 store: CampaignStore, on_event: Callable[[Event], None] = lambda e: None, error: float = ERROR,
                 slots: Sequence[Measurer] = (), build_cpus: Sequence[int] = ()) -> None:
        self.c, self.direction, self.vcs, self.builder, self.measurer = campaign, direction, vcs, builder, measurer
        self.store, self.on_event, self.error = store, on_event, error
        self.slots, self.build_cpus = list(slots), tuple(build_cpus)

    def run(self, campaign_id: int) -> Outcome:
        """Start (or resume) the campaign stored under `campaign_id`."""
        return Bisection(self, campaign_id).run()


class Bisection:
    """One run of `engine`'s campaign stored under `campaign_id`: the campaign shell
    (orchestrator/measure/shell.py: the lab, the moves, the endpoints, the end state), the
    search, the doubt and the answer; the regression's steps in their own room
    (orchestrator/bisect/regression.py). `c`: the campaign, its threshold as the endpoints
    resolved it (`threshold: measured`)."""

    def __init__(self, engine: Engine, campaign_id: int) -> None:
        self.c, self.campaign_id, self.store, self.vcs = engine.c, campaign_id, engine.store, engine.vcs
        self.direction, self.error, self.build_cpus = engine.direction, engine.error, engine.build_cpus
        self._search: Search | None = None
        self.shell = CampaignShell(engine.store, campaign_id, engine.builder, engine.c.metric.name,
                                   engine.c.runs_per_boot, engine.measurer, engine.slots, engine.on_event,
                                   lambda: self._search.steps if self._search is not None else 0,
                                   label=lambda commit: commit[:12])

    @property
    def search(self) -> Search:
        assert self._search is not None, "the search exists once the endpoints started the campaign"
        return self._search

    @property
    def judge(self) -> Judge:
        """The home host's judge: endpoints, doubts, confirmation and revert are measured there."""
        return self.shell.judge

    def run(self) -> Outcome:
        # the home host failed outside a round: the next host (or the one the measurer moves to) is home
        return self.shell.moving(self._run)

    def _run(self) -> Outcome:
        self.vcs.prepare()
        good, bad = self.vcs.resolve(self.c.good, "good"), self.vcs.resolve(self.c.bad, "bad")
        self.vcs.start(good, bad, self.c.first_parent)  # pins the range in vmbisect's clone
        check = self._endpoints(good, bad)
        c = self.c
        if check.threshold is not None and check.threshold != c.metric.threshold:  # `threshold: measured`
            c = self.c = dataclasses.replace(c, metric=dataclasses.replace(c.metric, threshold=check.threshold))
        relative = c.metric.threshold.value if c.metric.threshold.scale == "relative" else None
        self._search = Search(c, self.store, self.campaign_id, self.vcs, good, bad, self.shell.lab, self.error,
                              self.shell.emit, relative, self.build_cpus)
        self.regression = Regression(c, self.direction, self.store, self.campaign_id, self.vcs, lambda: self.judge,
                                     self.shell.lab, self.error, self.shell.emit)
        state, unresolved, confirmation = self._doubted(good, bad)
        outcome = self._finish(state, check, good, bad, unresolved, confirmation)
        self.shell.emit("done", outcome.culprit, message=f"{outcome.outcome}; {confidence_words(outcome.confidence, [])}")
        return outcome

    def _doubted(self, good: str, bad: str) -> tuple[SearchEnd, Doubts, CulpritPairs]:
        """The search, and its answer doubted until it holds (or MAX_ROUNDS): the search's end,
        what still does not hold, and the culprit's confirmation."""
        search = self.search
        unresolved = Doubts()
        confirmation = CulpritPairs()
        asked: dict[tuple[str, ...], int] = {}
        # the first candidate is confirmed as soon as it holds 1 - NOMINATE of the mass; one whose
        # confirmation does not carry it to 1 - error, or is doubted, sends the search on to
        # 1 - error (decided from the store: a resumed campaign does the same)
        nominate = 0.0 if self._confirmed_before() else NOMINATE
        for round_no in range(MAX_ROUNDS + 1):
            state = self.regression.crossing(search.run(nominate), good, bad)
            self.store.set_bisect_log(self.campaign_id, search.log(state))
            if state.outcome is BisectOutcome.FOUND:
                doubts, confirmation = self._doubts(state.culprit, good, bad, state.mass)
                if state.mass < 1 - self.error and (doubts.commits or answer_confidence(
                        state.mass, confirmation.confirmation, confirmation.revert) < 1 - self.error):
                    nominate = 0.0
                    self.shell.emit("recheck", state.culprit, message=(
                        f"the candidate {state.culprit[:12]} ({state.mass:.1%} of the mass) was not carried to "
                        f"{1 - self.error:.0%} by its confirmation: the search goes on"))
                    continue
            else:
                doubts = self._ambiguous(state)
            if not doubts.commits:
                break
            doubt = (str(doubts.doubt), *sorted(doubts.commits))
            booted = sum(len(self.judge.evidence().get(x, [])) for x in doubts.commits)
            # the same doubt again ends the doubting: its verdicts were re-examined and held; only
            # ambiguous candidates are measured once more, while their boots still grow
            again = doubt in asked and (state.outcome is BisectOutcome.FOUND or asked[doubt] == booted)
            if round_no == MAX_ROUNDS or again:
                unresolved = doubts
                break
            asked[doubt] = booted
            self.shell.emit("recheck", state.culprit, message=doubts.why)
            self._reexamine(doubts.commits, good, bad, doubts.why)
            # the posterior is computed again from every boot: the next search goes on from there
        return state, unresolved, confirmation

    # ---- the endpoints -----------------------------------------------------------------------

    def _endpoints(self, good: str, bad: str) -> EndpointCheck:
        """Every host's references, checked sequentially (`endpoints_next`) on that host; the
        campaign is refused (or failed) on the home host's check; another host whose check does
        not start leaves the lab."""
        c = self.c
        rules = EndpointRules(self.direction, c.metric.threshold, c.runs_per_boot, c.boots_per_commit,
                              c.max_boots_per_commit, c.alpha, self.error, early=True)
        return self.shell.endpoints(lambda: self.shell.check_every_host(good, bad, rules, EndpointFailed), good, bad,
                                    lambda message: CampaignRefused(f"campaign refused: {message}"))

    def _latest(self) -> list[Decided]:
        """Each step commit's latest decision (a revisit or re-examination overrides the step),
        in the order the commits were first decided."""
        return list(latest(self.store.decisions(self.campaign_id)).values())

    # ---- doubting the answer -----------------------------------------------------------------

    def _doubts(self, culprit: str, good: str, bad: str,
                mass: float) -> tuple[Doubts, CulpritPairs]:
        """The steps to re-examine before `culprit` can be named, and why; and the confirmation
        measured on the way (culprit against parent, then the revert), which carry the
        candidate from its posterior `mass` to the campaign's 1 - error."""
        latest = self._latest()
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
            return Doubts(self._boundary(judged, culprit, parent), Doubt.NOOP, (
                f"the culprit {culprit[:12]}'s kernel image is identical to its parent {parent[:12]}'s: a commit "
                "that changes nothing cannot be the culprit")), CulpritPairs()
        rechecked = {d.commit for d in self.store.decisions(self.campaign_id) if d.role is Role.RECHECK}
        merged = self._merge_doubt(judged, culprit, parent, {good, bad} | rechecked)
        if merged.commits:
            return merged, CulpritPairs()
        moved = []
        for d in judged:
            if d.inherited or d.commit in (good, bad) or d.commit in rechecked:
                continue
            # a verdict the boots measured since turned around (the posterior weighs the rest)
            odds = self.judge.odds(good, bad, d.commit)
            if (odds is not None and verdict_of(odds, self.search.threshold) != d.verdict
                    and len(self.judge.evidence().get(d.commit, [])) < REEXAMINE_BOOTS * self.c.max_boots_per_commit):
                moved.append(d.commit)
        if moved:
            return Doubts(moved, Doubt.UNSURE, (
                f"{len(moved)} verdict(s) are not sure against the references measured since (a doubtful verdict, "
                f"drift or noise): {', '.join(x[:12] for x in moved)}")), CulpritPairs()
        pairs = Pairs(self.c, self.direction, self.store, self.campaign_id, lambda: self.judge, self.vcs.revert, self.error,
                      self.shell.emit)
        prior = llr_of(mass)
        confirmation = pairs.confirm(culprit, parent, good, bad, prior, int(self.c.confirm == "revert"))
        if (self.c.confirm == "revert" and confirmation.change is not None
                and confirmation.verdict is not PairVerdict.NOT_SEEN):
            revert = pairs.revert(culprit, good, bad, prior + (confirmation.evidence or 0.0))
            if revert.verdict is PairVerdict.NOT_RESTORED and not self.regression.partial(revert):
                return Doubts(self._boundary(judged, culprit, parent), Doubt.REVERT, (
                    f"the culprit {culprit[:12]} reverted on bad does not restore the metric: "
                    f"{revert.text}")), CulpritPairs(confirmation, revert)
            return Doubts(), CulpritPairs(confirmation, revert)
        if confirmation.verdict is PairVerdict.NOT_SEEN:
            return Doubts(self._boundary(judged, culprit, parent), Doubt.NOT_SEEN, (
                f"the culprit {culprit[:12]} does not differ from its parent when both are re-measured "
                f"interleaved: {confirmation.text}")), CulpritPairs(confirmation)
        return Doubts(), CulpritPairs(confirmation)

    def _confirmed_before(self) -> bool:
        """A confirmation was measured already in this campaign (a nomination's, or one before a
        resume): the search goes on to 1 - error from here."""
        return any(d.role is Role.CONFIRM and d.basis is not Basis.MEASURING for d in self.store.decisions(self.campaign_id))

    def _ambiguous(self, state: SearchEnd) -> Doubts:
        """When only skipped commits are left: the candidates skipped as ambiguous (not the ones
        that failed to build, boot or run) and the verdicts next to them, to be re-examined with
        more boots."""
        latest = {d.commit: d for d in self._latest()}
        unclear = [x for x in state.candidates if x in latest and latest[x].basis is Basis.AMBIGUOUS]
        if not unclear:
            return Doubts()
        # the verdicts around the range too: a wrong one there puts the culprit outside it
        judged = [d for d in latest.values() if d.verdict in JUDGED]
        around = [x for c in unclear for x in self._boundary(judged, c, self.vcs.parent(c))]
        return Doubts(list(dict.fromkeys(unclear + around)), Doubt.AMBIGUOUS, (
            f"{len(unclear)} candidate(s) were skipped as ambiguous: {', '.join(x[:12] for x in unclear)}"))

    def _boundary(self, judged: list[Decided], culprit: str, parent: str) -> list[str]:
        """The verdicts that made `culprit` the answer: the nearest bad ones at or after it and the
        nearest good ones at or after its parent (one of them is wrong when the two do not
        differ), followed to the measurements they were inherited from."""
        blamed = [d.commit for d in judged if d.verdict is Verdict.BAD and self.vcs.is_ancestor(culprit, d.commit)]
        # nearest: no other blamed commit between the culprit and it
        blamed = [x for x in blamed if not any(y != x and self.vcs.is_ancestor(y, x) for y in blamed)]
        return self._own_judgements([*blamed, *self._cleared(judged, parent), culprit, parent])

    def _merge_doubt(self, judged: list[Decided], culprit: str, parent: str, settled: set[str]) -> Doubts:
        """A merge is the first bad commit only when every parent is good, and its confirmation
        measures it against its first parent alone: a wrong good verdict on a merged branch (one
        noisy pair of boots) would name the merge. The verdicts that cleared its other parents,
        unless `settled` (the references, or re-examined already), are re-examined first."""
        cleared = self._own_judgements([x for p in self.search.dag.parents.get(culprit, ()) if p != parent
                                        for x in self._cleared(judged, p)])
        merged = [x for x in cleared if x not in settled]
        if not merged:
            return Doubts()
        return Doubts(merged, Doubt.MERGE, (
            f"the candidate {culprit[:12]} is a merge: the good verdicts on its merged branch are re-examined "
            f"before it is named ({', '.join(x[:12] for x in merged)})"))

    def _cleared(self, judged: list[Decided], parent: str) -> list[str]:
        """The nearest good verdicts that made `parent` good: at or after it, no other after them."""
        cleared = [d.commit for d in judged if d.verdict is Verdict.GOOD and self.vcs.is_ancestor(parent, d.commit)]
        return [x for x in cleared if not any(y != x and self.vcs.is_ancestor(x, y) for y in cleared)]

    def _source(self, commit: str, latest: dict[str, Decided]) -> str:
        """The commit whose measured verdict `commit` carries: itself, or for an inherited verdict
        the measured commit with the same kernel image (`commit` when that is an endpoint)."""
        d = latest.get(commit)
        if d is None or not d.inherited:
            return commit
        images = self.judge.images()
        return next((x for x, e in latest.items() if x != commit and images.get(x) == images.get(commit)
                     and not e.inherited), commit)

    def _own_judgements(self, commits: list[str]) -> list[str]:
        """The commits whose verdicts were measured, following inherited ones to their source."""
        latest = {d.commit: d for d in self._latest()}
        out = []
        for commit in commits:
            commit = self._source(commit, latest)
            if commit in latest and commit not in out:
                out.append(commit)
        return out

    def _follow(self, source: Decided) -> None:
        """A re-examined verdict carried over to the commits that inherited the old one (the same
        kernel image), so no mark contradicts the measurement it came from."""
        images = self.judge.images()
        for d in self._latest():
            if (d.commit != source.commit and d.inherited and d.verdict != source.verdict
                    and images.get(d.commit) == images.get(source.commit)):
                self.store.add_decision(self.campaign_id, Decided(
                    d.commit, Role.RECHECK, source.verdict, f"same image as {source.commit[:12]} ({source.verdict}); "
                    "not booted", source.confidence, 0, Basis.INHERITED, source.commit))

    def _reexamine(self, commits: list[str], good: str, bad: str, why: str) -> bool:
        """Each of `commits` booted as many times again (at least boots_per_commit, up to
        REEXAMINE_BOOTS x max_boots_per_commit, twice that when it was re-examined before) and
        judged on all its boots, ten times stronger evidence asked; True when a verdict
        changed."""
        changed = False
        decisions = self.store.decisions(self.campaign_id)
        latest = {d.commit: d for d in self._latest()}
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
            self.shell.emit("decide", commit, d.samples, f"{d.verdict}: {d.reason}")
            self.store.add_decision(self.campaign_id, d)
            if before is None or before.verdict != d.verdict:
                changed = True
                self._follow(d)
        return changed

    # ---- the answer --------------------------------------------------------------------------

    def _finish(self, state: SearchEnd, check: EndpointCheck, good: str, bad: str,
                unresolved: Doubts, pairs: CulpritPairs) -> Outcome:
        latest = self._latest()
        measured = [d for d in latest if d.verdict in JUDGED and not d.inherited]
        # the posterior's mass of the answer (every boot of every commit, as the search weighs
        # them now): the chance that the culprit is the one named (or in the class named)
        confidence = state.mass
        doubtful = [d.commit for d in measured if d.confidence < 1 - self.error]
        moves = [d.reason for d in self.store.decisions(self.campaign_id) if d.role is Role.HOST]
        if moves and not self.shell.several:
            moves.append(f"the references were measured again on {self.judge.on}, which measured every step "
                         "after the move; no sample of one host was compared with another's")
        notes = [x for x in (unresolved.why, self._drift(good, bad), *moves) if x]
        everywhere = self.store.boot_samples(self.campaign_id, self.c.metric.name)
        outcome, culprit, candidates = state.outcome, state.culprit, state.candidates
        if state.outcome is BisectOutcome.FOUND and unresolved.doubt is Doubt.NOOP:
            outcome, culprit = BisectOutcome.INCONCLUSIVE, ""
            candidates = (self.vcs.parent(state.culprit), state.culprit)
            confidence = 0.0
        confirmation = pairs.confirmation if outcome is BisectOutcome.FOUND else None
        revert = pairs.revert if outcome is BisectOutcome.FOUND else None
        if outcome is BisectOutcome.FOUND:
            # a revert that takes part of the gap away weighs nothing: its evidence is for all of it
            confidence = answer_confidence(confidence, confirmation, None if self.regression.partial(revert) else revert)
            if unresolved.doubt in (Doubt.REVERT, Doubt.NOT_SEEN):
                # its own confirmation contradicts the answer after the steps were re-examined and
                # held: the sequential pairs stop early, so their evidence alone may not outweigh
                # the steps'; the answer is named, never with high confidence
                confidence = min(confidence, CONTRADICTED)
        steps: dict[str, Any] = {}
        if confirmation is not None and confirmation.verdict is PairVerdict.CONFIRMED:
            log = self.search.log(state)
            steps = self.regression.steps(culprit, good, bad, revert, state.mass, notes)
            self.store.set_bisect_log(self.campaign_id, log)  # the searches for more steps wrote theirs
            everywhere = self.store.boot_samples(self.campaign_id, self.c.metric.name)
        result = BisectResult(
            outcome, culprit, self.vcs.parent(culprit) if culprit else "",
            () if outcome is BisectOutcome.FOUND else tuple(candidates), confidence, confidence_words(confidence, doubtful),
            tuple(doubtful), tuple(notes), sum(1 for d in latest if d.inherited), self.judge.on,
            sum(len(v) for v in everywhere.values()), confirmation, revert,
            **steps)
        self.shell.end(result)
        return Outcome(result.outcome, culprit, tuple(candidates), check, self.search.steps, tuple(notes), confidence, result)

    def _drift(self, good: str, bad: str) -> str:
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
