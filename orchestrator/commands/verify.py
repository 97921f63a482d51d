"""`vmbisect verify [CAMPAIGN.yaml] COMMIT`: is COMMIT the cause? It is measured against its
parent (and, with --revert-on, that tip with COMMIT reverted against the tip), booted
interleaved; the answer is one line (confirmed / not seen / cannot tell with these boots, and
how many would) and the parent-against-commit table in the mmtests layout.

What to build and measure comes from a campaign file, from flags, or from both (the flags
override the file's keys): --repo, --workload and --param, --metric and --threshold, --config,
the guest options that compare and measure take, --append, --runs-per-boot. Everything is
checked before anything is recorded, each error one line naming the field."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from orchestrator.commands.argtypes import count
from orchestrator.commands.storeopts import add_store_option
from orchestrator.commands.vmopts import add_vm_options
from orchestrator.errors import UserError
from orchestrator.vm.options import parse_pinning, parse_topology

if TYPE_CHECKING:
    from orchestrator.campaign.file import Campaign
    from orchestrator.kinds.specs import VerifySpec

# The guest options of add_vm_options -> where they go in a campaign's mapping.
GUEST_FLAGS = {"vcpus": ("vcpus",), "memory": ("memory_mib",), "machine": ("machine",), "topology": ("topology",),
               "pin": ("pinning",), "disks": ("disks", "count"), "disk_size": ("disks", "size_mib"),
               "controller": ("disks", "controller"), "backing": ("disks", "backing"),
               "disk_dir": ("disks", "directory"), "cache": ("disks", "cache"), "aio": ("disks", "aio"),
               "queues": ("disks", "queues"), "iothreads": ("disks", "iothreads")}
DEFAULT_THRESHOLD = 0.10  # the regression asked about when neither a flag nor a file says


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify", help="measure a suspect commit against its parent (and its revert on a tip)",
        description="What to build and measure comes from a campaign file, from flags, or both (flags override "
        "the file). Without a file, --repo and --workload are needed; the metric defaults to the workload's "
        "headline metric and the threshold to 10% in its bad direction.")
    p.add_argument("target", nargs="+", metavar="[CAMPAIGN.yaml] COMMIT",
                   help="a campaign file (optional) and the suspect commit")
    p.add_argument("--repo", type=Path, help="kernel git repository (campaign key: repository)")
    p.add_argument("--workload", help="a workload (fio, dbench, netperf) or preset name")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="a workload parameter")
    p.add_argument("--metric", help="the metric to judge by (default: the workload's headline metric)")
    p.add_argument("--threshold", help="the regression asked about, e.g. -10%% (default: 10%% in the bad direction)")
    p.add_argument("--config", action="append", default=[], metavar="ITEM",
                   help="kernel recipe item (repeat; default: guest-base)")
    p.add_argument("--append", help="extra kernel command line")
    p.add_argument("--runs-per-boot", type=count(1, 100), help="workload runs in each guest (default 3)")
    p.add_argument("--revert-on", default="", metavar="REV",
                   help="also measure REV with the commit reverted against REV")
    p.add_argument("--boots", type=count(2, 1000), help="boots per side (default: 4, or boots_per_commit if larger)")
    p.add_argument("--profile", action="store_true",
                   help="then profile the parent and the commit under perf record on boots of their own, never "
                        "counted as evidence (docs/explain.md; boots per side: the file's explain.profile_boots, 2)")
    add_vm_options(p)
    # None: not given; only the guest options given override a campaign file's guest (the
    # campaign's own defaults are the options' defaults)
    p.set_defaults(**{flag: None for flag in (*GUEST_FLAGS, "accel")})
    add_store_option(p)


def split_target(target: list[str]) -> tuple[Path | None, str]:
    """`[CAMPAIGN.yaml] COMMIT` -> (the file or None, the commit)."""
    if len(target) > 2:
        raise UserError(f"verify: expected [CAMPAIGN.yaml] COMMIT, got {len(target)} arguments")
    return (Path(target[0]) if len(target) == 2 else None), target[-1]


def with_flags(raw: Mapping[str, Any] | None, a: argparse.Namespace, commit: str) -> dict[str, Any]:
    """A campaign mapping: the file's (or an empty one) with the flags on top. Pure: nothing is
    checked here that parse_campaign checks (it names the campaign key of a bad value)."""
    out: dict[str, Any] = copy.deepcopy(dict(raw)) if raw is not None else {}
    out.setdefault("name", "verify")
    for key in ("good", "bad"):  # a campaign's keys; a verification measures COMMIT^ against COMMIT
        out.setdefault(key, commit)
    if a.repo is not None:
        out["repository"] = str(a.repo.absolute())
    if a.workload is not None:
        out["workload"] = {"name": a.workload, "params": {}}
    if a.param:
        workload = out.get("workload")
        if workload is None:
            raise UserError("param: a workload parameter needs a workload; add --workload NAME")
        workload = {"name": workload, "params": {}} if isinstance(workload, str) else dict(workload)
        params = dict(workload.get("params") or {})
        for item in a.param:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise UserError(f"param: expected KEY=VALUE, got {item!r}")
            params[key] = value
        out["workload"] = {**workload, "params": params}
    if a.metric is not None or a.threshold is not None:
        metric = dict(out.get("metric") or {}) if isinstance(out.get("metric"), Mapping) else {}
        metric.update({k: v for k, v in (("name", a.metric), ("threshold", a.threshold)) if v is not None})
        out["metric"] = metric
    if a.config:
        kernel = dict(out["kernel"]) if isinstance(out.get("kernel"), Mapping) else {}
        out["kernel"] = {**kernel, "config": list(a.config)}
    for flag, key in (("append", "append"), ("runs_per_boot", "runs_per_boot"), ("accel", "accel")):
        if getattr(a, flag, None) is not None:
            out[key] = getattr(a, flag)
    given = {flag: getattr(a, flag) for flag in GUEST_FLAGS if getattr(a, flag, None) is not None}
    if given:
        guest = copy.deepcopy(dict(out["guest"])) if isinstance(out.get("guest"), Mapping) else {}
        for flag, value in given.items():
            if flag == "topology":
                t = parse_topology(value)
                value = {"sockets": t.sockets, "cores": t.cores, "threads": t.threads} if t else None
            elif flag == "pin":
                value = list(parse_pinning(value))
            elif flag == "disk_dir":
                value = str(Path(value).absolute())
            *parents, leaf = GUEST_FLAGS[flag]
            where = guest
            for part in parents:
                where[part] = dict(where.get(part) or {}) if isinstance(where.get(part), Mapping) else {}
                where = where[part]
            where[leaf] = value
        out["guest"] = guest
    return out


def with_metric_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """The metric a verification without one judges by: the workload's headline metric, and a
    threshold of 10% in that metric's bad direction. Unknown workloads and metrics are left to
    the campaign's checks, which list the choices."""
    from orchestrator.compare.plan import headline_metric
    from orchestrator.workloads.definition import load_all, resolve
    from orchestrator.workloads.system import METRICS

    for key, flag in (("repository", "--repo PATH"), ("workload", "--workload NAME")):
        if key not in raw:
            raise UserError(f"{key}: missing; give {flag} or a campaign file")
    metric = raw.get("metric")
    if metric is not None and not isinstance(metric, Mapping):
        return raw
    metric = dict(metric or {})
    if "name" in metric and "threshold" in metric:
        return raw
    workload = raw["workload"]
    name, params = (workload, {}) if isinstance(workload, str) else (workload.get("name"), workload.get("params", {}))
    if not isinstance(name, str) or not isinstance(params, Mapping):
        return raw
    plan = resolve(load_all(), name, [f"{k}={v}" for k, v in params.items()])
    metric.setdefault("name", headline_metric(plan.workload, plan.points[0]))
    name = str(metric["name"])
    known = plan.workload.metrics.get(name) or METRICS.get(name) or METRICS.get(name.rpartition(".")[0])
    direction = metric.get("direction") or (known.direction if known else "higher")
    metric.setdefault("threshold", f"{-DEFAULT_THRESHOLD if direction != 'lower' else DEFAULT_THRESHOLD:+.0%}")
    return {**raw, "metric": metric}


