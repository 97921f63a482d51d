"""Named bisection cases: the real engine and real git on throwaway repositories, fake
build and VM ports (no kernel is built and no guest boots here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import CampaignRefused, Engine, Event
from orchestrator.campaign import parse_campaign
from orchestrator.errors import InfraError
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import Repo, linear, merge_heavy


def campaign(repo: Repo, good: str, bad: str, **extra):
    data = {"name": "t", "repository": str(repo.path), "good": repo.names[good], "bad": repo.names[bad],
            "workload": "fake", "metric": {"name": "iops", "direction": "higher", "threshold": "-5%"},
            "repetitions": {"min": 3, "max": 9}, "runs_per_boot": 3}
    data.update(extra)
    return parse_campaign(data)


def regression_at(repo: Repo, culprit: str, good_value: float = 100.0, drop: float = 0.10):
    bad = set(repo.git("rev-list", "--ancestry-path", f"{repo.names[culprit]}..HEAD").split()) | {repo.names[culprit]}
    return lambda commit: good_value * (1 - drop) if commit in bad else good_value


def bisect(tmp_path: Path, repo: Repo, c, builder, measurer, store=None, campaign_id=None, events=None):
    store = store or Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = campaign_id or store.new_campaign(c.name, {"good": c.good})
    engine = Engine(c, "higher", GitBisect(repo.path, tmp_path / "work"), builder, measurer, store,
                    on_event=(events.append if events is not None else lambda e: None))
    return engine.run(cid), store, cid


@pytest.mark.parametrize("culprit", ["c1", "c12", "c23"], ids=["first", "middle", "last"])
def test_linear_history_names_the_culprit(tmp_path, culprit):
    repo = linear(tmp_path / "u", 24)
    outcome, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c23"), FakeBuilder(),
                                 FakeMeasurer(regression_at(repo, culprit)))
    assert outcome.kind == "found" and repo.name_of(outcome.culprit) == culprit
    assert store.campaign(cid).state == "done" and "git bisect start" in store.campaign(cid).bisect_log


@pytest.mark.parametrize("culprit", ["t1-1", "m4"])
def test_merge_heavy_history_names_the_culprit(tmp_path, culprit):
    repo = merge_heavy(tmp_path / "u")
    outcome, _, _ = bisect(tmp_path, repo, campaign(repo, "m0", "m5"), FakeBuilder(),
                           FakeMeasurer(regression_at(repo, culprit)))
    assert repo.name_of(outcome.culprit) == culprit


def test_build_broken_commits_next_to_the_culprit_are_skipped(tmp_path):
    repo = linear(tmp_path / "u", 24)
    broken = {repo.names["c10"], repo.names["c13"]}
    outcome, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c23"), FakeBuilder(broken=broken),
                                 FakeMeasurer(regression_at(repo, "c12")))
    assert repo.name_of(outcome.culprit) == "c12"
    skips = [d for d in store.decisions(cid) if d.verdict == "skip"]
    assert all(d.reason.startswith("build failed: drivers/scsi/sd.c:12:3: error") for d in skips)
    assert {b.status for b in store.builds(cid) if b.commit in broken} <= {"failed"}


def test_boot_broken_range_is_skipped_and_reported_as_candidates(tmp_path):
    repo = linear(tmp_path / "u", 24)
    panics = {repo.names[f"c{i}"] for i in (11, 12, 13)}
    outcome, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c23"), FakeBuilder(),
                                 FakeMeasurer(regression_at(repo, "c12"), boot_broken=panics))
    assert outcome.kind == "only_skipped"
    assert {repo.name_of(c) for c in outcome.candidates} >= {"c11", "c12", "c13"}
    assert any("Kernel panic" in b.error for b in store.boots(cid))


def test_boot_bisect_mode_treats_boot_failure_as_bad(tmp_path):
    repo = linear(tmp_path / "u", 24)
    panics = {repo.names[f"c{i}"] for i in range(12, 23)}
    c = campaign(repo, "c0", "c23", skip_policy={"boot_failure": "bad"})
    outcome, _, _ = bisect(tmp_path, repo, c, FakeBuilder(),
                           FakeMeasurer(regression_at(repo, "c12"), boot_broken=panics))
    assert repo.name_of(outcome.culprit) == "c12"


@pytest.mark.parametrize("noise", [0.01, 0.03, 0.05])
def test_noisy_metric_still_names_the_culprit(tmp_path, noise):
    repo = linear(tmp_path / "u", 40)
    c = campaign(repo, "c0", "c39", repetitions={"min": 3, "max": 15},
                 metric={"name": "iops", "direction": "higher", "threshold": "-8%"})
    outcome, _, _ = bisect(tmp_path, repo, c, FakeBuilder(), FakeMeasurer(regression_at(repo, "c17"), noise, seed=5))
    assert repo.name_of(outcome.culprit) == "c17"


def test_endpoints_that_do_not_differ_are_refused_before_bisecting(tmp_path):
    repo = linear(tmp_path / "u", 8)
    builder = FakeBuilder()
    with pytest.raises(CampaignRefused, match="campaign refused: bad is not bad"):
        bisect(tmp_path, repo, campaign(repo, "c0", "c7"), builder, FakeMeasurer(lambda c: 100.0))
    assert set(builder.built) == {repo.names["c0"], repo.names["c7"]}


def test_noise_too_large_for_the_threshold_is_refused_saying_how_many_runs_it_needs(tmp_path):
    repo = linear(tmp_path / "u", 8)
    c = campaign(repo, "c0", "c7", repetitions={"min": 3, "max": 6})
    with pytest.raises(CampaignRefused, match=r"needs \d+ repetitions per commit"):
        bisect(tmp_path, repo, c, FakeBuilder(), FakeMeasurer(regression_at(repo, "c3"), noise=0.15, seed=1))


def test_infrastructure_error_stops_the_campaign_and_resume_reaches_the_same_culprit(tmp_path):
    repo = linear(tmp_path / "u", 32)
    c = campaign(repo, "c0", "c31")
    value = regression_at(repo, "c20")
    with pytest.raises(InfraError, match="fake host failure"):
        bisect(tmp_path, repo, c, FakeBuilder(), FakeMeasurer(value, seed=2, infra_after=4))
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    taken = {k: list(v) for k, v in store.samples(1, "iops").items()}
    assert store.campaign(1).state == "running" and taken
    outcome, store, _ = bisect(tmp_path, repo, c, FakeBuilder(), FakeMeasurer(value, seed=3), store=store, campaign_id=1)
    assert repo.name_of(outcome.culprit) == "c20"
    after = store.samples(1, "iops")
    assert all(after[k][: len(v)] == v for k, v in taken.items())


def test_identical_images_at_culprit_and_parent_are_flagged_suspicious(tmp_path):
    repo = linear(tmp_path / "u", 16)
    same = {repo.names["c7"], repo.names["c8"]}
    outcome, _, _ = bisect(tmp_path, repo, campaign(repo, "c0", "c15"), FakeBuilder(same_image=same),
                           FakeMeasurer(regression_at(repo, "c8")))
    assert repo.name_of(outcome.culprit) == "c8"
    assert any(n.startswith("suspicious") for n in outcome.notes)


def test_progress_events_cover_every_phase_and_every_decision_build_skips_included(tmp_path):
    repo = linear(tmp_path / "u", 16)
    events: list[Event] = []
    _, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c15"), FakeBuilder(broken={repo.names["c7"]}),
                           FakeMeasurer(regression_at(repo, "c5")), events=events)
    assert {e.phase for e in events} >= {"endpoints", "build", "boot", "measure", "decide", "done"}
    final = [(e.commit, e.message.split(":")[0]) for e in events if e.phase == "decide" and not e.message.startswith("more")]
    assert final == [(d.commit, d.verdict) for d in store.decisions(cid) if d.role == "step"]
    assert (repo.names["c7"], "skip") in final


@pytest.mark.slow
def test_at_3_percent_noise_a_10_percent_regression_is_named_in_at_least_99_of_100_seeded_trials(tmp_path):
    """What the statistics are worth: 100 independent seeded campaigns over a 100-commit
    history, each with a culprit drawn at random; at most one may name a wrong commit."""
    import random

    repo = linear(tmp_path / "u", 100)
    store = Store("sqlite://")
    rng = random.Random(2024)
    right = 0
    for trial in range(100):
        culprit = f"c{rng.randrange(1, 100)}"
        c = campaign(repo, "c0", "c99", repetitions={"min": 3, "max": 15})
        cid = store.new_campaign(c.name, {})
        engine = Engine(c, "higher", GitBisect(repo.path, tmp_path / "work"), FakeBuilder(),
                        FakeMeasurer(regression_at(repo, culprit), noise=0.03, seed=trial), store)
        try:
            outcome = engine.run(cid)
        except CampaignRefused:
            continue
        right += outcome.kind == "found" and repo.name_of(outcome.culprit) == culprit
    assert right >= 99


def test_report_names_culprit_with_figures_steps_and_bisect_log(tmp_path):
    from orchestrator.report import collect, render_json, render_markdown

    repo = linear(tmp_path / "u", 16)
    outcome, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c15"), FakeBuilder(),
                                 FakeMeasurer(regression_at(repo, "c9")))
    gb = GitBisect(repo.path, tmp_path / "work")
    report = collect(store, cid, "iops", "higher", gb.info)
    md = render_markdown(report)
    assert f"    commit {repo.names['c9']}" in md and "    Author: T <t@example.org>" in md and "        c9" in md
    assert f"parent  {repo.names['c8'][:12]}: median" in md and f"culprit {repo.names['c9'][:12]}: median" in md
    assert re.search(r"change: -\d+\.\d% \(medians\)", md)
    assert re.search(r"Amean +[\d.]+ \(   0.00%\) +[\d.]+ [(*] *-\d+\.\d\d%[)*]", md)
    assert f"{repo.names['c8'][:12]}" in md.split("mmtests layout")[1]
    assert "| 1 | good | " in md and "| 2 | bad | " in md and "| step |" in md
    assert "git bisect start" in md and f"# first bad commit: [{repo.names['c9']}] c9" in md
    assert '"kind": "found"' in render_json(report)


def test_html_report_is_self_contained_with_a_plot_of_every_measured_commit(tmp_path):
    from orchestrator.report import collect
    from orchestrator.report_html import render_html

    repo = linear(tmp_path / "u", 16)
    _, store, cid = bisect(tmp_path, repo, campaign(repo, "c0", "c15"), FakeBuilder(),
                           FakeMeasurer(regression_at(repo, "c9")))
    report = collect(store, cid, "iops", "higher", GitBisect(repo.path, tmp_path / "work").info)
    page = render_html(report)
    dots = sum(len(v) for v in report.samples.values())
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and page.count("<circle") == dots
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert repo.names["c9"] in page and "Parent against culprit, mmtests layout" in page and "Amean" in page
