"""The answer's one confidence, pure: the posterior's mass of the culprit updated by the
evidence of its confirmation and revert (`answer_confidence`), and the one line every output
gives of it (`confidence_words`)."""

from __future__ import annotations

import math

from orchestrator.bisect.posterior import llr_of
from orchestrator.results import PairResult

# A confidence below this is called low in every output.
HIGH_CONFIDENCE = 0.95


def confidence_words(confidence: float, doubtful: list[str]) -> str:
    """One line for status, the live view and the report."""
    shown = ">99.9%" if confidence > 0.999 else f"{confidence:.1%}"
    if confidence >= HIGH_CONFIDENCE:
        return f"confidence {shown}"
    where = f"; doubtful steps: {', '.join(c[:12] for c in doubtful)}" if doubtful else ""
    return f"LOW confidence {shown}: the answer may be wrong{where}"


def answer_confidence(mass: float, confirmation: PairResult | None, revert: PairResult | None) -> float:
    """The posterior's mass of the culprit is the prior; the culprit-against-parent evidence and
    the revert's (bad with it reverted back at good, against no change), fresh boots of their
    own, update it. A revert that does not restore the tip lowers the confidence even when a
    later change built on the culprit is the reason: the answer is then not confirmed, and says
    so."""
    odds = llr_of(mass) + _evidence(confirmation) + _evidence(revert)
    return 1 / (1 + math.exp(-max(-700.0, min(700.0, odds))))


def _evidence(pair: PairResult | None) -> float:
    """A pair's log Bayes factor; nothing from a pair not measured."""
    return pair.evidence if pair is not None and pair.evidence is not None else 0.0

