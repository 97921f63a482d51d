"""A bisection on a generated kernel-shaped history of thousands of commits (bench/history's
maker on real git, the fakes of tests/fakes.py for builds and guests): what a person reads of it
while it runs and once it ended (the live view, `vmbisect status ID`, the dashboard's page, the
report and the mail) names the range's size and the steps left, and lists only the decisions,
never a row per commit of the range."""

from __future__ import annotations

import io
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.testclient import TestClient

from bench.history.shape import kernel_shape
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.bisect.workdir import campaign_workdir
from orchestrator.campaign.file import parse_campaign
from orchestrator.commands.notify import ended_of
from orchestrator.commands.serve import catalogue
from orchestrator.commands.status import one, one_text
from orchestrator.kinds.run import ended, report_files
from orchestrator.kinds.specs import BisectSpec
from orchestrator.kinds.table import open_campaign, record
from orchestrator.notify.message import body
from orchestrator.ports import Event
from orchestrator.progress import LiveView
from orchestrator.store import Store
from orchestrator.web.app import create_app
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import Repo, kernel_shaped

COMMITS = 2000  # large enough that a row per commit would show; the same check ran at 10,000 (docs/measurements)
SEED = 5
MOST_ROWS = 150  # rows of a table or lines of a text: a few per decision, nowhere near a row per commit


@dataclass
class Seen:
    """What a person read while the campaign ran (after its third step) and once it ended."""

    status_running: str = ""
    page_running: str = ""
    live: str = ""
    status_done: str = ""
    page_done: str = ""
    report_md: str = ""
    report_html: str = ""
    mail: str = ""
    decisions: int = 0
    range_commits: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def dashboard(url: str) -> TestClient:
    return TestClient(create_app(url, catalogue(), None), base_url="http://127.0.0.1:8765")


def bad_set(repo: Repo, culprit: str) -> set[str]:
    return set(repo.git("rev-list", "--ancestry-path", f"{culprit}..HEAD").split()) | {culprit}


def run_large(tmp: Path, commits: int = COMMITS, seed: int = SEED) -> Seen:
    shape = kernel_shape(commits, seed)
    repo = kernel_shaped(tmp / "u", commits, seed)
    names = lambda xs: {repo.names[f"n{i}"] for i in xs}  # noqa: E731
    url = f"sqlite:///{tmp / 'v.db'}"
    store = Store(url)
    raw = {"name": "large", "repository": str(repo.path), "good": repo.names["release"],
           "bad": repo.names[f"n{commits - 1}"], "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1}},
           "metric": {"name": "read_iops", "threshold": "-10%"}, "guest": {"disks": {"count": 1}}, "runs_per_boot": 3}
    campaign = parse_campaign(raw)
    cid = record(store, "large", BisectSpec.of(raw, campaign))
    worse = bad_set(repo, repo.names[f"n{shape.culprit}"])
    measurer = FakeMeasurer(lambda c: 85.0 if c in worse else 100.0, 0.02, seed, between=0.03,
                            metric=campaign.metric.name)
    builder = FakeBuilder(broken=names(shape.build_broken), same_image=[names(g) for g in shape.same_image()])
    seen = Seen(range_commits=int(repo.git("rev-list", "--count", f"{raw['good']}..{raw['bad']}")))
    client = dashboard(url)
    out = io.StringIO()

    def watch(view: LiveView, e: Event) -> None:
        view(e)
        if e.phase == "decide" and e.step == 3 and not seen.status_running:
            seen.status_running = "\n".join(one_text(one(store, cid)))
            seen.page_running = client.get(f"/campaigns/{cid}").text

    with store.lock(cid), LiveView(seen.range_commits, Console(file=out, width=120)) as view:
        outcome = Engine(campaign, "higher", GitBisect(repo.path, campaign_workdir(store, cid)), builder, measurer,
                         store, lambda e: watch(view, e)).run(cid)
    ended(open_campaign(store, cid))
    seen.extra["culprit"] = (outcome.culprit, repo.names[f"n{shape.culprit}"])
    seen.live = out.getvalue()
    seen.status_done = "\n".join(one_text(one(store, cid)))
    seen.page_done = client.get(f"/campaigns/{cid}").text
    md, html = report_files(store.campaign(cid))
    seen.report_md, seen.report_html = md.read_text(), html.read_text()
    seen.mail = body(ended_of(open_campaign(store, cid)))
    seen.decisions = len(store.decisions(cid))
    seen.extra["log"] = (store.campaign(cid).bisect_log, repo.path)
    return seen


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Seen:
    tmp = tmp_path_factory.mktemp("large")
    mp = pytest.MonkeyPatch()
    mp.setenv("VMBISECT_DATA_DIR", str(tmp / "data"))
    mp.setenv("COLUMNS", "200")
    try:
        yield run_large(tmp)
    finally:
        mp.undo()


def test_the_campaign_on_the_large_history_names_the_planted_culprit(large):
    named, planted = large.extra["culprit"]
    assert named == planted


def test_while_it_runs_status_and_the_dashboard_name_the_range_size_and_the_steps_left(large):
    size = f"{large.range_commits:,} commits from good to bad"
    assert large.range_commits >= COMMITS
    assert re.search(rf"^range: {size}; \d steps? taken, ~\d+ left$", large.status_running, re.M), large.status_running
    assert re.search(rf'<dd id="range">{size}; \d steps? taken, ~\d+ left</dd>', large.page_running)
    assert re.search(r"~\d+ steps? left of [\d,]+ commits", large.page_running), "the estimate's basis"
    assert large.live.splitlines()[0] == f"range: {size}, ~{(large.range_commits - 1).bit_length()} steps"


def test_once_ended_status_the_dashboard_the_report_and_the_mail_name_the_range_size(large):
    size = f"Range: {large.range_commits:,} commits from good to bad; "
    assert re.search(rf"^{size.lower()}\d+ steps taken$", large.status_done, re.M)
    assert f"<dd id=\"range\">{size.removeprefix('Range: ')}" in large.page_done
    assert size in large.report_md and size in large.mail
    assert f"<strong>Range:</strong> {size.removeprefix('Range: ')}" in large.report_html


def test_no_view_lists_a_row_per_commit_of_the_range(large):
    assert large.decisions < MOST_ROWS // 2
    for name in ("status_running", "status_done", "report_md", "mail", "live"):
        text = getattr(large, name)
        assert len(text.splitlines()) < MOST_ROWS * 2, (name, len(text.splitlines()))
    for page in (large.page_running, large.page_done, large.report_html):
        assert page.count("<tr") < MOST_ROWS


def test_the_reports_git_bisect_log_replays_in_the_users_repository_to_the_culprit(large, tmp_path):
    log, repo = large.extra["log"]
    named, _planted = large.extra["culprit"]
    (tmp_path / "log").write_text(log)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo), str(tmp_path / "replay")], check=True)
    done = subprocess.run(["git", "-C", str(tmp_path / "replay"), "bisect", "replay", str(tmp_path / "log")],
                          capture_output=True, text=True, check=True)
    assert f"{named} is the first bad commit" in done.stdout, done.stdout
