"""`vmbisect compare`: two or more variants (kernels and/or guest settings) on the same guest
and workload, runs interleaved, an mmtests-style table with significance, Markdown/HTML/JSON."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.commands.argtypes import count, fraction, output_file, seconds
from orchestrator.commands.labopts import add_lab_options
from orchestrator.commands.storeopts import add_store_option
from orchestrator.commands.vmopts import add_vm_options, guest_options
from orchestrator.compare.spec import CompareSpec
from orchestrator.errors import choices_error

if TYPE_CHECKING:
    pass

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
    p.add_argument("--all-metrics", action="store_true", help="also per-disk and per-vCPU metrics and the kernel counters in the tables")
    p.add_argument("--profile", action="store_true",
                   help="then profile the first two variants under perf record on two boots each, never counted "
                        "as evidence (docs/explain.md)")
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


def spec_from_args(a: argparse.Namespace) -> CompareSpec:
    """The comparison the options ask for, as it is stored (checked by plan_from_spec)."""
    return CompareSpec(
        variants=tuple(a.variant), workload=a.workload, params=tuple(a.param), sweeps=tuple(a.sweep),
        metrics=tuple(a.metric), reps=a.reps, boots=a.boots, kernel=a.kernel,
        initrd_modules_from=a.initrd_modules_from, append=a.append,
        repo=a.repo.absolute() if a.repo is not None else None, config=tuple(a.config),
        alpha=a.alpha, title=a.title, all_metrics=a.all_metrics, reports=tuple(a.report), timeout_s=a.timeout,
        profile=a.profile,
        guest=guest_options(a), lab=a.lab.absolute() if a.lab is not None else None, host=a.host)


def run(a: argparse.Namespace) -> int:
    from orchestrator.compare.plan import plan_from_spec
    from orchestrator.hosts.labfile import lab_from
    from orchestrator.kinds import run as kinds
    from orchestrator.kinds.compare_kind import check_kernels
    from orchestrator.kinds.table import record
    from orchestrator.store import Store

    _check_reports(a.report)
    spec = spec_from_args(a)
    plan = plan_from_spec(spec)
    lab_from(plan.lab, plan.host, a.uri)
    check_kernels(plan)
    store = Store(a.store)
    campaign_id = record(store, f"compare-{a.workload}"[:64], spec)
    return kinds.execute(store, campaign_id, uri=a.uri)

