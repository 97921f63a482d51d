"""From a comparison's row that got worse to the bisection that finds the commit that did it.

A comparison of two commits of one repository names, for each row (metric and sweep point)
whose change is significant (compare's own test and false discovery control) and a regression,
the campaign file that bisects it: the metric and its direction, the sweep point pinned (every
swept parameter fixed to the row's value), good = the first variant's commit, bad = the
second's, the comparison's repository, kernel recipe, command line, guest and lab host, and a
threshold sized from the measured change (THRESHOLD_RULE). Pure: the comparison and its plan
in, a campaign mapping (or its YAML text) out; `commands/fromcompare.py` reads the store.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from orchestrator.compare.plan import ComparePlan
from orchestrator.direction import Direction
from orchestrator.errors import UserError
from orchestrator.measure.endpoints import THRESHOLD_RULE, threshold_for
from orchestrator.measure.endpoints import near_bound as _near
from orchestrator.metrictable.cells import Cell, Comparison, Row
from orchestrator.vm.spec import VmSpec

MAX_WATCH = 16  # campaign.MAX_WATCH


@dataclass(frozen=True)
class Moved:
    """A row whose second variant differs significantly from the first."""

    key: str  # how a command names the row: "iops", or "iops@numjobs=4" with a sweep
    row: Row
    cell: Cell

    @property
    def regressed(self) -> bool:
        """Worse, with the 95% interval of the change clear of zero on the worse side."""
        t = self.cell.tested
        if t is None or self.row.direction not in ("higher", "lower"):
            return False
        near = _near(t, self.row.direction)
        return Direction(self.row.direction).worse(near)

    def describe(self) -> str:
        t = self.cell.tested
        assert t is not None  # a significant cell was tested
        where = f" at {self.row.point}" if self.row.point else ""
        return f"{self.row.metric}{where}: {t.change:+.1%} (95% CI {t.low:+.1%}..{t.high:+.1%})"


def row_key(row: Row) -> str:
    """`metric`, or `metric@k=v` (several swept parameters: `metric@k=v,k2=v2`)."""
    return row.metric + (f"@{row.point.replace(' ', ',')}" if row.point else "")


def moved_rows(c: Comparison) -> list[Moved]:
    """The rows whose second variant's change is significant, in the table's order."""
    if len(c.variants) < 2:
        return []
    second = c.variants[1].name
    return [Moved(row_key(r), r, x) for r in c.rows for x in r.cells
            if x.variant == second and x.significant and x.tested is not None]


def bisectable(c: Comparison) -> list[Moved]:
    """The moved rows a bisection can look for: regressions of a metric with a direction."""
    return [m for m in moved_rows(c) if m.regressed]


def check_kernels(plan: ComparePlan) -> tuple[str, str]:
    """The good and bad commits: a comparison of exactly two variants, each a commit of the
    comparison's repository, with nothing else that a campaign cannot say (guest settings,
    host modules, command lines that differ)."""
    if len(plan.variants) != 2:
        raise UserError(f"variant: a bisection runs between two commits; the comparison has {len(plan.variants)} "
                        f"variants ({', '.join(v.name for v in plan.variants)})")
    for v in plan.variants:
        if not v.commit or plan.repo is None:
            raise UserError(f"variant {v.name}: kernel {v.kernel} is not a commit; a bisection needs two variants "
                            "that are commit:REV of one repository (--repo)")
        if v.modules or v.sched or v.sysfs or v.nice is not None:
            extra = [s for s in v.settings() if not s.startswith("append")]
            raise UserError(f"variant {v.name}: sets {', '.join(extra)}; a bisection boots each commit without "
                            "guest settings, so only variants that differ in their commit alone can be bisected")
    first, second = plan.variants
    if first.append != second.append:
        raise UserError(f"variant {second.name}: append {second.append!r} differs from {first.name}'s "
                        f"{first.append!r}; a bisection boots every commit with one command line")
    assert first.commit and second.commit
    return first.commit, second.commit


def choose_row(c: Comparison, key: str) -> Moved:
    """The moved row `key` names; any other key is refused with the rows that can be bisected."""
    rows = bisectable(c)
    choices = ", ".join(m.key for m in rows) or "none (no row got significantly worse)"
    found = next((m for m in rows if m.key == key), None)
    if found is not None:
        return found
    other = next((m for m in moved_rows(c) if m.key == key), None)
    if other is not None:
        why = ("has no better direction (descriptive)" if other.row.direction not in ("higher", "lower")
               else "got better, and a bisection looks for a regression")
        raise UserError(f"row: {key} {why}; rows that regressed: {choices}")
    raise UserError(f"row: {key!r} did not move significantly; rows that regressed: {choices}")


def _value(text: str) -> Any:
    """A parameter value as a campaign file writes it: a number where it is one, else text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _pinned(plan: ComparePlan, row: Row) -> dict[str, Any]:
    """The workload parameters of the row's sweep point: the fixed ones as given, each swept one
    at the row's value."""
    swept = plan.swept.split(" x ") if plan.swept else []
    params = {k: _value(v) for k, _sep, v in (p.partition("=") for p in plan.params) if k not in swept}
    point = next(p for p in plan.points if p.point.label == row.point)
    for key in swept:
        value = point.params[key]
        params[key] = value if isinstance(value, (bool, int, float)) else _value(str(value))
    return params


