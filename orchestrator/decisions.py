"""What a campaign decided, as data: the role a decision plays, what kind of reason backs it,
the verdict of a step, and the decision record the store keeps.

Control flow reads these fields, never the `reason` sentence, which is for people (the report,
the live view, status). `inherited_from` names the measured commit whose verdict a commit with
the same kernel image carries; `since` is the first boot of a pair measurement (confirmation,
revert) so a resumed campaign goes on with the same boots.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    """A step's verdict; MORE is never stored (it asks for another boot)."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"
    MORE = "more"


class Role(StrEnum):
    """good / bad: the endpoints' check; step: a bisection step; recheck: a step re-examined;
    confirm / revert: the culprit against its parent, the tip with it reverted against the tip;
    host: the campaign moved to another host."""

    GOOD = "good"
    BAD = "bad"
    STEP = "step"
    RECHECK = "recheck"
    CONFIRM = "confirm"
    REVERT = "revert"
    HOST = "host"
    CANDIDATE = "candidate"  # a set bisection's candidate (good + a set of changes) judged


class Kind(StrEnum):
    """What backs a decision: measured boots (sure, or `doubtful` at the cap of boots), the
    verdict of an identical kernel image (`inherited`), a commit that could not be judged
    (`ambiguous` at the cap, `build_failed`, `boot_failed`, `workload_failed`), a pair
    measurement under way (`measuring`), the endpoints' check (`endpoints`), a move to another
    host (`moved`), a step apart from both references at its cap (`apart`: a second change, untestable)."""

    MEASURED = "measured"
    DOUBTFUL = "doubtful"
    AMBIGUOUS = "ambiguous"
    INHERITED = "inherited"
    BUILD_FAILED = "build_failed"
    BOOT_FAILED = "boot_failed"
    WORKLOAD_FAILED = "workload_failed"
    MEASURING = "measuring"
    ENDPOINTS = "endpoints"
    MOVED = "moved"
    UNSETTABLE = "unsettable"  # a set bisection's candidate whose guest settings do not take
    APART = "apart"


@dataclass(frozen=True)
class Decided:
    """One stored decision. `verdict` is a Verdict's value for endpoints, steps and rechecks, the
    confirmation's or revert's answer for those roles, `moved` for a host move."""

    commit: str
    role: Role
    verdict: str
    reason: str
    confidence: float
    samples: int
    kind: Kind = Kind.MEASURED
    inherited_from: str = ""
    since: int = -1

    @property
    def inherited(self) -> bool:
        return self.kind is Kind.INHERITED
