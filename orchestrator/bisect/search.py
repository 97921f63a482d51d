"""The commit search of a bisection: rounds of commits picked on the posterior over the culprit,
measured on the lab's slots (orchestrator.bisect.posterior and rounds, the pure core).

A round asks the posterior (every commit's evidence from all its boots, one noise model pooled
per host) for the commits that split its mass into S+1 parts, S the campaign's live slots, and
measures them in parallel, one visit per slot. A visit boots its commit until the sequential
test on all its boots is wrong with a chance of rounds.VISIT_ERROR at most (`rounds.visit`);
each of its boots goes to the commit or, when the step's decision is limited by the references'
uncertainty, to a reference (`rounds.next_boot`). The search stops when one class of untestable
commits holds 1 - error of the mass, or one commit holds 1 - max(error, nominate) of it
(`rounds.next_move`: the engine confirms such a candidate); a commit the posterior still splits
is picked again (a revisit: more boots, to rounds.REVISIT_ERROR; for an inherited verdict, of
the commit its image was measured on).

Every slot of one lab host shares that host's judge (orchestrator/measure/judge.py): a step is
judged only against references of its own host, and a commit's evidence is the sum of its
hosts' log likelihood ratios (independent boots, independent references). Each visit ends in a
decision stored when it ends; nothing of the search is kept in memory between rounds, so a
campaign killed mid-round resumes with the same posterior and the visits left, and no boot is
taken twice (a visit that was under way goes on from its stored boots). A slot's host failing
mid-round (HostFailed) stores the boot in flight as lost (the judge does), drops that host's
slots, records the move, and gives the commit to another slot of the round (the lab of judges,
orchestrator/measure/judges.py, runs the slots).

While a round measures, the lab of judges builds the likeliest next picks (`rounds.ahead`) when
the lab gives builds CPUs of their own (`build_cpus`, docs/campaign.md "Build ahead"). A visit's
boots, a fault's skip and an identical kernel's verdict are the campaign shell's
(orchestrator/measure/shell.py).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from orchestrator.backends.gitlog import BisectState
from orchestrator.bisect.posterior import NOISELESS, Dag, Mark, bisect_log, llr_of
from orchestrator.bisect.rounds import (
    REVISIT_ERROR,
    TOTAL_CAP,
    VISIT_ERROR,
    Act,
    Move,
    Target,
    Visit,
    ahead,
    next_move,
    visit,
)
from orchestrator.bisect.rounds import (
    next_boot as next_boot_of,
)
from orchestrator.campaign.file import Campaign
from orchestrator.decisions import Basis, Decided, Role, Verdict
from orchestrator.errors import BootFailed, BuildFailed, WorkloadFailed
from orchestrator.measure.decide import Decision, decide, p_bad
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.judges import JudgeHost, Judges
from orchestrator.measure.shell import boot_until, fault_basis, inherited
from orchestrator.results import BisectOutcome

# Rounds of the search before it gives up on a posterior that does not settle (each round
# measures at least one commit; a 1,000-commit range takes about 20 at one slot).
MAX_SEARCH_ROUNDS = 200
# The references get at most this many times max_boots_per_commit boots from the steps' choice
# (rounds.next_boot); the drift guard's refreshes come on top.
REFERENCE_BOOTS = 2
# Build-ahead builds the next picks of this many of the likeliest outcomes of a round.
AHEAD_OUTCOMES = 2
# A fault's words in a skipped commit's reason.
FAILED = {Basis.BUILD_FAILED: "build failed", Basis.BOOT_FAILED: "boot failed", Basis.WORKLOAD_FAILED: "workload failed"}


class History(Protocol):
    """What the search needs of the repository (orchestrator/backends/git_bisect.py GitBisect)."""

    def rev_list(self, good: str, bad: str, first_parent: bool = False) -> str: ...
    def parent(self, commit: str) -> str: ...


class Vcs(History, Protocol):
    """What a bisection needs of the repository: orchestrator/backends/git_bisect.py's GitBisect
    (tests/fakes.py FakeVcs for the simulator)."""

    repo: Path

    def prepare(self) -> None: ...
    def resolve(self, rev: str, field: str) -> str: ...
    def start(self, good: str, bad: str, first_parent: bool = False) -> BisectState: ...
    def is_ancestor(self, ancestor: str, commit: str) -> bool: ...
    def revert(self, commit: str, onto: str) -> Any: ...


@dataclass(frozen=True)
class GiveUp:
    """When a search ends without an answer, beside its round limit: once the last `visits` of
    its visits, counted from the campaign's decision number `after` on, all ended ambiguous or
    apart from both references at their caps (the ends of a search for another step of a
    regression cannot place its range's commits: there is no step, or one too small for the
    noise)."""

    visits: int
    after: int


@dataclass(frozen=True)
class SearchEnd:
    """The search's answer: its `outcome` found (`culprit`), only_skipped (`candidates`,
    untestable), or inconclusive (no commit left to measure while the posterior is still split)."""

    outcome: BisectOutcome
    culprit: str = ""
    candidates: tuple[str, ...] = ()
    mass: float = 0.0


def latest(decisions: Iterable[Decided]) -> dict[str, Decided]:
    """Each step commit's latest decision (a revisit or re-examination overrides the step), in
    the order the commits were first decided."""
    out: dict[str, Decided] = {}
    for d in decisions:
        if d.role in (Role.STEP, Role.RECHECK):
            out[d.commit] = d
    return out


def source(commit: str, last: Mapping[str, Decided]) -> str:
    """The commit whose boots carry `commit`'s latest verdict in `last`: itself when it was
    measured, else the commit it inherited the verdict from (the same kernel image), followed
    while that one's latest verdict is inherited too. Commits of one image measured at once on
    several slots each keep boots of their own; a revisit of one of them then inherits another's
    verdict, and the posterior must read, and a revisit boot, the commit at the end of that
    chain (reading the middle one's boots, which no revisit adds to, kept a 50,000-commit
    campaign at its round limit)."""
    seen = {commit}
    d = last.get(commit)
    while d is not None and d.inherited and d.inherited_from and d.inherited_from not in seen:
        commit = d.inherited_from
        seen.add(commit)
        d = last.get(commit)
    return commit


def decided(commit: str, role: Role, d: Decision, samples: int) -> Decided:
    return Decided(commit, role, d.verdict, d.reason, d.confidence, samples, d.basis)


class Search:
    """One campaign's commit search between `good` and `bad` over `lab`'s slots."""

    def __init__(self, campaign: Campaign, store: CampaignStore, campaign_id: int, vcs: History, good: str,
                 bad: str, lab: Judges, error: float, emit: Callable[..., None], threshold: float | None = None,
                 build_cpus: Sequence[int] = (), give_up: GiveUp | None = None) -> None:
        self.c, self.store, self.campaign_id, self.vcs = campaign, store, campaign_id, vcs
        self.good, self.bad, self.lab, self.error, self.emit = good, bad, lab, error, emit
        self.threshold = threshold  # a commit apart from both references is judged against it
        self.dag = Dag.from_rev_list(vcs.rev_list(good, bad, campaign.first_parent), campaign.first_parent)
        self._lock = threading.Lock()
        self.steps = sum(1 for d in store.decisions(campaign_id) if d.role is Role.STEP)
        self.build_cpus = tuple(build_cpus)  # the lab's CPUs for building ahead (none: no build-ahead)
        self.give_up = give_up

    # ---- the evidence ----------------------------------------------------------------------

    def judged(self) -> tuple[dict[str, float], set[str]]:
        """Every decided candidate's log likelihood ratio of being bad, and the untestable ones
        (skipped for a fault, apart from both references, or still unclear at TOTAL_CAP x
        max_boots_per_commit boots). Commits decided outside this search's range (by the
        campaign's search, when this one looks for another step) weigh nothing in its
        posterior: they are left out."""
        last = latest(self.store.decisions(self.campaign_id))
        llr: dict[str, float] = {}
        untestable: set[str] = set()
        for commit, d in last.items():
            if commit not in self.dag.index:
                continue
            if d.basis in (Basis.BUILD_FAILED, Basis.WORKLOAD_FAILED, Basis.APART) or (
                    d.basis is Basis.BOOT_FAILED and d.verdict == Verdict.SKIP):
                untestable.add(commit)
            elif d.basis is Basis.BOOT_FAILED:
                llr[commit] = NOISELESS
            elif d.inherited:
                carrier = source(commit, last)
                llr[commit] = {self.good: -NOISELESS, self.bad: NOISELESS}.get(carrier) or self.llr(carrier, last)
            else:
                llr[commit] = self.llr(commit, last)
                if d.basis is Basis.AMBIGUOUS and self.boots(commit) >= TOTAL_CAP * self.c.max_boots_per_commit:
                    untestable.add(commit)
        return llr, untestable

    def llr(self, commit: str, last: dict[str, Decided]) -> float:
        """The evidence of `commit`'s boots: the sum over the hosts that booted it of its log
        odds against that host's references; a commit no live host booted (its host failed)
        keeps the verdict it was given."""
        total, seen = 0.0, False
        for host in self.lab.hosts:
            if host.judge.booted(commit):
                odds = host.judge.odds(self.good, self.bad, commit)
                if odds is not None:
                    total, seen = total + llr_of(p_bad(odds, self.threshold)), True
        if seen:
            return total
        d = last.get(commit)
        if d is None or d.verdict not in (Verdict.GOOD, Verdict.BAD):
            return 0.0
        return llr_of(d.confidence if d.verdict == Verdict.BAD else 1 - d.confidence)

    def boots(self, commit: str) -> int:
        return sum(h.judge.booted(commit) for h in self.lab.hosts)

    def unfinished(self) -> list[str]:
        """History booted but never decided: a visit under way when the controller stopped."""
        decided = latest(self.store.decisions(self.campaign_id))
        booted = {c for h in self.lab.hosts for c, boots in h.judge.evidence().items() if boots}
        return [c for c in self.dag.commits if c != self.bad and c not in decided and c in booted]

    def move(self, nominate: float = 0.0) -> Move:
        """The posterior's next move (rounds.next_move with nothing confirmed yet): a culprit
        holding 1 - max(error, `nominate`) of the mass to confirm, a class of untestable
        commits holding 1 - error, or the next round's picks."""
        llr, untestable = self.judged()
        return next_move(self.dag, llr, max(1, self.lab.slots), self.error, untestable, nominate=nominate)

    def unplaced(self) -> bool:
        """The search gives up (`give_up`): its last visits all ended ambiguous or apart."""
        if self.give_up is None:
            return False
        mine = [d for d in self.store.decisions(self.campaign_id)[self.give_up.after:]
                if d.role is Role.STEP and d.commit in self.dag.index]
        last = mine[-self.give_up.visits:]
        return len(last) == self.give_up.visits and all(d.basis in (Basis.AMBIGUOUS, Basis.APART) for d in last)

    def found(self, m: Move) -> SearchEnd:
        if m.act is Act.CONFIRM:
            return SearchEnd(BisectOutcome.FOUND, m.culprit, mass=m.mass)
        if m.act is Act.ONLY_SKIPPED:
            return SearchEnd(BisectOutcome.ONLY_SKIPPED, candidates=m.candidates, mass=m.mass)
        return SearchEnd(BisectOutcome.INCONCLUSIVE, candidates=self.alive(), mass=m.mass)

    def alive(self) -> tuple[str, ...]:
        """The likeliest culprits holding 1 - error of the mass together, oldest first."""
        from orchestrator.bisect.posterior import posterior

        llr, _ = self.judged()
        post = posterior(self.dag, llr)
        order = sorted(range(len(self.dag)), key=lambda i: -float(post.weights[i]))
        kept, mass = [], 0.0
        for i in order:
            kept.append(i)
            mass += float(post.weights[i])
            if mass >= 1 - self.error:
                break
        return tuple(self.dag.commits[i] for i in sorted(kept))

    def log(self, answer: SearchEnd | None = None) -> str:
        """The history as a `git bisect log` a user can replay: each decided commit's latest mark,
        and the answer as git writes it (a comment)."""
        marks = [(c, Mark(d.verdict)) for c, d in latest(self.store.decisions(self.campaign_id)).items()]
        text = bisect_log(self.good, self.bad, marks, self.c.first_parent)
        if answer is not None and answer.outcome is BisectOutcome.FOUND:
            text += f"# first bad commit: [{answer.culprit}]\n"
        elif answer is not None and answer.candidates:
            text += "# only skipped commits left to test\n" + "".join(
                f"# possible first bad commit: [{c}]\n" for c in answer.candidates)
        return text

    # ---- the rounds ------------------------------------------------------------------------

    def run(self, nominate: float = 0.0) -> SearchEnd:
        """Rounds until the posterior answers (a culprit holding 1 - max(error, `nominate`) of
        the mass: with `nominate`, a candidate for the engine to confirm on fresh boots) or has
        nothing left to measure."""
        pending = self.unfinished()
        if pending:  # visits a killed controller left under way: their boots are kept, they go on
            self.emit("round", message=f"{len(pending)} visit(s) under way when the campaign stopped")
            self.round(pending[:max(1, self.lab.slots)])
        for _ in range(MAX_SEARCH_ROUNDS):
            m = self.move(nominate)
            if m.act is not Act.SEARCH or not m.picks or self.unplaced():
                return self.found(m)
            self.emit("round", message=f"{len(m.picks)} commit(s) on {self.lab.slots} slot(s); the likeliest culprit "
                                       f"holds {m.mass:.1%}")
            self.round(list(m.picks))
        return self.found(self.move(nominate))

    def round(self, picks: list[str]) -> None:
        """`picks` measured, one visit per slot; one slot measures them in turn."""
        if self.build_cpus and self.lab.hosts:
            llr, untestable = self.judged()
            slots = max(1, self.lab.slots)
            outcomes = ahead(self.dag, llr, picks, slots, self.error, untestable)
            self.lab.build_ahead(self.likeliest(outcomes, slots, AHEAD_OUTCOMES * slots), self.build_cpus)
        last = latest(self.store.decisions(self.campaign_id))
        picks = list(dict.fromkeys(self.measured_as(c, last) for c in picks))
        if self.lab.slots <= 1:
            for commit in picks:
                self.step(self.lab.hosts[0].judge, commit)
            return
        self._parallel(picks)

    def measured_as(self, commit: str, last: dict[str, Decided]) -> str:
        """The commit whose boots carry `commit`'s verdict (`source`: the one it inherited it from,
        the same kernel image, followed to the commit measured) when that is not an endpoint,
        else itself. Picking an inherited commit again means more boots of its image: a revisit
        of the commit measured (re-deciding the inherited one would add no evidence, and the
        posterior would pick it forever)."""
        carrier = source(commit, last)
        return commit if carrier in (self.good, self.bad) else carrier

    def _parallel(self, picks: list[str]) -> None:
        """Each pick on a free slot of the lab of judges; a pick whose host failed goes to the
        next free slot (its host's slots are gone)."""
        measured: set[str] = set()

        def visit(host: JudgeHost, commit: str) -> None:
            self.step(host.judge, commit)
            measured.add(commit)

        self.lab.until(lambda: measured >= set(picks), lambda _slots: [c for c in picks if c not in measured], visit)

    def step(self, judge: Judge, commit: str) -> Decided | None:
        """One visit of `commit` on `judge`'s host, stored when it ends: the first until its
        verdict is wrong with a chance of rounds.VISIT_ERROR at most (the posterior needs its
        side, and sends the search back when it was wrong), a revisit with one boot more at least
        and rounds.REVISIT_ERROR (never looser than the campaign's error)."""
        last = latest(self.store.decisions(self.campaign_id)).get(commit)
        have = judge.booted(commit)
        cap = min(have + self.c.max_boots_per_commit, TOTAL_CAP * self.c.max_boots_per_commit)
        if last is None:
            d = self.visit(judge, commit, Role.STEP, self.c.boots_per_commit, max(cap, 1), max(self.error, VISIT_ERROR))
        else:
            d = self.visit(judge, commit, Role.STEP, have + 1, max(cap, have + 1), min(self.error, REVISIT_ERROR))
        with self._lock:
            self.steps += 1
            self.store.add_decision(self.campaign_id, d)
            self.store.set_bisect_log(self.campaign_id, self.log())
        self.emit("decide", commit, d.samples, f"{d.verdict}: {d.reason}")
        return d

    # ---- one visit -------------------------------------------------------------------------

    def visit(self, judge: Judge, commit: str, role: Role, min_boots: int, cap: int, error: float) -> Decided:
        """Boots of `commit` (or of a reference, when the references limit its decision) until
        `rounds.visit` ends the visit at `min_boots`..`cap` boots of it; the decision. A commit
        whose kernel image was judged already carries that verdict without a boot."""
        try:
            judge.kernel(commit)
            known = [d for d in self.store.decisions(self.campaign_id) if d.role in (Role.GOOD, Role.BAD)]
            carried = inherited(commit, role, known + list(latest(self.store.decisions(self.campaign_id)).values()),
                                judge.images().get, lambda d: f"same image as {d.commit[:12]} ({d.verdict}); not booted")
            if carried is not None:
                return carried
            return self._boots(judge, commit, role, min_boots, cap, error)
        except (BuildFailed, BootFailed, WorkloadFailed) as exc:
            basis = fault_basis(exc)
            as_bad = basis is Basis.BOOT_FAILED and self.c.skip_policy.boot_failure == "bad"
            return Decided(commit, role, Verdict.BAD if as_bad else Verdict.SKIP,
                           f"{FAILED.get(basis, 'workload failed')}: {exc}"[:2000], 1.0, 0, basis)

    def _boots(self, judge: Judge, commit: str, role: Role, min_boots: int, cap: int, error: float) -> Decided:
        """`rounds.visit` on `commit`'s boots so far, and the boot it asks for (measure/shell.py
        boot_until), until it ends the visit; a boot of the commit beyond `min_boots` is told as
        the decision so far."""
        good, bad = self.good, self.bad
        ref_cap = REFERENCE_BOOTS * self.c.max_boots_per_commit
        ended: list[Decided] = []
        chosen: list[Any] = [None, 0]  # the odds and boots of the commit the last boot was chosen on

        def next_boot() -> str | None:
            have = judge.booted(commit)
            odds = judge.odds(good, bad, commit) if have else None
            v = visit(odds, have, min_boots, cap, error, self.threshold)
            if v is not Visit.MORE:
                ended.append(self._ended(commit, role, v, odds, have, min_boots, error, judge.runs(commit)))
                return None
            target = Target.STEP if have < min_boots else next_boot_of(judge.boots_of(good), judge.boots_of(bad),
                                                                       judge.boots_of(commit))
            key = {Target.STEP: commit, Target.GOOD: good, Target.BAD: bad}[target]
            chosen[:] = [odds, have]
            return commit if key != commit and judge.booted(key) >= ref_cap else key

        def booted(key: str) -> None:
            odds, have = chosen
            if odds is not None and key == commit and have >= min_boots:
                d = decide(odds, have, min_boots, cap, error, self.threshold)
                self.emit("decide", commit, judge.runs(commit), f"{d.verdict.value}: {d.reason}")

        boot_until(judge, good, bad, next_boot, booted)
        return ended[0]

    def _ended(self, commit: str, role: Role, v: Visit, odds: Any, have: int, min_boots: int, error: float,
               runs: int) -> Decided:
        d = decide(odds, have, min(min_boots, have), have, error, self.threshold)
        if v is Visit.APART:
            return Decided(commit, role, Verdict.SKIP, d.reason, 0.0, runs, Basis.APART)
        if d.verdict is Verdict.MORE:  # no odds at all (the references were not measured on this host)
            return Decided(commit, role, Verdict.SKIP, f"ambiguous after {have} boots: no odds", 0.0, runs,
                           Basis.AMBIGUOUS)
        return decided(commit, role, d, runs)

    # ---- build-ahead -----------------------------------------------------------------------

    @staticmethod
    def likeliest(outcomes: list[tuple[float, tuple[str, ...]]], slots: int, cap: int) -> list[str]:
        """What to build ahead: the next picks of the likeliest outcomes first, at most `cap`."""
        out: list[str] = []
        for _p, picks in outcomes:
            for commit in picks[:slots]:
                if commit not in out:
                    out.append(commit)
        return out[:cap]


def steps_left(n: int) -> int:
    return max(1, math.ceil(math.log2(max(2, n))))