def guest_of(spec: VmSpec) -> dict[str, Any]:
    """A guest as the campaign file's `guest:` mapping (docs/campaign.md)."""
    d = spec.disks
    disks: dict[str, Any] = {"count": d.count, "size_mib": d.size_mib, "controller": d.controller,
                             "backing": d.backing, "cache": d.cache, "aio": d.aio, "queues": d.queues,
                             "iothreads": d.iothreads}
    if d.directory is not None:
        disks["directory"] = str(d.directory)
    if d.devices:
        disks["devices"] = list(d.devices)
    out: dict[str, Any] = {"vcpus": spec.vcpus, "memory_mib": spec.memory_mib, "machine": spec.machine}
    if spec.topology is not None:
        t = spec.topology
        out["topology"] = {"sockets": t.sockets, "cores": t.cores, "threads": t.threads}
    if spec.pinning:
        out["pinning"] = list(spec.pinning)
    return {**out, "disks": disks}


def campaign_for(c: Comparison, plan: ComparePlan, compare_id: int, key: str) -> dict[str, Any]:
    """The campaign file (as a mapping) that bisects row `key` of comparison `compare_id`."""
    good, bad = check_kernels(plan)
    moved = choose_row(c, key)
    t = moved.cell.tested
    assert t is not None and plan.repo is not None  # choose_row and check_kernels
    threshold = threshold_for(t, moved.row.direction)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"compare{compare_id}-{key}")[:64]
    recipe = [i for i in plan.recipe if not i.startswith("cc=")] or ["guest-base"]
    kernel: dict[str, Any] = {"config": recipe}
    cc = [i.removeprefix("cc=") for i in plan.recipe if i.startswith("cc=")]
    if cc:
        kernel["cc"] = cc[-1]
    metric: dict[str, Any] = {"name": moved.row.metric, "direction": moved.row.direction,
                              "threshold": f"{threshold * 100:+.1f}%"}
    watch = [m for m in c.primary if m != moved.row.metric][:MAX_WATCH]
    if watch:
        metric["watch"] = watch
    out: dict[str, Any] = {
        "name": name, "repository": str(plan.repo.absolute()), "good": good, "bad": bad,
        "workload": {"name": plan.workload_label, "params": _pinned(plan, moved.row)},
        "metric": metric, "kernel": kernel, "guest": guest_of(plan.spec), "accel": plan.accel,
    }
    if plan.variants[0].append:
        out["append"] = plan.variants[0].append
    if plan.lab is not None:
        out["lab"] = str(plan.lab)
        if plan.host is not None:
            out["host"] = plan.host
    return out


def campaign_text(c: Comparison, plan: ComparePlan, compare_id: int, key: str) -> str:
    """`campaign_for` as a campaign file, with a header that says where it came from."""
    data = campaign_for(c, plan, compare_id, key)
    moved = choose_row(c, key)
    head = (f"# From comparison {compare_id}, row {key}: {moved.describe()}.\n"
            f"# metric.threshold is {THRESHOLD_RULE} (docs/compare.md).\n")
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def bisect_commands(c: Comparison, plan: ComparePlan, compare_id: int) -> tuple[str, ...]:
    """For each row that regressed, the command that bisects it, with the change and the
    threshold; nothing when the comparison cannot be bisected (its variants are not two commits)."""
    try:
        check_kernels(plan)
    except UserError:
        return ()
    out = []
    for m in bisectable(c):
        assert m.cell.tested is not None
        threshold = threshold_for(m.cell.tested, m.row.direction)
        out.append(f"vmbisect bisect --from-compare {compare_id} {shlex.quote(m.key)}   # {m.describe()}; "
                   f"threshold {threshold * 100:+.1f}%")
    return tuple(out)


def with_commands(c: Comparison, plan: ComparePlan, compare_id: int) -> Comparison:
    """The comparison with `bisect_commands` in it, for its text and reports."""
    return dataclasses.replace(c, bisect=bisect_commands(c, plan, compare_id))
