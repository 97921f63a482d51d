"""`vmbisect compare`: two or more variants (kernels and/or guest settings) on the same guest
and workload, runs interleaved, an mmtests-style table with significance, Markdown/HTML/JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.commands.argtypes import count, fraction, output_file, seconds
from orchestrator.commands.bisect import add_store_option
from orchestrator.commands.labopts import add_lab_options
from orchestrator.commands.vmopts import add_vm_options, guest_options
from orchestrator.errors import UserError, choices_error
from orchestrator.results import CompareResult
from orchestrator.specs import CompareSpec

if TYPE_CHECKING:
    from orchestrator.compare.model import Comparison
    from orchestrator.compare.plan import ComparePlan
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.ports import Event
    from orchestrator.store import Store

FORMATS = ("md", "html", "json")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "compare", help="compare kernels and/or guest settings on one workload (mmtests-style table)",
        description="SPEC items (comma-separated key:value): commit:REV (built from --repo), kernel:PATH|NAME, "
        "modules:RELEASE, append:WORDS (escape commas as \\,), sched:none|mq-deadline|bfq|kyber, "
        "sysfs:PATH=VALUE ({disk} = every data disk), nice:N. The first variant is the baseline. "
        "docs/compare.md has the details.")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=SPEC", help="a variant (repeat, >= 2)")
    p.add_argument("--workload", required=True, help="a workload (fio, dbench, netperf) or preset name")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a workload parameter")
    p.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="sweep a parameter; several sweeps multiply (jobs x depth)")
    p.add_argument("--metric", action="append", default=[], metavar="NAME",
                   help="primary metric(s) to judge by (default: the workload's headline metric)")
    p.add_argument("--reps", type=count(1, 1000), default=5, help="runs per variant and sweep point (default 5)")
    p.add_argument("--boots", type=count(1, 1000), help="boots per kernel (default: one per run when kernels differ, "
                   "else 2)")
    p.add_argument("--kernel", help="kernel for variants that name none: bzImage path or stored name")
    p.add_argument("--initrd-modules-from", metavar="RELEASE", help="host modules for variants that name none")
    p.add_argument("--append", default="", help="kernel command line for variants that name none")
    p.add_argument("--repo", type=Path, help="kernel git repository for commit: variants")
    p.add_argument("--config", action="append", default=[], metavar="ITEM",
                   help="build recipe item for commit: variants (default: guest-base)")
    p.add_argument("--alpha", type=fraction(0, 0.5), default=0.05, help="false discovery rate for significance (default 0.05)")
    p.add_argument("--title", help="report title")
    p.add_argument("--all-metrics", action="store_true", help="also per-disk and per-vCPU metrics in the tables")
    p.add_argument("--report", action="append", default=[], type=output_file, metavar="PATH",
                   help="write a report; .md, .html or .json by the suffix (repeatable)")
    p.add_argument("--timeout", type=seconds(1), default=120.0, help="seconds to wait for the agent (default 120)")
    add_vm_options(p)
    add_lab_options(p)
    add_store_option(p)


def _check_reports(paths: list[Path]) -> None:
    for path in paths:
        if path.suffix.removeprefix(".") not in FORMATS:
            raise choices_error("report", path.suffix or str(path), [f".{f}" for f in FORMATS])


def check_kernels(plan: ComparePlan) -> None:
    """Every variant's kernel exists before the comparison is recorded: a file, a stored name, or
    a commit of a git repository with a recipe that parses (nothing is built here)."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.kbuild.recipe import parse_recipe
    from orchestrator.kbuild.store import KernelStore

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
    from orchestrator.compare.model import to_json
    from orchestrator.compare.text import render_markdown

    return {"md": render_markdown, "html": render_html, "json": to_json}[fmt](c)


def write_reports(c: Comparison, paths: list[Path]) -> None:
    for path in paths:
        path.write_text(render(c, path.suffix.removeprefix(".")))
        print(f"compare: report {path}", file=sys.stderr)


def execute(plan: ComparePlan, store: Store, campaign_id: int, pool: GuestPool,
            on_event: Callable[[Event], None]) -> Comparison:
    """The comparison's runs on the pool (commands/kinds.py holds its lock and the pool), a
    resumed one on the host that measured its last run; its verdict stored."""
    from orchestrator import wiring
    from orchestrator.compare.collect import comparison, run_host, stored_runs
    from orchestrator.compare.runner import run_plan
    from orchestrator.compare.tobisect import with_commands

    last = store.last_run(campaign_id)
    host = run_host(last.raw) if last else plan.host
    kernels, measurer = wiring.comparison(plan, pool, host)
    run_plan(plan, store, campaign_id, kernels, measurer, on_event=on_event)
    result = with_commands(comparison(plan, stored_runs(store, campaign_id)), plan, campaign_id)
    store.set_state(campaign_id, "done", CompareResult(tuple(result.verdict)).to_dict())
    return result


def summary_text(c: Comparison) -> str:
    from orchestrator.compare.text import metric_block

    out = [f"{c.title}", "", *(f"- {line}" for line in c.verdict)]
    out += ["", "Bisect a row that regressed:", *c.bisect] if c.bisect else []
    for metric in c.primary:
        out += ["", *metric_block(c, metric)]
    return "\n".join(out)


def spec_from_args(a: argparse.Namespace) -> CompareSpec:
    """The comparison the options ask for, as it is stored (checked by plan_from_spec)."""
    return CompareSpec(
        variants=tuple(a.variant), workload=a.workload, params=tuple(a.param), sweeps=tuple(a.sweep),
        metrics=tuple(a.metric), reps=a.reps, boots=a.boots, kernel=a.kernel,
        initrd_modules_from=a.initrd_modules_from, append=a.append,
        repo=a.repo.absolute() if a.repo is not None else None, config=tuple(a.config),
        alpha=a.alpha, title=a.title, all_metrics=a.all_metrics, reports=tuple(a.report), timeout_s=a.timeout,
        guest=guest_options(a), lab=a.lab.absolute() if a.lab is not None else None, host=a.host)


def run(a: argparse.Namespace) -> int:
    from orchestrator.commands import kinds
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.hosts.lab import lab_from
    from orchestrator.specs import record
    from orchestrator.store import Store

    _check_reports(a.report)
    spec = spec_from_args(a)
    plan = plan_from_spec(spec)
    lab_from(plan.lab, plan.host, a.uri)
    check_kernels(plan)
    store = Store(a.store)
    campaign_id = record(store, f"compare-{a.workload}"[:64], spec)
    return kinds.execute(store, campaign_id, uri=a.uri)


def report(store: Store, campaign_id: int, spec: CompareSpec, fmt: str) -> str:
    from orchestrator.compare.collect import comparison, stored_runs
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.compare.tobisect import with_commands

    plan = plan_from_spec(spec)
    return render(with_commands(comparison(plan, stored_runs(store, campaign_id)), plan, campaign_id), fmt)
