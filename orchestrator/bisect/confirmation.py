"""The culprit's two checks before it is named, as pair measurements: the culprit against its
parent, and bad with the culprit reverted against bad (docs/campaign.md, steps 4 and 5).

Both sides of a pair are booted afresh, interleaved (A B B A), one pair at a time from a first
boot stored as a `measuring` decision (so a resumed campaign goes on with the same boots): the
one pair measurement of orchestrator/measure/pairs.py with a Sequential stop rule. The
confirmation first, then the revert, until `measure.pairs.settled` says the pairs answered: each one's
own t-test (the boot noise pooled over the campaign: one noise model) shows the change, and the
candidate's prior odds from the search plus the pairs' evidence reach the campaign's 1 - error;
or the evidence is against it; or the cap of max_boots_per_commit a side. Each answer is stored
as a decision when it is measured, and each is returned as a `PairResult`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable

from orchestrator.campaign.file import Campaign
from orchestrator.decisions import Basis, Decided, PairVerdict, Role
from orchestrator.direction import Direction
from orchestrator.errors import BootFailed, BuildFailed, WorkloadFailed
from orchestrator.measure.judge import CampaignStore, Judge
from orchestrator.measure.pairs import Pair, Sequential, boots_gap, measure_pair, pair_since, pair_state, settled
from orchestrator.results import PairResult

# The verdicts whose pair text begins with the verdict itself (the revert measured, or not applying):
# the one-line summary at the end of a bisection gives the verdict alone for them.
TEXT_LEADS_WITH_VERDICT = frozenset({PairVerdict.RESTORES, PairVerdict.NOT_RESTORED, PairVerdict.NO_APPLY})


@dataclass(frozen=True)
class CulpritPairs:
    """A nominee's pairs as measured: the culprit against its parent (`confirmation`) and bad
    with it reverted against bad (`revert`); None where a pair was not measured."""

    confirmation: PairResult | None = None
    revert: PairResult | None = None


class Pairs:
    """The pair measurements of campaign `campaign_id` on the home host's judge (`judge()`:
    the engine's, which changes when the campaign moves); `revert_of(culprit, onto)` makes the
    revert (the engine's Vcs); `emit(phase, commit, message=...)` reports progress."""

    def __init__(self, campaign: Campaign, direction: str, store: CampaignStore, campaign_id: int,
                 judge: Callable[[], Judge], revert_of: Callable[[str, str], Any], error: float,
                 emit: Callable[..., None]) -> None:
        self.c, self.direction, self.store, self.campaign_id = campaign, direction, store, campaign_id
        self._judge, self.revert_of, self.error, self.emit = judge, revert_of, error, emit

    @property
    def judge(self) -> Judge:
        return self._judge()

    def _sequential(self, role: Role, commit: str, a: str, b: str, sign: int, settles: Callable[[Any], bool],
                    good: str, bad: str, prior: float, to_come: int) -> Pair:
        """`b` against `a` on fresh boots of their own (from the boot stored when the pair
        started), interleaved A B B A one pair at a time until `measure.pairs.settled` says this pair
        answered (with `prior`, the candidate's log odds so far, and `to_come` pairs still to be
        measured), or the cap of max_boots_per_commit a side; the pair's state."""
        since = pair_since(self.store, self.campaign_id, self.judge, role, commit)

        def done() -> bool:
            state = self._state(a, b, since, sign, settles, good, bad)
            return state.boots >= self.c.max_boots_per_commit or settled(
                [state], self.c.max_boots_per_commit, self.error, prior, to_come)

        measure_pair(self.judge, a, b, since, Sequential(done))
        return self._state(a, b, since, sign, settles, good, bad)

    def _state(self, a: str, b: str, since: int, sign: int, settles: Callable[[Any], bool], good: str,
               bad: str) -> Pair:
        """The pair `b` against `a` from boot `since` on (measure.pairs.pair, the noise pooled over the
        campaign's other boots), `seen` when `settles` holds for its test."""
        state = pair_state(self.judge, a, b, since, good, bad, self.error, sign)
        return dataclasses.replace(state, seen=state.seen and state.test is not None and settles(state.test))

    def _worse(self, change: float) -> bool:
        return Direction(self.direction).worse(change)

    def confirm(self, culprit: str, parent: str, good: str, bad: str, prior: float = 0.0,
                to_come: int = 0) -> PairResult:
        """The culprit against its parent, both booted afresh and interleaved (A B B A): the
        confirmation is evidence of its own (a step misled by unlucky boots is not confirmed by
        the same boots), and the interleaving, not a drift model, keeps a drifting host out of
        it. `prior`: the candidate's log odds from the search; `to_come`: pairs measured after
        this one (the revert), which carry the rest (measure.pairs.settled)."""
        stored = next((d for d in reversed(self.store.decisions(self.campaign_id))
                       if d.role is Role.CONFIRM and d.commit == culprit and d.basis is not Basis.MEASURING), None)
        try:
            self.judge.kernel(parent)
            state = self._sequential(Role.CONFIRM, culprit, parent, culprit, 1, self._seen, good, bad, prior,
                                     to_come)
        except (BuildFailed, BootFailed, WorkloadFailed) as exc:
            return PairResult(PairVerdict.CANNOT_TELL, f"could not be measured: {exc}"[:500])
        t = state.test
        if t is None:
            return PairResult(PairVerdict.CANNOT_TELL, "too few boots to compare")
        significant = t.p < self.c.alpha and self._worse(t.change)
        seen = significant and self._carries(t.low, t.high)
        weight = state.log_bf
        # not seen: the change looks more like none than like the good-to-bad one, or is surely
        # smaller than the regression asked about; cannot tell: neither significant nor against
        # it (too few boots for this noise)
        verdict = PairVerdict.CONFIRMED if seen else (
            PairVerdict.NOT_SEEN if weight < 0 or significant else PairVerdict.CANNOT_TELL)
        text = f"culprit against parent {t.describe()}"
        if significant and not seen:
            text += f", smaller than the {self.c.metric.threshold.describe()} asked about"
        if stored is None or stored.reason != text:
            self.store.add_decision(self.campaign_id, Decided(culprit, Role.CONFIRM, verdict, text, 1 - t.p if seen else t.p,
                                                         t.n_b))
        self.emit("confirm", culprit, message=f"{verdict}: {text}")
        return PairResult(verdict, text, change=t.change, low=t.low, high=t.high, p=t.p, evidence=weight,
                          boots=state.boots)

    def _carries(self, low: float, high: float) -> bool:
        """The culprit's change can be the regression asked about: the worse end of its 95% CI
        reaches a relative threshold. A commit whose change is surely smaller explains part of
        the regression at most (seen on the demo under load: a commit after the real culprit,
        misjudged good, then "confirmed" at -8.3%, CI -15.7..-0.2%, against a -25% threshold)."""
        threshold = self.c.metric.threshold
        if threshold.scale != "relative":
            return True
        direction = Direction(self.direction)
        return direction.worsening(direction.worse_end(low, high)) >= abs(threshold.value)

    def _seen(self, t: Any) -> bool:
        """The culprit's change against its parent is the regression asked about (confirmed)."""
        return t.p < self.c.alpha and self._worse(t.change) and self._carries(t.low, t.high)

    @staticmethod
    def _position(t: Any, gap: float) -> float:
        return 1 + math.log1p(t.change) / gap if gap else 0.0  # the revert on the good(0)-bad(1) line

    def _restores(self, t: Any, good: str, bad: str) -> bool:
        """Bad with the culprit reverted is significantly better than bad, nearer good than bad."""
        boots = self.judge.evidence()
        return t.p < self.c.alpha and self._worse(-t.change) and self._position(t, boots_gap(boots[good],
                                                                                             boots[bad])) < 0.5

    def revert(self, culprit: str, good: str, bad: str, prior: float = 0.0) -> PairResult:
        """`bad` with the culprit reverted (a commit in vmbisect's clone) against `bad`; `prior`:
        the candidate's log odds with its confirmation's evidence."""
        revert = self.revert_of(culprit, bad)
        if not revert.commit:
            result = PairResult(PairVerdict.NO_APPLY, f"{PairVerdict.NO_APPLY}: {revert.reason}")
        else:
            try:
                state = self._sequential(Role.REVERT, culprit, bad, revert.commit, -1,
                                         lambda t: self._restores(t, good, bad), good, bad, prior, 0)
            except (BuildFailed, BootFailed, WorkloadFailed) as exc:
                return PairResult(PairVerdict.CANNOT_TELL,
                                  f"the revert {revert.commit[:12]} could not be measured: {exc}"[:500], revert.commit)
            boots = self.judge.evidence()
            t = state.test
            if t is None:
                return PairResult(PairVerdict.CANNOT_TELL, "too few boots to compare", revert.commit)
            gap = boots_gap(boots[good], boots[bad])
            position = self._position(t, gap)
            restores = self._restores(t, good, bad)
            verdict = PairVerdict.RESTORES if restores else PairVerdict.NOT_RESTORED
            result = PairResult(verdict, f"{verdict}: bad with {culprit[:12]} reverted ({revert.commit[:12]}) against "
                                         f"bad {t.describe()}, at {position:.0%} of the good-to-bad gap", revert.commit,
                                change=t.change, p=t.p, position=position, evidence=state.log_bf, boots=state.boots)
        stored = next((d for d in reversed(self.store.decisions(self.campaign_id))
                       if d.role is Role.REVERT and d.basis is not Basis.MEASURING), None)
        if stored is None or stored.reason != result.text:
            self.store.add_decision(self.campaign_id, Decided(culprit, Role.REVERT, result.verdict, result.text, 0.0, 0))
        self.emit("confirm", culprit, message=result.text)
        return result

