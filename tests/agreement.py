"""Whether the views of one finished bisection agree: `vmbisect report ID`, the dashboard's
campaign page, `vmbisect status ID` and the mail list the same rows (#, role, commit, verdict,
boots, runs, median); the endpoint rows show the endpoint check's runs and the revert row the
reverted kernel's boots and median. Used on a store the real engine filled with fakes
(tests/integration/test_dashboard_report_agree.py) and on the real demo's
(tests/e2e/test_demo_bisection.py)."""

from __future__ import annotations

import contextlib
import io
import re
import statistics
from html import unescape
from typing import Any

import pytest
from starlette.testclient import TestClient

from orchestrator.cli import main
from orchestrator.commands.notify import ended_of
from orchestrator.commands.serve import catalogue
from orchestrator.commands.status import one
from orchestrator.decisions import Role
from orchestrator.kinds.table import metric_of, open_campaign
from orchestrator.notify.message import attachments, body
from orchestrator.results import BisectResult
from orchestrator.store import Store
from orchestrator.web.app import create_app

Row = tuple[str, ...]


def client(url: str) -> TestClient:
    return TestClient(create_app(url, catalogue(), None), base_url="http://127.0.0.1:8765",
                      raise_server_exceptions=False)


def page_rows(html: str) -> list[Row]:
    """(#, role, commit, verdict, boots, runs, median) of each row of the page's decisions."""
    body_ = html.split('<table class="decisions">', 1)[1].split("</tbody>", 1)[0].split("<tbody>", 1)[1]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body_, re.S):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows.append((cells[0], cells[1], cells[2], cells[4], cells[6], cells[7], cells[8]))
    return rows


def report_rows(md: str) -> list[Row]:
    """The same columns of the Markdown report's steps table."""
    table = md.split("## Steps", 1)[1].split("## git bisect log", 1)[0]
    rows = []
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows.append((cells[0], cells[1], cells[2], cells[4], cells[6], cells[7], cells[8]))
    return rows


def status_rows(shown: dict[str, Any]) -> list[Row]:
    """(#, role, verdict, boots, runs, median) of each decision `vmbisect status ID` shows."""
    return [(str(d["n"]), d["role"], d["verdict"], str(d["boots"]), str(d["runs"]), d["median"] or "-")
            for d in shown["decisions"]]


def report_md(url: str, cid: int) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", str(cid), "--store", url, "--format", "md"]) == 0
    return out.getvalue()


def assert_views_agree(url: str, cid: int) -> tuple[list[Row], str, str]:
    """The rows every view shows of campaign `cid` (asserted equal), the Markdown report and
    the campaign page's HTML."""
    store = Store(url)
    md = report_md(url, cid)
    html = client(url).get(f"/campaigns/{cid}").text
    rows = report_rows(md)
    assert page_rows(html) == rows and len(rows) >= 5, "the campaign page lists the report's rows"
    assert status_rows(one(store, cid)) == [(r[0], r[1], r[3], r[4], r[5], r[6]) for r in rows], (
        "`vmbisect status ID` lists the report's rows")
    mail = ended_of(open_campaign(store, cid))
    whole = next((text for name, text in attachments(mail) if name == "report.md"), body(mail))
    assert report_rows(whole) == rows, "the mail lists the report's rows"

    # each row shows the boots that decided it: the endpoints their check's, the revert the reverted kernel's
    decisions = store.decisions(cid)
    endpoint_runs = {d.role.value: d.samples for d in decisions if d.role in (Role.GOOD, Role.BAD)}
    for r in rows:
        if r[1] in endpoint_runs:
            assert int(r[5]) == endpoint_runs[r[1]], f"the {r[1]} row shows the endpoint check's runs"
    revert = BisectResult.from_dict(store.campaign(cid).result).revert
    if revert is not None:
        metric = metric_of(store.campaign(cid))
        reverted = list(store.boot_samples(cid, metric).get(revert.commit, []))
        row = next(r for r in rows if r[1] == "revert")
        assert reverted and row[4] == str(len(reverted)), "the revert row counts the reverted kernel's boots"
        means = sorted(sum(b.runs) / len(b.runs) for b in reverted)
        assert float(row[6].replace(",", "")) == pytest.approx(statistics.median(means), rel=1e-3), (
            "the revert row shows the reverted kernel's median, not the culprit's")
    return rows, md, html
