"""A set bisection's campaign, on the campaign shell commit bisection stands on too
(orchestrator/measure/shell.py: the lab of judges for any slot count, the moves to another
host, the endpoint check with its stored refusal, the boots until a candidate is decided, fault
to skip, the identical-kernel rule, the end state): the search (search.py) asking the judge
about candidates, the named set confirmed on fresh boots, the result stored.

- Endpoints: good and bad booted interleaved until `check_endpoints` is clear (the sequential
  rule of orchestrator/measure/endpoints.py); refused when they do not differ, do not differ by
  the threshold, or the noise is too large for the boots allowed; failed when a side does not
  build, boot or take its settings.
- Candidates: each one booted (A B B A with the references, which are booted again as other
  candidates' boots pass) until the sequential test of commit bisection (stats.step_odds,
  measure/decide.py) says good or bad; a candidate that cannot be built, booted or set, or that
  stays ambiguous at the cap of boots, is a skip (the search goes on as if it stayed); one whose
  kernel and settings are the same as another judged one carries that verdict without a boot.
- Confirmation, on boots taken after the search (the analogue of commit bisection's
  confirmation and revert): good + set against good must be worse (measure/pairs.py's answer_pair,
  the same test as `vmbisect verify`), and bad - set against bad must be better.

Every boot, run and decision is stored as it happens; a resumed campaign replays the search from
its stored decisions (nothing measured twice) and goes on where it stopped.

Slots (`slots`, wiring.lab_slots): with more than one, the candidates the search may ask next
are measured at once on the other slots, one judge per host against its own references (the
lab of judges, orchestrator/measure/judges.py: while the search waits for the candidate it asks,
the other slots measure what search.ahead says it may ask next, `base + B` while it asks
`base + A`; each verdict is stored when reached and the search takes it from the store, one it
never asks for stays as evidence); the endpoints and the confirmation stay on the home host
(the first live one).
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orchestrator.decisions import Basis, Decided, Found, PairVerdict, Role, Verdict
from orchestrator.direction import Direction
from orchestrator.errors import InfraError, KernelFault
from orchestrator.measure.decide import ERROR, Decision, decide
from orchestrator.measure.endpoints import EndpointCheck, Threshold, level
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.judges import Halted, JudgeHost
from orchestrator.measure.pairs import (
    PAIR_MIN_BOOTS,
    Sequential,
    answer_pair,
    fresh,
    measure_pair,
    pair_since,
    pair_state,
    settled,
)
from orchestrator.measure.shell import (
    CampaignShell,
    EndpointRules,
    Refused,
    SideFailed,
    boot_until,
    fault_basis,
    inherited,
)
from orchestrator.ports import Event, Measurer
from orchestrator.results import PairResult, SetBisectResult
from orchestrator.setbisect.judged import CandidateMeasurer, Candidates
from orchestrator.setbisect.model import CandidateMaker, Made, Unit, label, ordered
from orchestrator.setbisect.search import Answer, SearchResult, ahead, minimize
from orchestrator.stats import relative_change

# The revert pair (bad against bad - set) in the revert's words: bad worse than bad - set means
# taking the set out restores the metric.
SET_REVERT = {PairVerdict.CONFIRMED: PairVerdict.SET_RESTORES, PairVerdict.NOT_SEEN: PairVerdict.SET_NOT_RESTORED}


class SetRefused(Refused):
    """The two sides do not allow a set bisection (or one of them does not boot); the message says why."""


class SideDoesNotRun(SetRefused, SideFailed):
    """A side does not build, boot or take its settings: stored as failed."""

    def __init__(self, side: str, key: str, fault: KernelFault) -> None:
        super().__init__(f"set bisection refused: the {side} side does not boot or run the workload: {fault}")


@dataclass(frozen=True)
class Rules:
    """How a set bisection judges: the metric and its direction, the threshold, runs per boot,
    boots per candidate (at least `boots`, at most `max_boots`), alpha, the error a verdict may
    have."""

    metric: str
    direction: str
    threshold: Threshold
    runs_per_boot: int = 3
    boots: int = 2
    max_boots: int = 8
    alpha: float = 0.05
    error: float = ERROR

    def relative(self, good_level: float) -> float:
        """The threshold as a change relative to good (an absolute one taken from good's level)."""
        return self.threshold.value if self.threshold.scale == "relative" else relative_change(
            good_level, self.threshold.value)


class _NotStored(Exception):
    """Replaying the search reached a candidate with no stored verdict."""


def verdict_answer(verdict: str) -> Answer:
    return {Verdict.BAD.value: Answer.MOVES, Verdict.GOOD.value: Answer.STAYS}.get(verdict, Answer.UNKNOWN)


def replay(units: Sequence[Unit], decisions: Sequence[Decided]) -> tuple[list[tuple[str, frozenset[str]]],
                                                                        SearchResult | None]:
    """The search as far as the stored verdicts of candidates take it: (key, units applied) of
    every candidate asked in order, and the search's result once it is complete (the report and
    status read a campaign this way; a resumed run asks the same candidates in the same order)."""
    names = [u.name for u in ordered(units)]
    if not names:  # sides that do not differ: refused before any search
        return [], None
    verdicts = {d.commit: d.verdict for d in decisions if d.role is Role.CANDIDATE}
    candidates = Candidates(_NoMaker(), names)
    asked: list[tuple[str, frozenset[str]]] = []

    def oracle(applied: frozenset[str]) -> Answer:
        key = candidates.key(applied)
        asked.append((key, applied))
        if key not in verdicts:
            raise _NotStored(key)
        return verdict_answer(verdicts[key])

    try:
        return asked, minimize(names, oracle)
    except _NotStored:
        return asked, None


class _NoMaker:
    def make(self, applied: frozenset[str]) -> Made:
        raise AssertionError("replaying a search makes no candidate")


class SetBisection:
    """One set bisection: `units` between the sides, each candidate made by `maker`, booted by
    `measurer` (the lab's guests, as commit bisection's), everything in `store`. `slots`: one
    measurer per slot of the lab, each pinned to its host (wiring.lab_slots; empty or one: the
    one `measurer`, which may move to another host when its host fails)."""

    def __init__(self, units: Sequence[Unit], maker: CandidateMaker, measurer: Measurer, store: CampaignStore,
                 rules: Rules, on_event: Callable[[Event], None] = lambda _e: None,
                 slots: Sequence[Measurer] = ()) -> None:
        if not units:
            raise SetRefused("the two sides do not differ: nothing to bisect")
        self.units = ordered(units)
        self.names = [u.name for u in self.units]
        self.rules, self.store, self.on_event = rules, store, on_event
        self.candidates = Candidates(maker, self.names)
        self.measurer = CandidateMeasurer(measurer, self.candidates)
        self.slots = list(slots)

    def run(self, campaign_id: int) -> SetBisectResult:
        """Start (or resume) the set bisection stored under `campaign_id`."""
        return _Run(self, campaign_id).run()


class _Run:
    """One run of `bisection` on the campaign stored under `campaign_id`, on the campaign shell
    (orchestrator/measure/shell.py: the lab, the moves, the endpoints, the end state)."""

    def __init__(self, bisection: SetBisection, campaign_id: int) -> None:
        b = bisection
        self.units, self.names, self.rules, self.store = b.units, b.names, b.rules, b.store
        self.candidates, self.campaign_id = b.candidates, campaign_id
        self._step = 0
        self._lock = threading.Lock()
        self.shell = CampaignShell(b.store, campaign_id, b.candidates, b.rules.metric, b.rules.runs_per_boot,
                                   b.measurer, [CandidateMeasurer(m, b.candidates) for m in b.slots], b.on_event,
                                   lambda: self._step,
                                   lambda key: label(self.candidates.applied.get(key, frozenset()), self.names) or key)
        self._lab = self.shell.lab if self.shell.several else None
        self._warmed = False

    @property
    def judge(self) -> Judge:
        """The home host's judge: endpoints and confirmation are measured there."""
        return self.shell.judge

    def run(self) -> SetBisectResult:
        return self.shell.moving(self._run)

    # ---- the campaign ------------------------------------------------------------------------

    def _run(self) -> SetBisectResult:
        good = self.candidates.key(frozenset())
        bad = self.candidates.key(frozenset(self.names))
        if self._lab is None:
            self._endpoints(good, bad)
        else:  # the other hosts boot their references meanwhile; home's own wait for its endpoints
            home = self._lab.hosts[0]
            if not self._warmed:
                self._warmed = True
                self._lab.warm(lambda host: self._references(host, good, bad))
            with home.references:
                self._endpoints(good, bad)
        self._step = sum(1 for d in self.store.decisions(self.campaign_id) if d.role is Role.CANDIDATE)
        found = minimize(self.names, lambda applied: self._ask(applied, good, bad))
        if self._lab is not None:
            self._lab.drain()
            if not self._lab.hosts:
                raise InfraError("no host of the lab is up for the confirmation")
            self._references(self._lab.hosts[0], good, bad)  # a home host taken over mid-search has them too
        named = frozenset(found.units)
        with_set = self.candidates.key(named)
        taken_out = self._taken_out(named)
        without = self.candidates.key(frozenset(self.names) - taken_out)
        confirmation = self._pair(Role.CONFIRM, good, with_set, good, bad)
        revert = self._pair(Role.REVERT, without, bad, good, bad)
        if taken_out != named:
            revert = dataclasses.replace(revert, units=tuple(sorted(taken_out)))
        result = self._result(found, confirmation, revert)
        rest = self._rest(without, good, bad) if revert.verdict is PairVerdict.SET_RESTORES else ""
        if rest:
            result = dataclasses.replace(result, notes=(*result.notes, rest))
        self.shell.end(result)
        self.shell.emit("done", with_set, message=result.line())
        return result

    def _rest(self, without: str, good: str, bad: str) -> str:
        """What the revert leaves: bad without the named set still past the threshold from good
        means the set carries part of the regression and other units cost the rest (seen on the
        lockdep fragment: PROVE_LOCKING carried -51% of -61%, bad without it stayed at -21%).
        The share is on the log scale of the metric: the set's part of good-to-bad."""
        boots = self.judge.evidence()
        if not (boots.get(without) and boots.get(good) and boots.get(bad)):
            return ""
        g, b, w = level(boots[good]), level(boots[bad]), level(boots[without])
        r = self.rules
        threshold = r.relative(g)
        left = relative_change(g, w)
        past = Direction(r.direction).worse_than(left, threshold)
        if not past or min(g, b, w) <= 0 or g == b:
            return ""
        share = 1 - math.log(w / g) / math.log(b / g)
        return (f"the named set carries about {share:.0%} of the regression: bad without it is still {left:+.1%} from "
                f"good, past the threshold {r.threshold.describe()}; other units cost the rest (the candidates that "
                "held them and moved part of the way show which)")

    def _taken_out(self, named: frozenset[str]) -> frozenset[str]:
        """The units the revert (bad - set) leaves out: the set, and the units the maker says would
        bring it back (`taken_out`, optional: a config unit whose options select one of the set's,
        so bad without the set alone is bad again after olddefconfig)."""
        more = getattr(self.candidates.maker, "taken_out", None)
        return named | (frozenset(more(named)) if more is not None else frozenset())

    def _endpoints(self, good: str, bad: str) -> EndpointCheck:
        """Both sides on the home host, checked sequentially as commit bisection checks its
        endpoints (measure/endpoints.py); failed or refused, stored so (the campaign shell)."""
        r = self.rules
        rules = EndpointRules(r.direction, r.threshold, r.runs_per_boot, r.boots, r.max_boots, r.alpha, r.error)
        check = self.shell.endpoints(lambda: self.shell.check_on(self.judge, good, bad, rules, SideDoesNotRun), good, bad,
                                     lambda message: SetRefused(f"set bisection refused: {message}"))
        if check.threshold is not None:  # a measured one resolved
            self.rules = dataclasses.replace(r, threshold=check.threshold)
        return check

    # ---- candidates --------------------------------------------------------------------------

    def _stored(self, key: str) -> Decided | None:
        return next((d for d in reversed(self.store.decisions(self.campaign_id))
                     if d.role is Role.CANDIDATE and d.commit == key), None)

    def _ask(self, applied: frozenset[str], good: str, bad: str) -> Answer:
        key = self.candidates.key(applied)
        stored = self._stored(key)
        if stored is None and self._lab is not None:  # several slots: measured with what may come next
            self._lab.until(lambda: self._stored(key) is not None,
                            lambda slots: [k for k in dict.fromkeys([key, *self._wanted(slots)])
                                           if self._stored(k) is None],
                            lambda host, k: self._measure(host, k, good, bad), ahead=True)
            stored = self._stored(key)
            assert stored is not None
        elif stored is None:
            self._step += 1
            stored = self._judge_candidate(key, good, bad)
            self.store.add_decision(self.campaign_id, stored)
            self.shell.emit("decide", key, stored.samples, f"{stored.verdict}: {stored.reason}")
        return verdict_answer(stored.verdict)

    def _wanted(self, slots: int) -> list[str]:
        """The candidates the search may ask next (search.ahead over the verdicts stored), as keys."""
        verdicts = {d.commit: verdict_answer(d.verdict) for d in self.store.decisions(self.campaign_id)
                    if d.role is Role.CANDIDATE}
        return [self.candidates.key(a) for a in ahead(self.names, lambda a: verdicts.get(self.candidates.key(a)),
                                                       slots)]

    def _references(self, host: JudgeHost, good: str, bad: str) -> None:
        """Both sides booted on `host` (its judge's references), once for its slots; a slot stops
        between two boots when another failed."""
        with host.references:
            for need in range(1, self.rules.boots + 1):
                if self._lab is not None and self._lab.halt.is_set():
                    raise Halted(host.name)
                host.judge.interleave([good, bad], need)

    def _measure(self, host: JudgeHost, key: str, good: str, bad: str) -> None:
        """A slot's work: `key` judged on `host` against that host's references, its verdict stored."""
        self._references(host, good, bad)
        d = self._judge_candidate(key, good, bad, host.judge)
        with self._lock:
            if self._stored(key) is None:
                self._step += 1
                self.store.add_decision(self.campaign_id, d)
        self.shell.emit("decide", key, d.samples, f"{d.verdict}: {d.reason}")

    def _judge_candidate(self, key: str, good: str, bad: str, judge: Judge | None = None) -> Decided:
        """`key` booted on `judge`'s host (default home) until the sequential test decides; the
        verdict of a candidate that boots the same kernel and settings, without a boot; a
        candidate that cannot be built, booted or set, a skip."""
        r = self.rules
        judge = judge or self.judge
        what = label(self.candidates.applied[key], self.names)
        try:
            judge.kernel(key)
            same = self._same(key)
            if same is not None:
                return same
            decided: list[Decision] = []

            def next_boot() -> str | None:
                have = len(judge.evidence().get(key, []))
                d = decide(judge.odds(good, bad, key), have, r.boots, r.max_boots, r.error)
                if d.verdict is not Verdict.MORE:
                    decided.append(d)
                    return None
                return key

            boot_until(judge, good, bad, next_boot, halt=self._lab.halt if self._lab is not None else None)
            d = decided[0]
            return Decided(key, Role.CANDIDATE, d.verdict, f"{what}: {d.reason}", d.confidence, judge.runs(key), d.basis)
        except KernelFault as exc:
            return Decided(key, Role.CANDIDATE, Verdict.SKIP, f"{what}: {exc}"[:2000], 0.0,
                           judge.runs(key), fault_basis(exc))

    def _same(self, key: str) -> Decided | None:
        """A side, or a candidate judged by this process, that boots what `key` boots (a config
        the normalisation brought back to a side's, ktest's skip): its verdict, carried."""
        known = [d for d in self.store.decisions(self.campaign_id) if d.role in (Role.GOOD, Role.BAD) or (
            d.role is Role.CANDIDATE and self.candidates.made_here(d.commit))]
        what = label(self.candidates.applied[key], self.names)
        return inherited(key, Role.CANDIDATE, known, lambda x: self.candidates.made(x).same_as(),
                         lambda d: f"{what}: boots the same kernel and settings as {d.commit} ({d.verdict}); not booted")

    # ---- confirmation ------------------------------------------------------------------------

    def _pair(self, role: Role, base: str, other: str, good: str, bad: str) -> PairResult:
        """`other` against `base` on fresh boots: confirmed when `other` is worse (measure/pairs.py's
        test: significant, in the bad direction). CONFIRM: good + set against good; REVERT: bad
        against bad - set (the set taken out restores the metric)."""
        subject = other if role is Role.CONFIRM else base
        done = next((d for d in self.store.decisions(self.campaign_id)
                     if d.role is role and d.commit == subject and d.basis is not Basis.MEASURING), None)
        if done is not None:
            return PairResult(PairVerdict(done.verdict), done.reason)
        since = pair_since(self.store, self.campaign_id, self.judge, role, subject)
        self.shell.emit("confirm", subject, message=f"{role.value}: measuring on fresh boots")
        r = self.rules
        threshold = r.relative(level(self.judge.evidence()[good]))

        def answered() -> bool:
            """The pair's evidence (its boots against the campaign's pooled noise) settled it, or
            the cap: as a bisection's confirmation stops, with the pair's own test to confirm it."""
            state = pair_state(self.judge, base, other, since, good, bad, r.error)
            pa, pb = fresh(self.judge, [base, other], since)
            seen = answer_pair(pa, pb, r.direction, threshold, r.alpha, r.max_boots).verdict is PairVerdict.CONFIRMED
            state = dataclasses.replace(state, seen=state.seen and seen)
            return state.boots >= r.max_boots or settled([state], r.max_boots, r.error)

        try:
            # from PAIR_MIN_BOOTS a side: the revert's boots also measure what bad without the set
            # keeps of the regression (`_rest`), which 2 boots do not tell
            boots = measure_pair(self.judge, base, other, since, Sequential(answered, PAIR_MIN_BOOTS))
        except KernelFault as exc:  # a candidate of the pair does not build, boot or take its settings
            text = f"cannot tell: {label(self.candidates.applied[self.judge.booting], self.names)}: {exc}"[:2000]
            self.store.add_decision(self.campaign_id, Decided(subject, role, PairVerdict.CANNOT_TELL, text, 0.0, 0,
                                                              fault_basis(exc)))
            return PairResult(PairVerdict.CANNOT_TELL, text)
        threshold = r.relative(level(self.judge.evidence()[good]))
        answer = answer_pair(boots[0], boots[1], r.direction, threshold, r.alpha, r.max_boots)
        verdict = answer.verdict if role is Role.CONFIRM else SET_REVERT.get(answer.verdict, answer.verdict)
        names = label(self.candidates.applied[other if role is Role.CONFIRM else base], self.names)
        change = answer.test.describe() if answer.test else "too few boots"
        text = (f"{verdict}: {names} against good {change}" if role is Role.CONFIRM else
                f"{verdict}: {names} against bad {_flip(answer)}")
        p = answer.test.p if answer.test else 1.0
        self.store.add_decision(self.campaign_id, Decided(subject, role, verdict, text,
                                                     1 - p if answer.verdict is PairVerdict.CONFIRMED else p,
                                                     sum(len(b.runs) for bs in boots for b in bs)))
        return PairResult(verdict, text, boots=min(len(bs) for bs in boots))

    def _result(self, found: SearchResult, confirmation: PairResult, revert: PairResult) -> SetBisectResult:
        by_name = {u.name: u for u in self.units}
        notes = [f"{by_name[u].name} goes as one unit: {by_name[u].why}" for u in found.units if by_name[u].why]
        if found.found is Found.TOGETHER:
            alone = "; ".join(f"{u} (in {label(s, self.names)}, which stayed good)" for u, s in found.alone if s)
            notes.append(f"no single change moves the metric: these {len(found.units)} do together; none alone "
                         f"moved it: {alone}")
        if found.unknown:
            notes.append(f"{len(found.unknown)} candidate(s) could not be judged (skipped): "
                         + "; ".join(label(s, self.names) for s in found.unknown))
        if confirmation.verdict is not PairVerdict.CONFIRMED or revert.verdict is not PairVerdict.SET_RESTORES:
            notes.append("the confirmation does not back the named set on fresh boots: treat it as a lead, not an "
                         "answer (a pair gets boots until its evidence answers, max_boots_per_commit a side at most: raise "
                         "max_boots_per_commit for more)")
        asked = {self.candidates.key(a.applied) for a in found.asked}
        unasked = [d for d in self.store.decisions(self.campaign_id) if d.role is Role.CANDIDATE and d.commit not in asked]
        if unasked:
            notes.append(f"{len(unasked)} candidate(s) measured ahead on another slot were not needed by the search; "
                         "their verdicts are kept as evidence: " + "; ".join(
                             f"{self._what(d.commit)} {d.verdict}" for d in unasked))
        boots = sum(len(bs) for j in self.shell.judges for bs in j.boots().values())
        return SetBisectResult(found.found, found.units, tuple(by_name[u].describe() for u in found.units),
                               confirmation, revert, tuple(notes), boots, len(found.asked), self.judge.on,
                               len(unasked))

    def _what(self, key: str) -> str:
        applied = self.candidates.applied.get(key)
        return key if applied is None else label(applied, self.names)


def _flip(answer: object) -> str:
    """bad against bad - set, as the change of bad - set against bad (the revert's direction)."""
    test = getattr(answer, "test", None)
    if test is None:
        return "(too few boots)"
    inv = (1 / (1 + test.change) - 1, 1 / (1 + test.high) - 1, 1 / (1 + test.low) - 1)
    return (f"{inv[0]:+.1%} (95% CI {inv[1]:+.1%}..{inv[2]:+.1%}, p={test.p:.2g}, {test.n_b}+{test.n_a} boots)"
            if all(math.isfinite(x) for x in inv) else test.describe())
