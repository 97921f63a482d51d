"""The lines `vmbisect bisect` prints at the end of a found culprit: each pair's verdict, with its
text unless the text leads with the verdict itself; a culprit's share of the regression that
could not be settled, said with its interval there, in the report's head, `status ID` and the
mail."""

import dataclasses
import re

from orchestrator.backends.git_bisect import CommitInfo
from orchestrator.bisect.engine import Outcome
from orchestrator.commands.status import one, one_text
from orchestrator.decisions import PairVerdict
from orchestrator.kinds.bisect_kind import summary
from orchestrator.notify.message import Ended, body
from orchestrator.report.bisection import collect, render_markdown
from orchestrator.results import BisectOutcome, BisectResult, PairResult, RegressionStep, StepsEnd
from orchestrator.store import Store


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


C, P = "c" * 40, "p" * 40
# the campaign: the culprit's confirmation -18.6% of a -25.7% gap, its share not settled
UNSETTLED = BisectResult(BisectOutcome.FOUND, culprit=C, parent=P,
                         steps=(RegressionStep(C, P, 0.72, 0.17, 1.19, -0.186, True, False),), steps_end=StepsEnd.ALL)
LINE = ("cccccccccccc carries about 72% of the regression (95% CI 17%..119%), not settled: another commit may carry "
        "the rest; `steps: all` with a larger max_boots_per_commit would tell")


def test_an_unsettled_share_is_said_with_its_interval_in_the_summary_the_report_head_status_and_the_mail(tmp_path):
    said = summary(Outcome(BisectOutcome.FOUND, culprit=C, confidence=0.97, result=UNSETTLED), 3).splitlines()
    assert LINE in said

    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    cid = store.new_campaign("unsettled", {})
    store.set_state(cid, "done", UNSETTLED.to_dict())
    assert one(store, cid)["share"] == LINE and f"share: {LINE}" in one_text(one(store, cid))

    md = render_markdown(collect(store, cid, "read_iops", "higher", lambda sha: CommitInfo(sha, "A", "a@x", "d", "s")))
    head = md.split("## ", 1)[0]
    assert f"Share: {LINE}" in head

    mail = body(Ended(cid, "unsettled", "bisect", "done", UNSETTLED, "s", md))
    assert LINE in " ".join(mail.split("-" * 72, 1)[0].split()), "the mail's head says it before the report"


def test_a_settled_share_says_nothing_more_and_a_partial_one_its_own_line():
    whole = dataclasses.replace(UNSETTLED, steps=(RegressionStep(C, P, 0.97, 0.85, 1.09, -0.25, True, True),))
    assert whole.unsettled_share() == "" and whole.regression_steps() == ()
    part = dataclasses.replace(UNSETTLED, partial="cccccccccccc carries about 40% (95% CI 20%..60%) of the regression")
    assert part.unsettled_share() == "" and part.regression_steps() == (part.partial,)
    assert UNSETTLED.unsettled_share(min_share=0.9) == "", "settled against a campaign's own steps.min_share"


def test_an_answer_of_hundreds_of_skipped_commits_lists_twenty_and_counts_the_rest_in_summary_and_report(tmp_path):
    many = tuple(f"{i:03x}" + "a" * 37 for i in range(300))
    said = summary(Outcome(BisectOutcome.ONLY_SKIPPED, candidates=many), 3)
    assert said.splitlines()[0].endswith(f"{many[19][:12]} and 280 more (the JSON report and the git bisect log list "
                                         "every one)")
    assert many[20][:12] not in said

    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    cid = store.new_campaign("skipped", {})
    store.set_state(cid, "done", BisectResult(BisectOutcome.ONLY_SKIPPED, candidates=many).to_dict())
    report = collect(store, cid, "read_iops", "higher", lambda sha: CommitInfo(sha, "A", "a@x", "d", "s"))
    md = render_markdown(report)
    assert sum(re.match(r"    [0-9a-f]{3}a{9} s$", line) is not None for line in md.splitlines()) == 20 and "    and 280 more" in md
    assert len(report.candidates) == 300, "the JSON report keeps them all"
