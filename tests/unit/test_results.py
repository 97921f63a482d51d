"""Typed results per campaign kind (orchestrator/results.py): round trips, and results an older
vmbisect stored (outcome or campaign kind under `kind`) read into the same types: hand-written ones, and every
kind of result captured from that version (tests/data/results/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.decisions import PairVerdict
from orchestrator.kinds.table import read_result as read
from orchestrator.results import BisectOutcome, BisectResult, CompareResult, StopKind, Stopped, VerifyResult

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
    assert r.revert is not None and r.revert.verdict is PairVerdict.RESTORES and r.boots == 42
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


def test_a_refused_failed_or_paused_campaign_has_a_typed_stop_with_its_suggested_threshold_and_a_running_one_nothing():
    for state in ("refused", "failed", "paused"):
        stopped = read("bisect", state, {"reason": "bad is not bad"})
        assert stopped == Stopped(StopKind(state), "bad is not bad") and stopped.line() == f"{state}: bad is not bad"
    refused = Stopped(StopKind.REFUSED, "bad is not bad: ...", "bad_not_bad")
    assert read("bisect", "refused", refused.to_dict()) == refused and "kind" not in refused.to_dict()
    short = Stopped(StopKind.REFUSED, "bad is not bad: ...", "short_of_threshold", -0.063)
    assert read("bisect", "refused", short.to_dict()) == short and short.to_dict()["suggested_threshold"] == -0.063
    assert "suggested_threshold" not in refused.to_dict()
    assert read("bisect", "running", {}) is None and read("compare", "running", None) is None
    assert read("bisect", "running", {"reason": "libvirt gone"}) is None, "a resumed pause is no longer why"


CAPTURED = json.loads((Path(__file__).parent.parent / "data" / "results" / "stored-896f3d9.json").read_text())


@pytest.mark.parametrize("stored", CAPTURED["results"], ids=lambda s: f"{s['kind']}-{s['state']}-"
                         f"{s['result'].get('kind', '')}")
def test_every_result_the_version_before_typed_results_stored_reads_into_its_type(stored):
    kind, state, data = stored["kind"], stored["state"], stored["result"]
    result = read(kind, state, data)
    want = {"bisect": BisectResult, "verify": VerifyResult, "compare": CompareResult}[kind]
    assert isinstance(result, want if state == "done" else Stopped) and result.line()
    if isinstance(result, BisectResult):
        assert result.outcome == data["kind"] and result.culprit == data.get("culprit", "")
        assert result.candidates == tuple(data.get("candidates", ())) and result.boots == data["boots"]
        # the pairs write back the very keys the older store holds
        assert (result.revert.to_dict() if result.revert else None) == (data.get("revert") or None)
        assert (result.confirmation.to_dict() if result.confirmation else {}) == data.get("confirmation", {})
    elif isinstance(result, (VerifyResult, CompareResult)):
        assert result.lines == tuple(data["verdict"]) and "kind" not in result.to_dict()
    else:
        assert result.stop == state and result.reason == data["reason"]
    assert read(kind, state, result.to_dict()) == result, "the new layout reads back the same"


def test_the_captured_results_cover_every_kind_and_every_way_a_campaign_ends():
    seen = {(s["kind"], s["state"], s["result"].get("kind")) for s in CAPTURED["results"]}
    assert {("bisect", "done", o) for o in ("found", "only_skipped", "inconclusive")} <= seen
    assert {("bisect", s, None) for s in ("refused", "failed", "paused")} <= seen
    assert {("verify", "done", "verify"), ("compare", "done", "compare")} <= seen


def test_a_set_bisection_reads_its_revert_units_as_a_list_also_from_a_store_that_joined_them():
    from orchestrator.decisions import Found
    from orchestrator.results import SetBisectResult

    joined = {"found": "together", "units": ["a", "b"], "revert": {"verdict": "restores", "units": "a, b, c"}}
    old = read("settings", "done", joined)
    assert isinstance(old, SetBisectResult) and old.found is Found.TOGETHER and old.how == "together"
    assert old.revert is not None and old.revert.units == ("a", "b", "c")
    assert SetBisectResult.from_dict(old.to_dict()) == old and old.to_dict()["found"] == "together"
    assert read("config", "done", {"found": "one", "units": ["a"], "revert": {}}).revert is None


def test_a_pair_writes_only_what_it_measured_and_reads_back_the_same():
    from orchestrator.results import PairResult

    measured = PairResult(PairVerdict.CONFIRMED, "culprit against parent -20%", change=-0.2, low=-0.3, high=-0.1,
                          p=0.001, evidence=4.2, boots=5)
    assert measured.to_dict() == {"verdict": "confirmed", "text": "culprit against parent -20%", "change": -0.2,
                                  "low": -0.3, "high": -0.1, "p": 0.001, "evidence": 4.2, "boots": 5}
    assert PairResult.from_dict(measured.to_dict()) == measured
    unmeasured = PairResult(PairVerdict.NO_APPLY, "revert does not apply: conflict")
    assert unmeasured.to_dict() == {"verdict": "revert does not apply", "text": "revert does not apply: conflict"}
    assert PairResult.read({}) is None and PairResult.read(None) is None


def test_bad_with_every_step_reverted_reads_its_interval_as_the_positions_and_writes_it_where_it_always_was():
    from orchestrator.results import PairResult

    old = {"verdict": "revert restores the metric", "commit": "r" * 40, "change": 0.3, "p": 0.01, "position": 0.05,
           "low": -0.1, "high": 0.2, "text": "revert restores the metric: bad with all 2 steps reverted"}
    pair = PairResult.from_dict(old)
    assert (pair.position, pair.position_low, pair.position_high, pair.low, pair.high) == (0.05, -0.1, 0.2, None, None)
    assert PairResult.from_dict(pair.to_dict()) == pair
    assert pair.to_dict() == old, "the stored result and the JSON report keep their keys"
