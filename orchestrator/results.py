"""What a stored campaign ended with: one result type per campaign kind, as each kind has one
spec type (orchestrator/kinds/table.py pairs them), each written by `to_dict` into the store's
JSON `result` column and read back by `from_dict`. No field changes its meaning with the kind:
a bisection's answer is its `outcome` (found, only skipped, inconclusive); a campaign that
stopped before an answer has a `Stopped` result: why (`StopKind`: refused, failed, paused), the
reason for people and, for a refusal, the endpoint check's problem as data. Each type says
itself what the status line and the mail show of it (`line`, `words`, `outcome_word`,
`named_commit`, `why`): nothing dispatches on a result's type.

Results an older vmbisect stored read into the same types: a bisection's outcome was under
`kind` (found / only_skipped / inconclusive), a verification and a comparison put their campaign
kind there (`"kind": "verify"`, `"kind": "compare"`), lines were under `verdict`, a stopped
campaign stored only `{"reason": ...}` (why was its row's state); `from_dict` takes both
layouts (tests/data/results holds results captured from that version), and the store is not
rewritten.

A pair measurement's answer inside a result (a bisection's confirmation and revert, a set
bisection's) is a `PairResult`, written and read here only (`PairResult.to_dict`, `from_dict`),
with the keys and verdict words a store has always held.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Mapping, TypeVar, Union

from orchestrator.decisions import Found, PairVerdict


class BisectOutcome(StrEnum):
    """A bisection's answer: a culprit, only skipped commits left (the culprit is one of the
    candidates), or inconclusive (the candidates are the range left; notes say why)."""

    FOUND = "found"
    ONLY_SKIPPED = "only_skipped"
    INCONCLUSIVE = "inconclusive"


class StepsEnd(StrEnum):
    """Why the search for the steps of a regression ended (orchestrator/bisect/steps.py): the
    culprit carries all of it (`all`: no further step searched), the steps named add up to the
    whole within the noise (`add_up`), what is left is below the campaign's steps.min_share
    (`small`), the campaign asked for the first step only (`first`), or a range left carries a
    part its search did not name (`not_found`: the notes say why)."""

    ALL = "all"
    ADD_UP = "add_up"
    SMALL = "small"
    FIRST = "first"
    NOT_FOUND = "not_found"


@dataclass(frozen=True)
class PairResult:
    """What one pair measurement (B against A on fresh boots of their own) answered: its
    verdict and the line people read (`text`), and what stood behind it when it was measured:
    B when the pair made it (`commit`: a revert), what a set's revert took out (`units`), the
    change of B against A with its 95% interval (`low`, `high`) and p-value, where B lands on
    the good(0)-to-bad(1) line (`position`, with its 95% interval for bad with every step
    reverted), the pair's log Bayes factor for the change asked about (`evidence`) and its
    boots a side. What a rule did not measure is None (or empty): a pair that could not be
    measured has its verdict and text only."""

    verdict: PairVerdict
    text: str
    commit: str = ""
    units: tuple[str, ...] = ()
    change: float | None = None
    low: float | None = None
    high: float | None = None
    p: float | None = None
    position: float | None = None
    position_low: float | None = None
    position_high: float | None = None
    evidence: float | None = None
    boots: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored form: the verdict's word and every field measured (nothing for the rest)."""
        d: dict[str, Any] = {"verdict": self.verdict.value, "text": self.text}
        if self.commit:
            d["commit"] = self.commit
        if self.units:
            d["units"] = list(self.units)
        for key in ("change", "low", "high", "p", "position", "position_low", "position_high", "evidence", "boots"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.low is None and "position_low" in d:  # the layout stores and JSON reports have always held
            d["low"], d["high"] = d.pop("position_low"), d.pop("position_high", None)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PairResult:
        """A stored pair, also as an older vmbisect stored it: a set's revert kept its units
        joined into one string ("a, b"), and bad with every step reverted kept the interval of
        its position under `low` and `high` (it had no interval of the change)."""
        units = d.get("units") or ()
        low, high = d.get("low"), d.get("high")
        position_low, position_high = d.get("position_low"), d.get("position_high")
        if "position" in d and low is not None and position_low is None:
            low, high, position_low, position_high = None, None, low, high
        return cls(PairVerdict(d["verdict"]), d.get("text", ""), d.get("commit") or "",
                   tuple(units.split(", ") if isinstance(units, str) else units), d.get("change"), low, high,
                   d.get("p"), d.get("position"), position_low, position_high, d.get("evidence"), d.get("boots"))

    @classmethod
    def read(cls, d: Mapping[str, Any] | None) -> PairResult | None:
        """A stored pair, or None where none was stored (`{}` or null)."""
        return cls.from_dict(d) if d else None


@dataclass(frozen=True)
class RegressionStep:
    """One step of a regression: a commit, its parent, its share of the good-to-bad gap with the
    share's 95% interval, its change against its parent (relative, on fresh boots), whether it
    is where the metric crossed the threshold (`crossed`: the culprit `git bisect` names) and
    whether its change alone reaches the threshold (`alone`)."""

    commit: str
    parent: str
    share: float
    low: float
    high: float
    change: float
    crossed: bool = False
    alone: bool = False

    def describe(self) -> str:
        what = (f"{self.commit[:12]} {self.change:+.1%} against its parent, {self.share:.0%} of the regression "
                f"(95% CI {self.low:.0%}..{self.high:.0%})")
        if self.crossed:
            what += "; crossed the threshold"
        return what + ("" if self.alone else "; below the threshold alone")


# the campaign file's default steps.min_share (campaign/file.py Steps), for a result read alone
DEFAULT_MIN_SHARE = 0.2


@dataclass(frozen=True)
class BisectResult:
    outcome: BisectOutcome
    culprit: str = ""
    parent: str = ""
    candidates: tuple[str, ...] = ()
    confidence: float = 0.0
    confidence_text: str = ""
    doubtful: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    inherited: int = 0  # verdicts carried by an identical image, not booted
    host: str | None = None  # the lab host that measured the last steps
    boots: int = 0
    confirmation: PairResult | None = None  # the culprit against its parent
    revert: PairResult | None = None  # bad with the culprit reverted against bad
    # the regression's steps, oldest first (the culprit among them), why their search ended, the
    # answer's line when the culprit carries clearly less than all, and bad with every step
    # reverted together against bad (orchestrator/bisect/steps.py)
    steps: tuple[RegressionStep, ...] = ()
    steps_end: StepsEnd | None = None
    partial: str = ""
    reverted: PairResult | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["outcome"] = self.outcome.value
        d["candidates"], d["doubtful"], d["notes"] = list(self.candidates), list(self.doubtful), list(self.notes)
        d["confirmation"] = self.confirmation.to_dict() if self.confirmation is not None else {}
        d["revert"] = self.revert.to_dict() if self.revert is not None else None
        d["steps"] = [asdict(x) for x in self.steps]
        d["steps_end"] = self.steps_end.value if self.steps_end is not None else None
        d["reverted"] = self.reverted.to_dict() if self.reverted is not None else None
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BisectResult":
        # `kind`: before results were typed; the oldest stored only the culprit
        outcome = d.get("outcome") or d.get("kind") or ("found" if d.get("culprit") else "inconclusive")
        return cls(BisectOutcome(outcome), d.get("culprit", ""), d.get("parent", ""), tuple(d.get("candidates", ())),
                   float(d.get("confidence", 0.0)), d.get("confidence_text", ""), tuple(d.get("doubtful", ())),
                   tuple(d.get("notes", ())), int(d.get("inherited", 0)), d.get("host"), int(d.get("boots", 0)),
                   PairResult.read(d.get("confirmation")), PairResult.read(d.get("revert")),
                   tuple(RegressionStep(**x) for x in d.get("steps") or ()),
                   StepsEnd(d["steps_end"]) if d.get("steps_end") else None, d.get("partial", ""),
                   PairResult.read(d.get("reverted")))

    def line(self) -> str:
        """One line for `status`: the culprit (or the candidates) and the confidence."""
        if self.outcome is BisectOutcome.FOUND:
            confidence = self.confidence_text.split(":")[0]  # "LOW confidence 80.0%" without why (shown in status ID)
            named = f"{self.culprit[:12]} ({confidence})" if confidence else self.culprit[:12]
            if len(self.steps) > 1:
                named += f"; {len(self.steps)} steps: " + ", ".join(f"{x.commit[:12]} {x.share:.0%}" for x in self.steps)
            return named
        shown = " ".join(c[:12] for c in self.candidates)
        return f"inconclusive: {shown}" if self.outcome is BisectOutcome.INCONCLUSIVE else shown

    def outcome_word(self, state: str) -> str:
        return self.outcome.value

    def named_commit(self) -> str:
        """The commit the answer names ("" when none is found)."""
        return self.culprit if self.outcome is BisectOutcome.FOUND else ""

    def words(self, state: str) -> str:
        """The answer in a few words (a mail's subject)."""
        if self.outcome is BisectOutcome.FOUND:
            return f"culprit {self.culprit[:12]}"
        n = len(self.candidates)
        what = "only skipped commits left" if self.outcome is BisectOutcome.ONLY_SKIPPED else "inconclusive"
        return f"{what}, {n} candidate{'s' if n != 1 else ''}"

    def why(self) -> str:
        return ""

    def unsettled_share(self, min_share: float = DEFAULT_MIN_SHARE) -> str:
        """The answer's line when the culprit's share of the regression was left unsettled: its
        95% interval reaches all of the gap (so no other step was searched) and also lies below
        1 - `min_share` (the campaign's steps.min_share: another commit may carry a part worth a
        search); "" when settled, partial (`partial` says it) or not measured."""
        mine = next((x for x in self.steps if x.commit == self.culprit), None)
        if self.outcome is not BisectOutcome.FOUND or self.partial or len(self.steps) != 1 or mine is None:
            return ""
        if mine.high < 1.0 or mine.low >= 1.0 - min_share:
            return ""
        return (f"{self.culprit[:12]} carries about {mine.share:.0%} of the regression (95% CI {mine.low:.0%}.."
                f"{mine.high:.0%}), not settled: another commit may carry the rest; `steps: all` with a larger "
                "max_boots_per_commit would tell")

    def regression_steps(self, min_share: float = DEFAULT_MIN_SHARE) -> tuple[str, ...]:
        """The answer's lines on the regression's steps, for the mail's head: the culprit's
        share when it carries clearly less than all or could not be settled, then every step
        named, oldest first."""
        if self.outcome is not BisectOutcome.FOUND:
            return ()
        share = self.partial or self.unsettled_share(min_share)
        lines: tuple[str, ...] = (share,) if share else ()
        if len(self.steps) > 1:
            lines += tuple(f"Step {i}: {x.describe()}" for i, x in enumerate(self.steps, 1))
        return lines


class LinesAnswer:
    """The words of an answer that is its lines (verify's, a comparison's): the first line is
    its status line and mail words; it names no commit and gives no reason of its own."""

    lines: tuple[str, ...]

    def line(self) -> str:
        return (self.lines or ("",))[0]

    def outcome_word(self, state: str) -> str:
        return state

    def named_commit(self) -> str:
        return ""

    def words(self, state: str) -> str:
        return self.lines[0] if self.lines else state

    def why(self) -> str:
        return ""

    def regression_steps(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class VerifyResult(LinesAnswer):
    commit: str
    parent: str
    answer: str  # confirmed, not seen, cannot tell
    lines: tuple[str, ...]  # the answer's line, and the revert's when asked
    boots_needed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "parent": self.parent, "answer": self.answer, "lines": list(self.lines),
                "boots_needed": self.boots_needed}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VerifyResult":
        lines = d.get("lines", d.get("verdict", ()))  # `verdict`: before results were typed
        return cls(d.get("commit", ""), d.get("parent", ""), d.get("answer", ""), tuple(lines),
                   int(d.get("boots_needed", 0)))


@dataclass(frozen=True)
class CompareResult(LinesAnswer):
    lines: tuple[str, ...]  # the comparison's verdict lines

    def to_dict(self) -> dict[str, Any]:
        return {"lines": list(self.lines)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CompareResult":
        return cls(tuple(d.get("lines", d.get("verdict", ()))))  # `verdict`: before results were typed


@dataclass(frozen=True)
class SetBisectResult:
    """A set bisection's answer (orchestrator/setbisect/): the smallest set of changes that moves
    the metric (`found`: one, or together: several needed, none alone), each change as people
    read it, the confirmation (good + set against good: confirmed, not seen, cannot tell) and
    the revert (bad - set against bad: restores, does not restore, cannot tell), notes, the
    boots taken, the candidates judged and the host that measured; `ahead`: candidates measured
    ahead on other slots that the search did not need (their verdicts kept as evidence)."""

    found: Found
    units: tuple[str, ...]
    changes: tuple[str, ...] = ()
    confirmation: PairResult | None = None
    revert: PairResult | None = None
    notes: tuple[str, ...] = ()
    boots: int = 0
    candidates: int = 0
    host: str | None = None
    ahead: int = 0

    @property
    def how(self) -> str:
        """How the set moves the metric, for people."""
        return "together" if self.found is Found.TOGETHER else "alone"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["found"] = self.found.value
        d["units"], d["changes"], d["notes"] = list(self.units), list(self.changes), list(self.notes)
        d["confirmation"] = self.confirmation.to_dict() if self.confirmation is not None else {}
        d["revert"] = self.revert.to_dict() if self.revert is not None else {}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SetBisectResult":
        return cls(Found(d.get("found") or Found.ONE), tuple(d.get("units", ())), tuple(d.get("changes", ())),
                   PairResult.read(d.get("confirmation")), PairResult.read(d.get("revert")),
                   tuple(d.get("notes", ())),
                   int(d.get("boots", 0)), int(d.get("candidates", 0)), d.get("host"), int(d.get("ahead", 0)))

    def line(self) -> str:
        """One line for `status`: the set, how it moves the metric, the confirmation's verdicts."""
        how = self.how
        unasked = f"; {self.ahead} measured ahead, not needed" if self.ahead else ""
        return (f"{' + '.join(self.units)} ({how}; confirmation {_verdict(self.confirmation)}, "
                f"revert {_verdict(self.revert)}{unasked})")

    def outcome_word(self, state: str) -> str:
        return state

    def named_commit(self) -> str:
        return ""

    def words(self, state: str) -> str:
        return self.line()

    def why(self) -> str:
        return ""

    def regression_steps(self) -> tuple[str, ...]:
        return ()


def _verdict(pair: PairResult | None) -> str:
    return pair.verdict.value if pair is not None else "-"


def text_of(pair: PairResult | None) -> str:
    """A pair's line, "" for one not measured."""
    return pair.text if pair is not None else ""


class StopKind(StrEnum):
    """Why a campaign stopped before its answer (the row's state says the same)."""

    REFUSED = "refused"  # the endpoints do not allow a bisection; `cause` is the check's problem
    FAILED = "failed"  # an endpoint does not build, boot or run the workload
    PAUSED = "paused"  # the host's fault (libvirt gone, disk full, store unreachable); `vmbisect resume` goes on


@dataclass(frozen=True)
class Stopped:
    """A campaign that stopped before its answer, why (`stop`), the reason for people and, for a
    refusal, the endpoint check's problem (good_not_good, bad_not_bad, short_of_threshold,
    not_significant, too_noisy; orchestrator/measure/endpoints.py) and, for a regression short of
    the threshold, the relative threshold that would bisect it (`suggested`, e.g. -0.063)."""

    stop: StopKind
    reason: str
    cause: str = ""
    suggested: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"stop": self.stop.value, "reason": self.reason, "cause": self.cause,
                **({"suggested_threshold": self.suggested} if self.suggested is not None else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], state: str = "") -> "Stopped":
        """`state`: the row's, which is all an older vmbisect's `{"reason": ...}` says of why."""
        return cls(StopKind(d.get("stop") or state), d.get("reason", ""), d.get("cause", ""),
                   d.get("suggested_threshold"))

    def line(self) -> str:
        return f"{self.stop.value}: {self.reason}"

    def outcome_word(self, state: str) -> str:
        return self.stop.value

    def named_commit(self) -> str:
        return ""

    def words(self, state: str) -> str:
        return f"{self.stop.value}: {self.reason}"

    def why(self) -> str:
        """Why it stopped, for people ("Refused: ...")."""
        return f"{self.stop.value.capitalize()}: {self.reason}"

    def regression_steps(self) -> tuple[str, ...]:
        return ()


Answer = Union[BisectResult, VerifyResult, CompareResult, SetBisectResult]
Result = Union[BisectResult, VerifyResult, CompareResult, SetBisectResult, Stopped]
STOPS = tuple(s.value for s in StopKind)
A = TypeVar("A", BisectResult, VerifyResult, CompareResult, SetBisectResult)


def answer_as(answer: type[A], state: str, data: Mapping[str, Any] | None) -> A | None:
    """The answer of type `answer` a campaign in `state` stored (None unless it is done)."""
    return answer.from_dict(data) if data and state == "done" else None


def stopped(state: str, data: Mapping[str, Any] | None) -> Stopped | None:
    """Why a campaign in `state` stopped (None unless it was refused, failed or paused)."""
    return Stopped.from_dict(data, state) if data and state in STOPS else None


def read(answer: type[Answer], state: str, data: Mapping[str, Any] | None) -> Result | None:
    """The typed result of a campaign whose answers are of type `answer` (the kind table's,
    orchestrator/kinds/table.py) in `state`; None while it runs without one (what a pause left
    is no longer why once it runs again)."""
    return answer.from_dict(data) if data and state == "done" else stopped(state, data)
