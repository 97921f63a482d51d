"""The boots a campaign's evidence left out, and why, read once from the store by the judge's
own rule (report.excluded over stats.stray_boots) and shown by every output: the report (and so
the mail, within 78 columns), `vmbisect status ID` and the dashboard's campaign page. The boots
are stored by the real judge on a real SQLite store with the fake guests: one overlapped by
other work on its CPUs, one cut short by a killed controller."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from orchestrator.commands.serve import catalogue
from orchestrator.commands.status import one, one_text
from orchestrator.decisions import Decided, Role
from orchestrator.kinds.table import metric_of
from orchestrator.kinds.table import report as report_of
from orchestrator.measure.judge import Judge
from orchestrator.measure.leftout import Excluded, LeftOut, sentence
from orchestrator.notify.message import WIDTH, Ended, body
from orchestrator.report.bisection import excluded
from orchestrator.stats import Boot, Stray, Suspicion
from orchestrator.store import Store
from orchestrator.web.app import create_app
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.dashboard import history, stored_campaign
from tests.integration.test_judge import OneOverlappedBoot

LINE = "1 boot left out: 1 overlapped by other work on its CPUs (boot 3, 0.33 of the CPUs taken)"
CUT = "1 boot cut short (not counted: boot 10)"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, str, str]:
    """A bisection's row whose two references got 4 whole boots each and one more for the bad
    one's 3rd boot, which other work overlapped; then a boot of the good one cut after its
    first run by a killed controller; paused. Yields the bad commit."""
    tmp = tmp_path_factory.mktemp("leftout")
    mp = pytest.MonkeyPatch()
    mp.setenv("VMBISECT_DATA_DIR", str(tmp / "data"))
    repo, _culprit = history(tmp / "repo")
    url = f"sqlite:///{tmp / 'v.db'}"
    store = Store(url)
    cid = stored_campaign(store, repo, "left out")
    metric = metric_of(store.campaign(cid))
    assert metric is not None
    good, bad = repo.names["c0"], repo.names["c1"]
    values = {good: 100.0, bad: 80.0}
    Judge(cid, store, FakeBuilder(), OneOverlappedBoot(3, value_of=values.__getitem__, between=0.02, metric=metric),
          metric, 2).interleave([good, bad], 4)
    with pytest.raises(KeyboardInterrupt):
        Judge(cid, store, FakeBuilder(), FakeMeasurer(values.__getitem__, crash_after=1, metric=metric),
              metric, 2).interleave([good], 6)
    store.set_state(cid, "paused")
    yield url, cid, metric, bad
    mp.undo()


def test_the_boots_left_out_are_the_judges_with_their_ids_reasons_and_the_boot_cut_short(stored):
    url, cid, metric, bad = stored
    store = Store(url)
    assert [len([r for r in store.runs(cid) if r.boot_id == b.id]) for b in store.boots(cid)] == [2] * 9 + [1]
    e = excluded(store, cid, metric)
    assert e == Excluded((LeftOut(3, bad, Stray.OVERLAPPED, 0.3333, (Suspicion.OTHER_WORK,)),), (10,))
    assert sentence(e) == f"{LINE}; {CUT}"


def test_a_boot_in_flight_is_cut_short_only_once_its_campaign_stopped(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'f.db'}")
    cid = store.new_campaign("in flight", {})
    store.set_state(cid, "running")
    for boot, runs in ((store.start_boot(cid, "a" * 40), 2), (store.start_boot(cid, "a" * 40), 1)):
        for _ in range(runs):
            store.add_run(cid, boot, "a" * 40, {"iops": 100.0}, {})
    store.end_boot(1, "ok", 1.0, host="h", facts={"whole": True})
    store.end_boot(2, "ok", 1.0, host="h", facts={})  # its guest up (judge.session), its end not yet stored
    assert excluded(store, cid, "iops") == Excluded(), "the second boot is still running"
    store.set_state(cid, "paused")
    assert excluded(store, cid, "iops") == Excluded((), (2,))


def test_a_stray_after_a_slow_start_says_so_and_a_quiet_campaign_says_nothing():
    def boots(first: float, to_agent: float) -> list[Boot]:
        return [Boot(i, (first if i == 0 else 100.0 + i,), to_agent_s=to_agent if i == 0 else 3.0, id=20 + i)
                for i in range(5)]

    from orchestrator.measure.leftout import left_out

    strays = left_out([{"a": boots(50.0, 9.0)}])
    assert sentence(Excluded(strays)) == ("1 boot left out: 1 far from its commit's other boots after a slow start "
                                          "(boot 20)")
    assert left_out([{"a": boots(50.0, 3.0)}]) == () and sentence(Excluded()) == ""


def test_the_report_and_its_mail_say_how_many_boots_were_left_out_and_why(stored):
    url, cid, _metric, _good = stored
    store = Store(url)
    md = report_of(store, cid, "md")
    assert f"Evidence: {LINE}; {CUT}" in md
    assert f"<strong>Evidence:</strong> {LINE}; {CUT}" in report_of(store, cid, "html")
    shown = json.loads(report_of(store, cid, "json"))
    assert shown["excluded"]["cut_short"] == [10]
    assert sorted(map(len, shown["boot_means"].values())) == [4, 4], "the figures are on the evidence alone"
    text = body(Ended(cid, "left out", "bisect", "paused", None, report=md))
    assert max(map(len, text.splitlines())) <= WIDTH
    assert " ".join(f"Evidence: {LINE}; {CUT}".split()) in " ".join(text.split())


def test_status_id_shows_the_boots_left_out_as_text_and_as_data(stored):
    url, cid, _metric, bad = stored
    shown = one(Store(url), cid)
    assert f"evidence: {LINE}; {CUT}" in one_text(shown)
    assert shown["excluded"] == {"left_out": [{"boot": 3, "commit": bad, "why": "overlapped", "taken": 0.3333,
                                               "suspicions": ["other_work"]}], "cut_short": [10]}
    assert shown["boots"] == 9, "the boot cut short is no boot"


def test_the_dashboards_campaign_page_shows_the_boots_left_out(stored: tuple[str, int, str, str], tmp_path: Path):
    url, cid, _metric, _good = stored
    client = TestClient(create_app(url, catalogue(), None), base_url="http://127.0.0.1:8765")
    page = client.get(f"/campaigns/{cid}").text
    assert f'<p class="left-out">Evidence: {LINE}; {CUT}</p>' in page


def test_status_id_and_the_report_give_a_decision_the_same_boots_the_evidence_alone(tmp_path: Path):
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    repo = history(tmp_path / "repo")[0]
    repo_cid = stored_campaign(store, repo, "decided")
    metric = metric_of(store.campaign(repo_cid))
    assert metric is not None
    good = repo.names["c0"]
    Judge(repo_cid, store, FakeBuilder(), OneOverlappedBoot(2, value_of=lambda c: 100.0, between=0.02, metric=metric),
          metric, 2).interleave([good], 4)
    store.add_decision(repo_cid, Decided(good, Role.GOOD, "good", "measured", 1.0, 8))
    store.set_state(repo_cid, "paused")
    [decision] = one(store, repo_cid)["decisions"]
    [step] = json.loads(report_of(store, repo_cid, "json"))["steps"]
    assert decision["boots"] == step["commit"]["boots"] == 4, "the overlapped 2nd boot is in neither"
