"""The report of a bisection (fake builds and guests, real git and store) carries everything
that changed on the confirmation's boots: found from the store with the boots the confirmation
itself counted, in the Markdown (the mail's body) and the HTML report."""

from __future__ import annotations

import re

from orchestrator.decisions import Role
from orchestrator.report.bisection import render_json, render_markdown
from orchestrator.report.bisection_html import render_html
from tests.integration.test_engine_cases import report_of


def test_the_report_shows_what_changed_on_the_boots_the_confirmation_counted(tmp_path):
    repo, report = report_of(tmp_path)
    ch = report.changed
    assert ch is not None and (ch.parent, ch.culprit) == (repo.names["c8"], repo.names["c9"])
    confirm = next(s for s in report.steps if s.role == Role.CONFIRM)
    n_a, n_b = map(int, re.search(r"(\d+)\+(\d+) boots", confirm.reason).groups())
    assert (ch.parent_boots, ch.culprit_boots) == (n_a, n_b)
    iops = ch.rows[0]
    assert iops.metric == "iops" and iops.headline and iops.significant and iops.change_pct < -10
    md = render_markdown(report)
    section = md[md.index("## What changed with the culprit"):md.index("## Steps")]
    assert all(len(line) <= 78 for line in section.splitlines()), section
    assert re.search(r"-1\d\.\d% +[\d.]+ ±  \d%  iops \(worse\)$", section, re.M), section
    assert "What changed with the culprit</h2>" in render_html(report)
    assert '"changed": {' in render_json(report)


def test_the_mail_carries_the_significant_rows_within_78_columns(tmp_path):
    import datetime as dt

    from orchestrator.notify.message import Ended, build
    from orchestrator.results import BisectOutcome, BisectResult

    repo, report = report_of(tmp_path)
    result = BisectResult(BisectOutcome.FOUND, repo.names["c9"], repo.names["c8"])
    mail = build(Ended(1, "t", "bisect", "done", result, "c9", render_markdown(report)), "v@example.org",
                 ("m@example.org",), dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    body = mail.get_body(("plain",)).get_content()
    section = body[body.index("## What changed with the culprit"):body.index("## Steps")]
    assert re.search(r"^ +[\d.]+ ±  \d% +-1\d\.\d% +[\d.]+ ±  \d%  iops \(worse\)$", section, re.M), section
    assert all(len(line) <= 78 for line in section.splitlines())

