"""Typed results per campaign kind (orchestrator/results.py): round trips, and results an older
vmbisect stored (outcome or campaign kind under `kind`) read into the same types."""

from __future__ import annotations

from orchestrator.results import BisectOutcome, BisectResult, CompareResult, Stopped, VerifyResult, read

OLD_BISECTION = {"notes": [], "inherited": 1, "host": "local", "boots": 42, "culprit": "c" * 40, "parent": "p" * 40,
                 "confirmation": {"verdict": "confirmed", "text": "culprit against parent -40.3%"},
                 "revert": {"verdict": "revert restores the metric", "text": "revert restores the metric: ..."},
                 "kind": "found", "confidence": 0.9995, "doubtful": [], "confidence_text": "confidence >99.9%"}
OLD_VERIFY = {"kind": "verify", "commit": "c" * 40, "parent": "p" * 40, "answer": "confirmed",
              "verdict": ["confirmed: commit against parent -40.9%"], "boots_needed": 4}
OLD_COMPARE = {"kind": "compare", "verdict": ["bad is 45% worse than good in read_iops"]}


def test_a_bisection_stored_before_typed_results_reads_its_outcome_from_kind():
    r = read("bisect", "done", OLD_BISECTION)
    assert isinstance(r, BisectResult) and r.outcome is BisectOutcome.FOUND and r.culprit == "c" * 40
    assert r.revert is not None and r.revert["verdict"] == "revert restores the metric" and r.boots == 42
    assert r.line() == "cccccccccccc (confidence >99.9%)"


def test_a_bisection_result_round_trips_with_outcome_and_no_kind_key():
    r = BisectResult(BisectOutcome.INCONCLUSIVE, candidates=("a" * 40, "b" * 40), notes=("why",))
    d = r.to_dict()
    assert d["outcome"] == "inconclusive" and "kind" not in d and BisectResult.from_dict(d) == r
    assert r.line() == "inconclusive: aaaaaaaaaaaa bbbbbbbbbbbb"


def test_verify_and_compare_results_stored_before_typed_results_read_their_lines():
    v = read("verify", "done", OLD_VERIFY)
    assert isinstance(v, VerifyResult) and v.answer == "confirmed" and v.lines == tuple(OLD_VERIFY["verdict"])
    assert VerifyResult.from_dict(v.to_dict()) == v and "kind" not in v.to_dict()
    c = read("compare", "done", OLD_COMPARE)
    assert isinstance(c, CompareResult) and c.line() == "bad is 45% worse than good in read_iops"


def test_a_refused_failed_or_paused_campaign_has_its_reason_and_a_running_one_nothing():
    for state in ("refused", "failed", "paused"):
        assert read("bisect", state, {"reason": "bad is not bad"}) == Stopped("bad is not bad")
    assert read("bisect", "running", {}) is None and read("compare", "running", None) is None
