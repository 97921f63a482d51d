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


# The verdicts a step or candidate is judged by (a skip is none).
JUDGED = (Verdict.GOOD, Verdict.BAD)


class Role(StrEnum):
    """good / bad: the endpoints' check; step: a bisection step; recheck: a step re-examined;
    confirm / revert: the culprit against its parent, the tip with it reverted against the tip;
    ends: a range left by a regression's steps, its newer end against its older one on fresh
    boots before it is searched for another step; host: the campaign moved to another host."""

    GOOD = "good"
    BAD = "bad"
    STEP = "step"
    RECHECK = "recheck"
    CONFIRM = "confirm"
    REVERT = "revert"
    ENDS = "ends"
    HOST = "host"
    CANDIDATE = "candidate"  # a set bisection's candidate (good + a set of changes) judged


class Basis(StrEnum):
    """What backs a decision: measured boots (sure, or `doubtful` at the cap of boots), the
    verdict of an identical kernel image (`inherited`), a commit that could not be judged
    (`ambiguous` at the cap, `build_failed`, `boot_failed`, `workload_failed`), a pair
    measurement under way (`measuring`), the endpoints' check (`endpoints`), a move to another
    host (`moved`), a step apart from both references at its cap (`apart`: a second change, untestable),
    a step apart from both references judged by its change from good against the threshold
    (`threshold`: a regression in steps, measure/decide.py)."""

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
    THRESHOLD = "threshold"


class PairVerdict(StrEnum):
    """What a pair measurement (B against A on fresh interleaved boots, orchestrator/measure/
    pairs.py) answered. A culprit against its parent, a verification, good + a set against good:
    B is significantly worse (`confirmed`), a change as large as the one asked about is ruled out
    (`not_seen`), neither (`cannot_tell`). A revert of a commit on a tip against the tip:
    `restores` / `not_restored` / `no_apply` (the revert does not apply); bad against bad - a set:
    `set_restores` / `set_not_restored`. The values are the stored strings."""

    CONFIRMED = "confirmed"
    NOT_SEEN = "not seen"
    CANNOT_TELL = "cannot tell"
    RESTORES = "revert restores the metric"
    NOT_RESTORED = "revert does not restore the metric"
    NO_APPLY = "revert does not apply"
    SET_RESTORES = "restores"
    SET_NOT_RESTORED = "does not restore"


class Marker(StrEnum):
    """The verdict field of a decision that is no verdict: the campaign moved to another host
    (`moved`), a pair measurement started (`measuring`, with its first boot in `since`)."""

    MOVED = "moved"
    MEASURING = "measuring"


Said = Verdict | PairVerdict | Marker
_WORDS: dict[str, Said] = {m.value: m for e in (Verdict, PairVerdict, Marker) for m in e}


def said(word: str) -> Said:
    """A stored verdict word as its enum member (the values of Verdict, PairVerdict and Marker do
    not overlap)."""
    if isinstance(word, (Verdict, PairVerdict, Marker)):
        return word
    try:
        return _WORDS[word]
    except KeyError:
        raise ValueError(f"unknown verdict {word!r}; valid: {', '.join(_WORDS)}") from None


class Refusal(StrEnum):
    """Why the endpoints' check is not clear (orchestrator/measure/endpoints.py): good is already
    past the threshold, bad is not worse at all, bad is worse but short of the threshold, the two
    do not differ significantly, the noise needs more boots per step than allowed. Stored as a
    refused campaign's cause."""

    GOOD_NOT_GOOD = "good_not_good"
    BAD_NOT_BAD = "bad_not_bad"
    SHORT_OF_THRESHOLD = "short_of_threshold"
    NOT_SIGNIFICANT = "not_significant"
    TOO_NOISY = "too_noisy"


@dataclass(frozen=True)
class Decided:
    """One stored decision. `verdict` is a Verdict for endpoints, steps, rechecks and candidates,
    a PairVerdict for confirmations and reverts, a Marker for a host move and a pair measurement
    under way (a word read from the store is taken as its member)."""

    commit: str
    role: Role
    verdict: Said
    reason: str
    confidence: float
    samples: int
    basis: Basis = Basis.MEASURED
    inherited_from: str = ""
    since: int = -1

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", said(self.verdict))

    @property
    def inherited(self) -> bool:
        return self.basis is Basis.INHERITED


def moved(host: str, reason: str, key: str, what: str) -> Decided:
    """The one record of a campaign moving off a failed lab host (role `host`, kind `moved`):
    which host, why, that its boots are kept but never compared with another host's, and what
    goes on (`what`); `key`: what it was measuring, "" outside a measurement."""
    return Decided(key, Role.HOST, Marker.MOVED, f"host {host} failed: {reason}; its boots are kept, not compared; "
                   f"{what}", 0.0, 0, Basis.MOVED)


class Found(StrEnum):
    """What a set bisection found (orchestrator/setbisect/search.py): ONE: a single unit moves
    the metric; TOGETHER: several are needed, none alone does."""

    ONE = "one"
    TOGETHER = "together"
