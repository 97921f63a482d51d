"""Reports escape everything that comes from commits: a subject carrying a script stays text
in the HTML report, checked in headless Chromium (the DOM after scripts would have run), and
in the Markdown report stays inside its code block."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.report.bisection import collect, render_markdown
from orchestrator.report.bisection_html import render_html
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import Repo
from tests.integration.test_engine_cases import bisect, campaign, regression_at
from tests.screenshot import find_chromium

PAYLOAD = ("<script>document.title='PWNED';document.body.setAttribute('data-pwned','1')</script>"
           "<img src=x onerror=\"document.body.setAttribute('data-pwned','2')\"> & </pre><b>bold</b>")


def dump_dom(page: Path) -> str:
    browser = find_chromium()
    assert browser is not None
    with tempfile.TemporaryDirectory(prefix="vmbisect-chromium-") as profile:
        done = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                               "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=2000",
                               "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def report(tmp_path):
    repo = Repo(tmp_path / "u")
    for i in range(12):
        repo.commit(f"c{i}")
        if i == 7:  # the culprit's subject is the payload
            repo.git("commit", "-q", "--amend", "-m", PAYLOAD)
            repo.names["c7"] = repo.git("rev-parse", "HEAD")
    _, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c11"), FakeBuilder(),
                           FakeMeasurer(regression_at(repo, "c7")))
    r = collect(store, cid, "iops", "higher", GitBisect(repo.path, tmp_path / "work").info)
    assert r.culprit is not None and r.culprit.subject == PAYLOAD
    return r


@pytest.mark.skipif(find_chromium() is None, reason="no chromium binary on PATH (make setup installs chromium)")
def test_a_script_in_a_commit_subject_stays_text_in_the_html_report(report, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    dom = dump_dom(page)
    assert "data-pwned" not in dom.split("<body", 1)[1].split(">", 1)[0], "a script from the subject ran"
    assert "<title>PWNED" not in dom and "<b>bold</b>" not in dom
    assert "&lt;script&gt;document.title='PWNED'" in dom


def test_the_markdown_report_keeps_the_subject_inside_its_indented_block(report):
    text = render_markdown(report)
    line = next(x for x in text.splitlines() if PAYLOAD in x)
    assert line.startswith("        ")  # an indented code block: Markdown renderers show it as text
