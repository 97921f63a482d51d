"""The regression's steps: when a confirmed culprit carries clearly less than all of the
good-to-bad gap, the other steps of the regression, each found and confirmed as the first one
was (docs/campaign.md "A regression in steps"); the pure rules are orchestrator/bisect/steps.py.

- The culprit's share (`steps`, `_share_check`): the culprit against its parent and bad with it
  reverted against bad (steps.combined), with one more boot pair of the confirmation while more
  boots could still tell whether it carries all of it.
- The other steps (`_step_in`, `_confirm_step`): each range left that carries a part worth a
  search is bisected against its own ends (orchestrator/bisect/search.py), its culprit confirmed
  against its parent on fresh boots, until the steps add up (steps.stop).
- All of them reverted together (`_all_reverted`): bad with every step reverted against bad,
  where it lands on the good(0)-to-bad(1) line.
- A search that ended with only skipped commits, some of them between good and bad
  (`crossing`): the candidate that moves the metric most, to be confirmed as a culprit; a revert
  that restores part of the gap (`partial`): the culprit is one step of several, not a wrong
  answer.

Every pair is measured on the home host's judge, as the engine's confirmation
(orchestrator/bisect/confirmation.py), and stored as a decision when it is measured.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol

from orchestrator.bisect.posterior import llr_of
from orchestrator.bisect.search import GiveUp, Search, SearchEnd
from orchestrator.bisect.search import latest as search_latest
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
from orchestrator.decisions import Basis, Decided, PairVerdict, Role, Verdict
from orchestrator.direction import Direction
from orchestrator.errors import BootFailed, BuildFailed, KernelFault
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.judges import Judges
from orchestrator.measure.pairs import (
    PAIR_MIN_BOOTS,
    Sequential,
    measure_pair,
    pair_since,
    pair_state,
    settled,
)
from orchestrator.results import BisectOutcome, PairResult, RegressionStep, StepsEnd
from orchestrator.stats import TwoSample, compare_pooled, pooled_boot_variance

# A search for another step gives up once this many of its visits in a row ended ambiguous or
# apart from both its ends at their caps (search.GiveUp).
UNPLACED = 4


class Repo(Protocol):
    """What the steps need of the repository (orchestrator/backends/git_bisect.py GitBisect)."""

    def rev_list(self, good: str, bad: str, first_parent: bool = False) -> str: ...
    def parent(self, commit: str) -> str: ...
    def is_ancestor(self, ancestor: str, commit: str) -> bool: ...
    def revert(self, commit: str, onto: str) -> Any: ...


class Regression:
    """The steps of campaign `campaign_id`'s regression (`campaign` with its threshold
    resolved), measured on the home host's judge (`judge()`, which changes when the campaign
    moves), searched over `lab`'s slots, in `vcs`'s history; `emit(phase, commit, message=...)`
    reports progress."""

    def __init__(self, campaign: Campaign, direction: str, store: CampaignStore, campaign_id: int, vcs: Repo,
                 judge: Callable[[], Judge], lab: Judges, error: float, emit: Callable[..., None]) -> None:
        self.c, self.direction, self.store, self.campaign_id = campaign, direction, store, campaign_id
        self.vcs, self._judge, self.lab, self.error, self.emit = vcs, judge, lab, error, emit

    @property
    def judge(self) -> Judge:
        return self._judge()

    def steps(self, culprit: str, good: str, bad: str, revert: PairResult | None,
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
        first = self._share_check(culprit, parent, bad, gap, revert)
        own = self._pooled(parent, culprit)
        assert own is not None
        gap_log = math.log1p(gap.change)
        position = revert.position if revert is not None else None
        rest = math.expm1(gap_log * (position if position is not None else 1 - first.value))
        named = [step_of(culprit, parent, first, own, True, self._alone(own))]
        shares = [first]
        end = stop(shares, self.c.steps.min_share)
        if end is None and self.c.steps.first:
            end = StepsEnd.FIRST
        ranges = [(good, parent), (culprit, bad)]
        while end is None and ranges:
            lo, hi = ranges.pop(0)
            found = self._step_in(lo, hi, gap, mass, notes)
            if found is not None:
                step, part = found
                named.append(step)
                shares.append(part)
                ranges += [(lo, step.parent), (step.commit, hi)]
                end = stop(shares, self.c.steps.min_share)
        steps = in_history(named, lambda a, b: self.vcs.is_ancestor(a, b))
        if len(steps) > 1 and self.c.metric.threshold.scale == "relative":
            levels = [self._pooled(good, x.commit) for x in steps]
            steps = mark_crossing(steps, [t.change if t is not None else 0.0 for t in levels],
                                  self.c.metric.threshold.value, self.direction)
        reverted = self._all_reverted(steps, good, bad) if len(steps) > 1 else None
        if end is None and reverted is not None and reverted.position_low is not None and reverted.position_low <= 0:
            # the shares were measured apart, each pair at its own time; bad with every step
            # reverted together is one fresh pair, and nothing of the gap is seen left
            end = StepsEnd.ADD_UP
            notes.append(f"the steps' own shares add up to {together(shares).describe()} of the regression; bad "
                         f"with all of them reverted is back at good ({reverted.position:.0%} of the gap, 95% CI "
                         f"{reverted.position_low:.0%}..{reverted.position_high:.0%}): together they carry all of it")
        elif end is None:
            notes.append(f"the steps named carry {together(shares).describe()} of the regression; no range left "
                         f"carries a part of it surely, {self.c.steps.min_share:.0%} or more possibly")
        return {"steps": steps, "steps_end": end or StepsEnd.NOT_FOUND,
                "partial": partial_line(culprit, first, rest) if first.partial else "", "reverted": reverted}

    def partial(self, revert: PairResult | None) -> bool:
        """Bad with the culprit reverted does not come back to good, yet is significantly nearer
        it: the culprit is one step of a regression in several (unless the campaign asked for
        the first step only), not a wrong answer."""
        if revert is None or self.c.steps.first or revert.verdict is not PairVerdict.NOT_RESTORED:
            return False
        change, p = revert.change or 0.0, revert.p if revert.p is not None else 1.0
        position = revert.position if revert.position is not None else 1.0
        return Direction(self.direction).better(change) and p < self.c.alpha and 0 < position < 1

    def crossing(self, state: SearchEnd, good: str, bad: str) -> SearchEnd:
        """A search that ended with only skipped commits left, some of them apart from both
        references or ambiguous between them (the regression came in steps): the candidate
        where the metric moved most towards bad from the commit before it (the last good one
        first), each placed on the good(0)-to-bad(1) line by its boots, to be confirmed as a
        culprit; `state` itself when a candidate could not be measured (a build, boot or
        workload failure: the step may be there)."""
        if state.outcome is not BisectOutcome.ONLY_SKIPPED:
            return state
        latest = search_latest(self.store.decisions(self.campaign_id))
        between = (Basis.APART, Basis.AMBIGUOUS)
        if not any(x in latest and latest[x].basis in between for x in state.candidates):
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
        self.emit("steps", x, message=(
            f"{sum(1 for c in order if latest.get(c) and latest[c].basis in between)} commit(s) lie between good and "
            f"bad (a regression in steps): {x[:12]} moves the metric most ({move:.0%} of the gap)"))
        return SearchEnd(BisectOutcome.FOUND, x, mass=state.mass)

    def _share_check(self, culprit: str, parent: str, bad: str, gap: TwoSample,
                     revert: PairResult | None) -> Share:
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
            undone = self._pooled(bad, revert.commit) if revert is not None and revert.commit else None
            return combined(part, reverted(undone, gap)) if undone is not None else part

        def settled_share() -> bool:
            part = now()
            fresh = min(len([b for b in judge.evidence().get(x, []) if b.seq >= since]) for x in (parent, culprit))
            return (part.partial or part.low >= 1 - min_share or fresh >= cap
                    or not settles_by(part, fresh, cap, min_share))

        since = pair_since(self.store, self.campaign_id, judge, Role.CONFIRM, culprit)
        if not settled_share():
            self.emit("steps", culprit, message=f"{culprit[:12]} carries {now().describe()} of the regression: "
                                                 "measuring it against its parent again to tell")
            measure_pair(judge, parent, culprit, since, Sequential(settled_share))
        return now()

    def _alone(self, change: TwoSample) -> bool:
        """A step's change against its parent reaches the campaign's threshold by itself."""
        threshold = self.c.metric.threshold
        if threshold.scale != "relative":
            return False
        return Direction(self.direction).reaches(change.change, threshold.value)

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

    def _step_in(self, lo: str, hi: str, gap: TwoSample, mass: float,
                 notes: list[str]) -> tuple[RegressionStep, Share] | None:
        """The step in the range `lo`..`hi` when it carries a part of the gap worth a search: its
        culprit by a search against `lo` and `hi`, confirmed against its parent on fresh boots."""
        if lo == hi or self.vcs.is_ancestor(hi, lo):
            return None
        ends = self._ends(lo, hi)
        if ends is None or not worth_searching(share(ends, gap), self.c.steps.min_share):
            return None
        part = self._fresh_ends(lo, hi, gap)
        if part is None:
            notes.append(f"{lo[:12]}..{hi[:12]} looked like {share(ends, gap).describe()} of the regression, but its "
                         "ends measured again on fresh boots do not surely differ: not searched")
            return None
        self.emit("steps", hi, message=f"{lo[:12]}..{hi[:12]} carries {part.describe()} of the regression: "
                                        "searching it for another step")
        search = Search(self.c, self.store, self.campaign_id, self.vcs, lo, hi, self.lab, self.error,
                        self.emit, give_up=GiveUp(UNPLACED, len(self.store.decisions(self.campaign_id))))
        end = self.crossing(search.run(), lo, hi)
        if end.outcome is not BisectOutcome.FOUND and search.unplaced():
            notes.append(f"{lo[:12]}..{hi[:12]} carries {part.describe()} of the regression, but its last {UNPLACED} "
                         "commits measured were ambiguous or apart from both its ends at their caps: no step there, or "
                         "one too small for the noise; not searched further")
            return None
        if end.outcome is not BisectOutcome.FOUND:
            notes.append(f"{lo[:12]}..{hi[:12]} carries {part.describe()} of the regression, but its search named no "
                         f"single commit ({end.outcome.value.replace('_', ' ')})")
            return None
        commit, parent = end.culprit, self.vcs.parent(end.culprit)
        t = self._confirm_step(commit, parent, lo, hi, llr_of(end.mass))
        if t is None:
            notes.append(f"{commit[:12]} ends the search of {lo[:12]}..{hi[:12]} but is not confirmed against its parent")
            return None
        own = self._pooled(parent, commit) or t  # every boot of both: the search's and the pair's
        step_share = share(own, gap)
        return step_of(commit, parent, step_share, own, False, self._alone(own)), step_share

    def _fresh_ends(self, lo: str, hi: str, gap: TwoSample) -> Share | None:
        """`hi` against `lo` on fresh boots of their own, interleaved (measure/pairs.py), as a part
        of `gap`, when they surely differ towards bad by a part worth a search; else None. The
        ends' older boots are the ones that made the culprit's share look partial (a parent that
        read low makes both the culprit's change and the range before it look like a part), and a
        search of a range with no step in it only ends at its round limit. One boot pair at a time
        until the pair differs at the campaign's error (from PAIR_MIN_BOOTS boots a side), the
        part is surely below min_share, or the pair is at max_boots_per_commit. Stored as an
        `ends` decision."""
        judge, cap, min_share = self.judge, self.c.max_boots_per_commit, self.c.steps.min_share
        since = pair_since(self.store, self.campaign_id, judge, Role.ENDS, hi)
        self.emit("steps", hi, message=f"{lo[:12]}..{hi[:12]} may carry a part of the regression: its ends booted "
                                        "again against each other before a search")

        def now() -> tuple[TwoSample | None, int]:
            state = pair_state(judge, lo, hi, since, lo, hi, self.error)
            return state.test, state.boots

        def differ(t: TwoSample | None, n: int) -> bool:
            return t is not None and n >= PAIR_MIN_BOOTS and t.p < self.error and worth_searching(share(t, gap), min_share)

        def done() -> bool:
            t, n = now()
            return n >= cap or differ(t, n) or (t is not None and share(t, gap).high < min_share)

        try:
            measure_pair(judge, lo, hi, since, Sequential(done))
        except (BuildFailed, BootFailed, KernelFault) as exc:
            why = f"range's ends {PairVerdict.CANNOT_TELL}: could not be measured: {exc}"[:500]
            self.store.add_decision(self.campaign_id, Decided(hi, Role.ENDS, PairVerdict.CANNOT_TELL, why, 0.0, 0))
            return None
        t, n = now()
        verdict = (PairVerdict.CONFIRMED if differ(t, n) else PairVerdict.NOT_SEEN
                   if t is not None and share(t, gap).high < min_share else PairVerdict.CANNOT_TELL)
        text = (f"{hi[:12]} against {lo[:12]} {t.describe()}: {share(t, gap).describe()} of the regression"
                if t is not None else "too few boots to compare")
        self.store.add_decision(self.campaign_id, Decided(hi, Role.ENDS, verdict, f"range's ends {verdict}: {text}",
                                                     1 - t.p if t else 0.0, t.n_b if t else 0))
        self.emit("steps", hi, message=f"range's ends {verdict}: {text}")
        return share(t, gap) if t is not None and verdict is PairVerdict.CONFIRMED else None

    def _confirm_step(self, commit: str, parent: str, lo: str, hi: str,
                      prior: float) -> TwoSample | None:
        """`commit` against its parent on fresh boots, interleaved (measure/pairs.py), until the
        pair answered for the change from `lo` to `hi` (or the cap); its test when `commit` is
        significantly worse, else None. Stored as a confirm decision."""
        judge, cap = self.judge, self.c.max_boots_per_commit
        try:
            judge.kernel(parent)
            since = pair_since(self.store, self.campaign_id, judge, Role.CONFIRM, commit)

            def done() -> bool:
                state = pair_state(judge, parent, commit, since, lo, hi, self.error)
                return state.boots >= cap or settled([state], cap, self.error, prior)

            measure_pair(judge, parent, commit, since, Sequential(done))
        except (BuildFailed, BootFailed, KernelFault) as exc:
            self.store.add_decision(self.campaign_id, Decided(commit, Role.CONFIRM, PairVerdict.CANNOT_TELL,
                                                         f"step against parent: could not be measured: {exc}"[:500],
                                                         0.0, 0))
            return None
        t = pair_state(judge, parent, commit, since, lo, hi, self.error).test
        worse = t is not None and t.p < self.c.alpha and Direction(self.direction).worse(t.change)
        verdict = PairVerdict.CONFIRMED if worse else PairVerdict.NOT_SEEN if t is not None else PairVerdict.CANNOT_TELL
        text = f"step against parent {t.describe()}" if t is not None else "step against parent: too few boots"
        self.store.add_decision(self.campaign_id, Decided(commit, Role.CONFIRM, verdict, text, 1 - t.p if t else 0.0,
                                                     t.n_b if t else 0))
        self.emit("confirm", commit, message=f"{verdict}: {text}")
        return t if worse else None

    def _all_reverted(self, steps: tuple[RegressionStep, ...], good: str,
                      bad: str) -> PairResult:
        """Bad with every step reverted together (newest first, each onto the last) against bad,
        on fresh boots interleaved: where it lands on the good(0)-to-bad(1) line, with its 95%
        interval; it restores the metric when what is left is not surely min_share or more."""
        onto = bad
        for step in reversed(steps):
            made = self.vcs.revert(step.commit, onto)
            if not made.commit:
                return PairResult(PairVerdict.NO_APPLY, f"{PairVerdict.NO_APPLY}: {step.commit[:12]}: {made.reason}"[:500])
            onto = made.commit
        judge, cap = self.judge, self.c.max_boots_per_commit
        since = pair_since(self.store, self.campaign_id, judge, Role.REVERT, onto)

        def done() -> bool:
            state = pair_state(judge, bad, onto, since, good, bad, self.error, -1)
            return state.boots >= cap or settled([state], cap, self.error)

        try:
            measure_pair(judge, bad, onto, since, Sequential(done))
        except (BuildFailed, BootFailed, KernelFault) as exc:
            return PairResult(PairVerdict.CANNOT_TELL, f"could not be measured: {exc}"[:500], onto)
        t = pair_state(judge, bad, onto, since, good, bad, self.error, -1).test
        gap = self._pooled(good, bad)
        if t is None or gap is None:
            return PairResult(PairVerdict.CANNOT_TELL, "too few boots to compare", onto)
        removed = share(t, gap)  # negative: the part of the gap the reverts take away
        left, low, high = 1 + removed.value, 1 + removed.low, 1 + removed.high
        verdict = PairVerdict.RESTORES if low < self.c.steps.min_share else PairVerdict.NOT_RESTORED
        text = (f"{verdict}: bad with all {len(steps)} steps reverted ({onto[:12]}) against bad {t.describe()}, "
                f"at {left:.0%} of the good-to-bad gap (95% CI {low:.0%}..{high:.0%})")
        self.store.add_decision(self.campaign_id, Decided(steps[-1].commit, Role.REVERT, verdict, text, 0.0, 0))
        self.emit("confirm", onto, message=text)
        return PairResult(verdict, text, onto, change=t.change, p=t.p, position=left, position_low=low,
                          position_high=high, boots=t.n_b)
