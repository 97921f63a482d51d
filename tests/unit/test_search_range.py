"""The commit search's evidence (orchestrator/bisect/search.py `Search.judged`): on a range
inside the campaign's (the search for another step of a regression), through a chain of
inherited verdicts, and when such a search gives up."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.bisect.posterior import NOISELESS
from orchestrator.bisect.search import GiveUp, Search
from orchestrator.campaign.file import Campaign, parse_campaign
from orchestrator.decisions import Basis, Decided, Role, Verdict
from orchestrator.measure.judge import Judge
from orchestrator.measure.judges import Judges
from tests.fakes import FakeBuilder, FakeMeasurer, FakeVcs, MemoryStore


@dataclass
class Setup:
    shas: list[str]
    campaign: Campaign
    store: MemoryStore
    cid: int
    judge: Judge

    def search(self, good: int, bad: int, give_up: GiveUp | None = None) -> Search:
        return Search(self.campaign, self.store, self.cid, FakeVcs(self.shas), self.shas[good], self.shas[bad],
                      Judges.of(self.judge), 0.01, lambda *a, **k: None, give_up=give_up)


def setup(n: int, measurer: FakeMeasurer | None = None) -> Setup:
    """n commits, good the first and bad the last, a judge over an in-memory store."""
    shas = [f"{i:040x}" for i in range(n)]
    c = parse_campaign({"name": "range", "repository": "/nonexistent", "good": shas[0], "bad": shas[-1],
                        "workload": "sim", "metric": {"name": "iops", "direction": "higher", "threshold": "-10%"}})
    store = MemoryStore()
    cid = store.new_campaign("range", {})
    return Setup(shas, c, store, cid, Judge(cid, store, FakeBuilder(), measurer or FakeMeasurer(), "iops", 3))


def test_a_search_inside_the_campaigns_range_weighs_only_the_commits_of_its_own_range():
    t = setup(10)
    shas, store, cid = t.shas, t.store, t.cid
    for commit, verdict, basis in [(shas[1], Verdict.SKIP, Basis.BUILD_FAILED), (shas[2], Verdict.BAD, Basis.BOOT_FAILED),
                                   (shas[5], Verdict.BAD, Basis.BOOT_FAILED), (shas[6], Verdict.SKIP, Basis.BUILD_FAILED)]:
        store.add_decision(cid, Decided(commit, Role.STEP, verdict, "fault", 1.0, 0, basis))
    assert t.search(3, 8).judged() == ({shas[5]: NOISELESS}, {shas[6]})
    assert t.search(0, 9).judged() == ({shas[2]: NOISELESS, shas[5]: NOISELESS}, {shas[1], shas[6]})


def test_a_verdict_inherited_from_an_inherited_one_reads_and_revisits_the_commit_measured():
    # one kernel image measured at once on two slots (shas[4] and shas[5]); a revisit of shas[5]
    # then inherited shas[4]'s verdict, and shas[6] had inherited shas[5]'s before
    t = setup(10, FakeMeasurer(lambda x: 85.0 if x == f"{9:040x}" else 100.0, between=0.03))
    shas, store, cid = t.shas, t.store, t.cid
    for commit in (shas[0], shas[9], shas[0], shas[9], shas[4], shas[4], shas[4], shas[5]):
        t.judge.boot_once(commit)
    store.add_decision(cid, Decided(shas[4], Role.STEP, Verdict.GOOD, "measured", 0.99, 9, Basis.MEASURED))
    store.add_decision(cid, Decided(shas[6], Role.STEP, Verdict.GOOD, "same image", 0.9, 0, Basis.INHERITED, shas[5]))
    store.add_decision(cid, Decided(shas[5], Role.STEP, Verdict.GOOD, "same image", 0.99, 0, Basis.INHERITED, shas[4]))
    search = t.search(0, 9)
    llr, _ = search.judged()
    assert llr[shas[6]] == llr[shas[5]] == llr[shas[4]] != search.llr(shas[5], {})
    last = {d.commit: d for d in store.decisions(cid)}
    assert search.measured_as(shas[6], last) == search.measured_as(shas[5], last) == shas[4]


def test_a_search_given_up_after_visits_in_a_row_its_ends_cannot_place_counts_only_its_own_visits():
    t = setup(12)
    shas, store, cid = t.shas, t.store, t.cid

    def visit(i: int, basis: Basis) -> None:
        store.add_decision(cid, Decided(shas[i], Role.STEP, Verdict.SKIP if basis in (Basis.AMBIGUOUS, Basis.APART)
                                        else Verdict.GOOD, "visit", 0.0, 24, basis))

    for i in (6, 7):  # the campaign's own search, before this one began
        visit(i, Basis.AMBIGUOUS)
    search = t.search(3, 11, GiveUp(3, len(store.decisions(cid))))
    visit(8, Basis.APART)
    visit(1, Basis.AMBIGUOUS)  # outside its range
    visit(9, Basis.AMBIGUOUS)
    assert not search.unplaced()  # two of its own so far; the earlier ones do not count
    visit(5, Basis.MEASURED)
    visit(10, Basis.AMBIGUOUS)
    visit(4, Basis.AMBIGUOUS)
    assert not search.unplaced()  # a commit it placed breaks the run
    visit(8, Basis.APART)
    assert search.unplaced()
    assert not t.search(3, 11).unplaced()  # a search without give_up (the campaign's own) never gives up so
