"""The dashboard's campaign page, `vmbisect report ID`, `vmbisect status ID` and the mail say the same of a campaign: over a
store the real engine filled (real git and store, fake builds and guests; commits that share an
image so that a verdict is inherited without a boot, a confirmation whose "measuring" rows come
before its verdict), every row of the page's decisions has the report's boots, runs and median.
A running campaign's page (and its overview row) shows the commit whose kernel is being built,
the time of its last boot, and the plot of the boots so far."""

from __future__ import annotations

import re
from typing import Any

import pytest

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.bisect.workdir import campaign_workdir
from orchestrator.decisions import Basis
from orchestrator.kinds.table import stored
from orchestrator.store import Store
from tests.agreement import assert_views_agree, client
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


def test_the_campaign_page_report_status_and_mail_give_the_same_boots_runs_and_median_for_every_row(lab):
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

    ours, _md, html = assert_views_agree(url, cid)
    inherited = [r for r, d in zip(ours, [d for d in store.decisions(cid) if d.basis is not Basis.MEASURING])
                 if d.inherited]
    assert inherited and all(r[4:] == ("0", "0", "-") for r in inherited), "no boots for a verdict taken without one"
    assert "measuring" not in {r[3] for r in ours}, "a confirmation's measuring row goes once it is decided"
    assert '<section class="plot">' in html and "<svg" in html


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
