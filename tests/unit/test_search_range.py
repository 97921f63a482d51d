"""The commit search's evidence (orchestrator/bisect/search.py `Search.judged`) on a range
inside the campaign's: the search for another step of a regression."""

from __future__ import annotations

from orchestrator.bisect.posterior import NOISELESS
from orchestrator.bisect.search import Search
from orchestrator.campaign.file import parse_campaign
from orchestrator.decisions import Basis, Decided, Role, Verdict
from orchestrator.measure.judge import Judge
from orchestrator.measure.judges import Judges
from tests.fakes import FakeBuilder, FakeMeasurer, FakeVcs, MemoryStore


def test_a_search_inside_the_campaigns_range_weighs_only_the_commits_of_its_own_range():
    shas = [f"{i:040x}" for i in range(10)]
    c = parse_campaign({"name": "range", "repository": "/nonexistent", "good": shas[0], "bad": shas[9],
                        "workload": "sim", "metric": {"name": "iops", "direction": "higher", "threshold": "-10%"}})
    store = MemoryStore()
    cid = store.new_campaign("range", {})
    judge = Judge(cid, store, FakeBuilder(), FakeMeasurer(), "iops", 3)
    for commit, verdict, basis in [(shas[1], Verdict.SKIP, Basis.BUILD_FAILED), (shas[2], Verdict.BAD, Basis.BOOT_FAILED),
                                   (shas[5], Verdict.BAD, Basis.BOOT_FAILED), (shas[6], Verdict.SKIP, Basis.BUILD_FAILED)]:
        store.add_decision(cid, Decided(commit, Role.STEP, verdict, "fault", 1.0, 0, basis))
    search = Search(c, store, cid, FakeVcs(shas), shas[3], shas[8], Judges.of(judge), 0.01, lambda *a, **k: None)
    assert search.judged() == ({shas[5]: NOISELESS}, {shas[6]})
    whole = Search(c, store, cid, FakeVcs(shas), shas[0], shas[9], Judges.of(judge), 0.01, lambda *a, **k: None)
    assert whole.judged() == ({shas[2]: NOISELESS, shas[5]: NOISELESS}, {shas[1], shas[6]})
