"""The dashboard's campaign page, `vmbisect report ID`, `vmbisect status ID` and the mail say the same of a campaign: over a
store the real engine filled (real git and store, fake builds and guests; commits that share an
image so that a verdict is inherited without a boot, a confirmation whose "measuring" rows come
before its verdict), every row of the page's decisions has the report's boots, runs and median.
A running campaign's page (and its overview row) shows the commit whose kernel is being built,
the time of its last boot, and the plot of the boots so far."""

from __future__ import annotations

import re
import statistics
from html import unescape
from typing import Any

import pytest
from starlette.testclient import TestClient

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.bisect.workdir import campaign_workdir
from orchestrator.cli import main
from orchestrator.commands.notify import ended_of
from orchestrator.commands.serve import catalogue
from orchestrator.commands.status import one
from orchestrator.decisions import Basis, Role
from orchestrator.kinds.table import open_campaign, stored
from orchestrator.notify.message import attachments, body
from orchestrator.results import BisectResult
from orchestrator.store import Store
from orchestrator.web.app import create_app
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.dashboard import XSS_SUBJECT, _slow, history, stored_campaign


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("agree")
    mp = pytest.MonkeyPatch()
    mp.setenv("VMBISECT_DATA_DIR", str(tmp / "data"))
    repo, culprit = history(tmp / "repo")
    yield tmp, repo, culprit
    mp.undo()


def client(url: str) -> TestClient:
    return TestClient(create_app(url, catalogue(), None), base_url="http://127.0.0.1:8765",
                      raise_server_exceptions=False)


def page_rows(html: str) -> list[tuple[str, ...]]:
    """(#, role, commit, verdict, boots, runs, median) of each row of the page's decisions."""
    body = html.split('<table class="decisions">', 1)[1].split("</tbody>", 1)[0].split("<tbody>", 1)[1]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body, re.S):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows.append((cells[0], cells[1], cells[2], cells[4], cells[6], cells[7], cells[8]))
    return rows


def report_rows(md: str) -> list[tuple[str, ...]]:
    """The same columns of the Markdown report's steps table."""
    table = md.split("## Steps", 1)[1].split("## git bisect log", 1)[0]
    rows = []
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1], cells[2], cells[4], cells[6], cells[7], cells[8]))
    return rows


def status_rows(shown: dict[str, Any]) -> list[tuple[str, ...]]:
    """(#, role, verdict, boots, runs, median) of each decision `vmbisect status ID` shows."""
    return [(str(d["n"]), d["role"], d["verdict"], str(d["boots"]), str(d["runs"]), d["median"] or "-")
            for d in shown["decisions"]]


def test_the_campaign_page_and_the_report_give_the_same_boots_runs_and_median_for_every_row(lab, capsys):
    tmp, repo, _culprit = lab
    url = f"sqlite:///{tmp / 'done.db'}"
    store = Store(url)
    cid = stored_campaign(store, repo)
    campaign = stored(store.campaign(cid)).campaign  # type: ignore[union-attr]
    late = {repo.names[n] for n in ("c8", "c9", "c10", XSS_SUBJECT)}  # one image: a step among them inherits bad's
    measurer = FakeMeasurer(lambda c: 90.0 if _slow(campaign.repository, c) else 100.0, noise=0.01, seed=7,
                            metric=campaign.metric.name)
    with store.lock(cid):
        Engine(campaign, "higher", GitBisect(campaign.repository, campaign_workdir(store, cid)),
               FakeBuilder(same_image=late), measurer, store).run(cid)
    kinds = [d.basis for d in store.decisions(cid)]
    assert Basis.INHERITED in kinds and Basis.MEASURING in kinds, "the cases the two disagreed on are in the store"

    assert main(["report", str(cid), "--store", url, "--format", "md"]) == 0
    md = capsys.readouterr().out
    html = client(url).get(f"/campaigns/{cid}").text
    ours, theirs = page_rows(html), report_rows(md)
    assert ours == theirs and len(ours) >= 5
    assert status_rows(one(store, cid)) == [(r[0], r[1], r[3], r[4], r[5], r[6]) for r in theirs], (
        "`vmbisect status ID` lists the report's rows")
    inherited = [r for r, d in zip(ours, [d for d in store.decisions(cid) if d.basis is not Basis.MEASURING])
                 if d.inherited]
    assert inherited and all(r[4:] == ("0", "0", "-") for r in inherited), "no boots for a verdict taken without one"
    assert "measuring" not in {r[3] for r in ours}, "a confirmation's measuring row goes once it is decided"
    assert '<section class="plot">' in html and "<svg" in html

    # the mail carries the same rows (its text part, or the report.md it attaches when too wide)
    mail = ended_of(open_campaign(store, cid))
    whole = next((text for name, text in attachments(mail) if name == "report.md"), body(mail))
    assert report_rows(whole) == theirs, "the mail lists the report's rows"

    # each row shows the boots that decided it: the endpoints their check's, the revert the reverted kernel's
    decisions = store.decisions(cid)
    endpoint_runs = {d.role.value: d.samples for d in decisions if d.role in (Role.GOOD, Role.BAD)}
    for r in theirs:
        if r[1] in endpoint_runs:
            assert int(r[5]) == endpoint_runs[r[1]], f"the {r[1]} row shows the endpoint check's runs"
    revert = BisectResult.from_dict(store.campaign(cid).result).revert
    reverted = list(store.boot_samples(cid, campaign.metric.name).get(revert.commit if revert else "", []))
    row = next(r for r in theirs if r[1] == "revert")
    assert reverted and row[4] == str(len(reverted)), "the revert row counts the reverted kernel's boots"
    means = sorted(sum(b.runs) / len(b.runs) for b in reverted)
    assert float(row[6].replace(",", "")) == pytest.approx(statistics.median(means), rel=1e-3), (
        "the revert row shows the reverted kernel's median, not the culprit's")


def test_a_running_campaign_page_shows_the_build_under_way_its_last_boot_and_the_plot_so_far(lab):
    tmp, repo, _culprit = lab
    url = f"sqlite:///{tmp / 'running.db'}"
    store = Store(url)
    cid = stored_campaign(store, repo)
    good = repo.names["c0"]
    boot = store.start_boot(cid, good)
    store.end_boot(boot, "ok", 1.0, host="local")
    store.add_run(cid, boot, good, {"read_iops": 100.0}, {})
    store.add_build(cid, repo.names["c5"], "building")
    html = client(url).get(f"/fragment/campaigns/{cid}").text
    assert store.campaign(cid).state == "running"
    assert f'Building <code>{repo.names["c5"][:12]}</code> <span class="subject">c5</span>, since ' in html
    assert "Now measuring" not in html and re.search(r'id="last-boot">\d+ s ago<', html)
    assert '<section class="plot">' in html and "(the boots so far)" in html
    row = client(url).get("/fragment/overview").text.split(f'id="campaign-{cid}"', 1)[1].split("</tr>", 1)[0]
    assert f'building <code>{repo.names["c5"][:12]}</code> c5' in row and re.search(r'class="when">\d+ s ago<', row)

    store.add_build(cid, repo.names["c5"], "ok", sha256="x" * 64)
    boot = store.start_boot(cid, repo.names["c5"])
    html = client(url).get(f"/fragment/campaigns/{cid}").text
    assert "Building" not in html and f'Now measuring <code>{repo.names["c5"][:12]}</code>' in html
