"""The lines `vmbisect bisect` prints at the end of a found culprit: each pair's verdict, with its
text unless the text leads with the verdict itself."""

from orchestrator.bisect.engine import Outcome
from orchestrator.decisions import PairVerdict
from orchestrator.kinds.bisect_kind import summary
from orchestrator.results import BisectOutcome, BisectResult, PairResult


def _summary(confirmation: PairResult, revert: PairResult | None) -> list[str]:
    result = BisectResult(BisectOutcome.FOUND, culprit="c" * 40, confirmation=confirmation, revert=revert)
    return summary(Outcome(BisectOutcome.FOUND, culprit="c" * 40, confidence=0.97, result=result), 3).splitlines()


def test_a_measured_revert_prints_its_verdict_alone_and_the_confirmation_its_figures():
    lines = _summary(PairResult(PairVerdict.CONFIRMED, "culprit against parent -20.0%"),
                     PairResult(PairVerdict.NOT_RESTORED, f"{PairVerdict.NOT_RESTORED}: bad with c reverted"))
    assert "confirmation: confirmed: culprit against parent -20.0%" in lines
    assert "revert: revert does not restore the metric" in lines


def test_a_revert_that_does_not_apply_prints_its_verdict_alone_and_one_not_measured_says_why():
    no_apply = _summary(PairResult(PairVerdict.NOT_SEEN, "culprit against parent -1.0%"),
                        PairResult(PairVerdict.NO_APPLY, "revert does not apply: conflict in a.c"))
    assert "confirmation: not seen: culprit against parent -1.0%" in no_apply
    assert "revert: revert does not apply" in no_apply
    unmeasured = _summary(PairResult(PairVerdict.CANNOT_TELL, "too few boots to compare"),
                          PairResult(PairVerdict.CANNOT_TELL, "the revert r could not be measured: boot"))
    assert unmeasured[-3:-1] == ["confirmation: cannot tell: too few boots to compare",
                                 "revert: cannot tell: the revert r could not be measured: boot"]
