"""The `compare` kind (`vmbisect compare`, docs/compare.md): two or more variants (kernels
and/or guest settings) on the same guest and workload, runs interleaved, an mmtests-style table
with significance."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.compare.spec import CompareSpec
from orchestrator.errors import UserError
from orchestrator.kinds.kind import Kind, OnEvent, Run, StoredCampaign, no_files
from orchestrator.results import CompareResult

if TYPE_CHECKING:
    from orchestrator.compare.plan import ComparePlan
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.metrictable.cells import Comparison
    from orchestrator.notify.recipients import Notify
    from orchestrator.ports import Event
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow, Store


def check_kernels(plan: ComparePlan) -> None:
    """Every variant's kernel exists before the comparison is recorded: a file, a stored name, or
    a commit of a git repository with a recipe that parses (nothing is built here)."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.kbuild.kernelstore import KernelStore
    from orchestrator.kbuild.recipe import parse_recipe

    commits = [v for v in plan.variants if v.commit]
    repo = plan.repo
    if commits:
        assert repo is not None  # plan_from_spec asks for --repo
        if not repo.is_dir() or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
            raise UserError(f"repo: {repo} is not a git repository")
        parse_recipe(list(plan.recipe))
    for v in commits:
        assert repo is not None
        if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{v.commit}^{{commit}}",
               check=False).returncode != 0:
            raise UserError(f"variant {v.name}: commit {v.commit!r} is not a commit in {plan.repo}")
    for v in plan.variants:
        if v.commit or v.kernel is None:
            continue
        if "/" in v.kernel or Path(v.kernel).is_file():
            if not Path(v.kernel).is_file():
                raise UserError(f"variant {v.name}: kernel {v.kernel} is not a file")
        else:
            KernelStore().resolve(v.kernel)


def render(c: Comparison, fmt: str) -> str:
    """The comparison as md, html or json; the renderers are imported when used."""
    from orchestrator.compare.html import render_html
    from orchestrator.compare.text import render_markdown
    from orchestrator.metrictable.cells import to_json

    return {"md": render_markdown, "html": render_html, "json": to_json}[fmt](c)


def write_reports(c: Comparison, paths: list[Path], profile: Any = None) -> None:
    from orchestrator.explain.profile_render import appended

    for path in paths:
        fmt = path.suffix.removeprefix(".")
        path.write_text(appended(render(c, fmt), fmt, profile))
        print(f"compare: report {path}", file=sys.stderr)


def execute(plan: ComparePlan, store: Store, campaign_id: int, pool: GuestPool,
            on_event: Callable[[Event], None]) -> Comparison:
    """The comparison's runs on the pool (orchestrator/kinds/run.py holds its lock and the
    pool), a resumed one on the host that measured its last run; its verdict stored."""
    from orchestrator import wiring
    from orchestrator.compare.collect import comparison, run_host, stored_runs
    from orchestrator.compare.runplan import run_plan
    from orchestrator.compare.tobisect import with_commands

    last = store.last_run(campaign_id)
    host = run_host(last.raw) if last else plan.host
    kernels, measurer = wiring.comparison(plan, pool, host)
    run_plan(plan, store, campaign_id, kernels, measurer, on_event=on_event)
    result = with_commands(comparison(plan, stored_runs(store, campaign_id)), plan, campaign_id)
    from orchestrator.states import end

    end(store, campaign_id, CompareResult(tuple(result.verdict)))
    return result


def summary_text(c: Comparison) -> str:
    from orchestrator.metrictable.block import metric_block

    out = [f"{c.title}", "", *(f"- {line}" for line in c.verdict)]
    out += ["", "Bisect a row that regressed:", *c.bisect] if c.bisect else []
    for metric in c.primary:
        out += ["", *metric_block(c, metric)]
    return "\n".join(out)


def _check(spec: CompareSpec) -> None:
    from orchestrator.compare.plan import plan_from_spec

    check_kernels(plan_from_spec(spec))


def _lab(spec: CompareSpec) -> tuple[Path | None, str | None]:
    return spec.lab, spec.host


def _notify(spec: CompareSpec) -> Notify | None:
    return None  # no campaign file: its lab file's list


def _progress(campaign: StoredCampaign, as_json: bool) -> AbstractContextManager[OnEvent]:
    return nullcontext(lambda e: print(f"compare: {e.message}", file=sys.stderr, flush=True))


def _run(r: Run) -> str:
    from orchestrator.compare.plan import plan_from_spec

    plan = plan_from_spec(r.spec)
    result = execute(plan, r.store, r.campaign_id, r.pool, r.on_event)
    profile = None
    if r.spec.profile:  # `compare --profile`: after the runs, never part of the verdict
        from orchestrator import wiring
        from orchestrator.compare.collect import run_host
        from orchestrator.explain import profile_boots, profile_stored

        last = r.store.last_run(r.campaign_id)
        profile_boots.profile_variants(plan, r.store, r.campaign_id, r.pool,
                                       run_host(last.raw) if last else plan.host, wiring.say, wiring)
        profile = profile_stored.collect(r.store, r.campaign_id, plan.variants[0].name, plan.variants[1].name)
    write_reports(result, list(r.spec.reports), profile)
    return summary_text(result)


def _report(campaign: StoredCampaign, fmt: str) -> str:
    from orchestrator.compare.collect import comparison, stored_runs
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.compare.tobisect import with_commands
    from orchestrator.explain import profile_stored
    from orchestrator.explain.profile_render import appended

    store, campaign_id, spec = campaign.store, campaign.id, campaign.spec
    plan = plan_from_spec(spec)
    profile = (profile_stored.collect(store, campaign_id, plan.variants[0].name, plan.variants[1].name)
               if spec.profile else None)
    return appended(render(with_commands(comparison(plan, stored_runs(store, campaign_id)), plan, campaign_id), fmt),
                    fmt, profile)


def _metric(spec: CompareSpec) -> str | None:
    return str(spec.metrics[0]) if spec.metrics else None


def _left(campaign: StoredCampaign, boots: list[BootRow]) -> Estimate:
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.compare.schedule import schedule
    from orchestrator.report.estimate import fixed_estimate

    plan = plan_from_spec(campaign.spec)
    planned = schedule([[v.name for v in g] for g in plan.groups], len(plan.points), plan.reps, plan.boots)
    return fixed_estimate(len(planned), sum(b.status != "lost" for b in boots), "comparison")


KIND: Kind[CompareSpec] = Kind(name="compare", spec=CompareSpec, result=CompareResult, check=_check, lab=_lab,
                               notify=_notify, progress=_progress, run=_run, report=_report, files=no_files, metric=_metric,
                               left=_left)
