"""The watched metrics of a bisection (orchestrator/explain/watched.py) from a campaign the real engine
ran on real git and the real store, with the fake guests of tests/fakes.py reporting a
watched CPU cost that rises at the culprit and a context-switch rate that does not move."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.decisions import Basis, Role
from orchestrator.report.bisection import collect, render_markdown
from orchestrator.report.bisection_html import render_html
from orchestrator.store import Store
from orchestrator.workloads.definition import MetricDef
from orchestrator.workloads.system import METRICS
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import linear

IOPS = MetricDef("iops", "IO/s", "higher")


def watched_campaign(tmp_path: Path):  # type: ignore[no-untyped-def]
    """iops drops 15% at c9, guest CPU per I/O rises 20% there, context switches per I/O stay."""
    from tests.integration.test_engine_cases import make_campaign, values

    repo = linear(tmp_path / "u", 16)
    bad = values(repo, "c9", 0.15, True)
    cost = {"guest_cpu_us_per_op": lambda c: 50.0 * (1.2 if bad(c) < 100 else 1.0), "ctxt_per_op": lambda c: 3.0}
    c = make_campaign(repo, "c0", "c15", metric={"name": "iops", "direction": "higher", "threshold": "-10%",
                                                 "watch": list(cost)})
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign(c.name, {})
    outcome = Engine(c, "higher", GitBisect(repo.path, tmp_path / "work"), FakeBuilder(),
                     FakeMeasurer(bad, seed=4, between=0.02, also=cost, accel="tcg"), store).run(cid)
    assert repo.name_of(outcome.culprit) == "c9"
    watch = tuple(METRICS[n] for n in cost)
    report = collect(store, cid, "iops", "higher", GitBisect(repo.path, tmp_path / "work").info, IOPS, watch)
    return repo, store, cid, report


def test_the_report_says_how_each_watched_metric_moved_over_the_confirmations_boots_and_what_tcg_means(tmp_path):
    repo, store, cid, report = watched_campaign(tmp_path)
    assert report.watched is not None
    cost, ctxt = report.watched.rows
    confirm = next(d for d in reversed(store.decisions(cid)) if d.role is Role.CONFIRM and d.basis is not Basis.MEASURING)
    assert (cost.metric, cost.direction, cost.unit) == ("guest_cpu_us_per_op", "lower", "CPU-us/op")
    assert cost.culprit_boots == confirm.samples and cost.parent_boots >= 2
    assert cost.test is not None and cost.test.p < 0.05 and cost.test.low < 0.2 < cost.test.high
    assert abs(cost.culprit_mean / cost.parent_mean - 1.2) < 0.05
    assert ctxt.test is not None and ctxt.test.low < 0 < ctxt.test.high
    md = render_markdown(report)
    assert re.search(r"^\| guest_cpu_us_per_op \| lower \| [\d.]+ CPU-us/op \| [\d.]+ CPU-us/op \| \+\d+\.\d%\* \| "
                     r"\+\d+\.\d%\.\.\+\d+\.\d% \| [\d.e-]+ \|$", md, re.M), md
    assert re.search(r"^\| ctxt_per_op \| lower \| [\d.]+ 1/op \| [\d.]+ 1/op \| [+-]\d+\.\d% \|", md, re.M), md
    assert md.index("Watched metrics, culprit against its parent") < md.index("## Steps")
    page = render_html(report)
    assert "<h2>Watched metrics</h2>" in page and "guest_cpu_us_per_op" in page
    # the runs ran under TCG: the report says what the CPU cost measures there, once
    assert ("Note: the runs ran under TCG; guest_cpu_us_per_op: guest CPU time is the emulated clock's; of the CPU "
            "figures it tracks the guest's own cost best") in md
    assert md.count("ran under TCG") == 1