def check_revisions(repo: Path, commit: str, revert_on: str) -> None:
    """The suspect commit and the tip exist in the user's repository (read, never written)."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.campaign.file import revision

    if not repo.is_dir() or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UserError(f"repository: {repo} is not a git repository")
    for field, rev in (("commit", commit), ("revert-on", revert_on)):
        if not rev:
            continue
        revision(rev, field)
        if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False).returncode != 0:
            raise UserError(f"{field}: {rev!r} is not a commit in {repo}")
    if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^^{{commit}}",
           check=False).returncode != 0:
        raise UserError(f"commit: {commit!r} has no parent to measure it against")


def checked(a: argparse.Namespace) -> tuple[Campaign, VerifySpec]:
    """The verification asked for, checked as far as it can be without building or booting:
    its campaign and the mapping stored for it (with the commit, the tip and the boots under
    `verify`). Nothing is recorded here."""
    from orchestrator.campaign.file import parse_campaign, read_campaign_file, revision
    from orchestrator.kinds.bisect_kind import preflight
    from orchestrator.kinds.specs import BisectSpec, VerifySpec
    from orchestrator.measure.endpoints import MEASURED

    path, commit = split_target(a.target)
    revision(commit, "commit")
    if a.revert_on:
        revision(a.revert_on, "revert-on")
    raw = with_metric_defaults(with_flags(read_campaign_file(path) if path else None, a, commit))
    explain = raw.get("explain")
    raw = {**raw, "explain": {**(explain if isinstance(explain, Mapping) else {}), "profile": bool(a.profile)}}
    campaign = parse_campaign(raw, base=path.parent if path else Path.cwd(), source=path)
    if campaign.metric.threshold.scale == MEASURED:
        raise UserError("metric.threshold: measured is sized from a search's endpoints; verify asks about a change "
                        "of a given size, e.g. -10%")
    check_revisions(campaign.repository, commit, a.revert_on)
    preflight(campaign)
    boots = a.boots or max(4, campaign.boots_per_commit)
    return campaign, VerifySpec(BisectSpec.of(raw, campaign), commit, a.revert_on or "", boots)


def run(a: argparse.Namespace) -> int:
    from orchestrator.kinds.run import execute
    from orchestrator.kinds.table import record
    from orchestrator.store import Store

    campaign, spec = checked(a)
    store = Store(a.store)
    return execute(store, record(store, campaign.name, spec), uri=a.uri)
