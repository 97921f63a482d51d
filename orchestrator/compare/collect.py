"""A stored comparison back into a Comparison: every kept run, grouped by variant, sweep
point and metric, with the boot it was taken in (the unit of the comparison's test); metric
units and directions from the workload's definitions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from orchestrator.compare.plan import ComparePlan
from orchestrator.metrictable import tabulate
from orchestrator.metrictable.cells import Comparison, VariantInfo
from orchestrator.workloads import clock
from orchestrator.workloads.runner import metric_def
from orchestrator.workloads.system import METRICS

if TYPE_CHECKING:
    from orchestrator.store import Store

Samples = dict[str, dict[str, dict[str, list[float]]]]
BootIds = dict[str, dict[str, dict[str, list[int]]]]


def stored_runs(store: Store, campaign_id: int) -> list[dict[str, Any]]:
    """Each stored run's `raw` with the id of the boot that took it."""
    return [{**r.raw, "boot_id": r.boot_id} for r in store.runs(campaign_id)]


def group_samples(runs: Iterable[Mapping[str, Any]]) -> Samples:
    """`raw` of each stored run -> samples[variant][point label][metric], in the order taken."""
    return _group(runs)[0]


def _group(runs: Iterable[Mapping[str, Any]]) -> tuple[Samples, BootIds | None]:
    """Samples and, when every run names its boot (stored_runs), the boot of each sample."""
    out: Samples = {}
    ids: BootIds = {}
    for raw in runs:
        per_metric = out.setdefault(raw["variant"], {}).setdefault(raw["point"], {})
        per_boot = ids.setdefault(raw["variant"], {}).setdefault(raw["point"], {})
        for name, metric in raw["result"]["metrics"].items():
            per_metric.setdefault(name, []).append(float(metric["value"]))
            per_boot.setdefault(name, []).append(raw.get("boot_id", -1))
    known = all(i != -1 for per_point in ids.values() for per_metric in per_point.values()
                for values in per_metric.values() for i in values)
    return out, (ids if known else None)


def run_host(raw: Mapping[str, Any]) -> str:
    """The lab host a stored run was measured on (runs stored before labs: this machine)."""
    return str(raw["result"].get("lab_host") or "local")


def comparison(plan: ComparePlan, runs: Iterable[Mapping[str, Any]]) -> Comparison:
    """The comparison of the runs the last host measured: a comparison that moved on from a
    failed host keeps that host's runs in the store but never compares them with another's."""
    stored = list(runs)
    host = run_host(stored[-1]) if stored else "local"
    kept = [raw for raw in stored if run_host(raw) == host]
    samples, boots = _group(kept)
    defined = {**plan.workload.metrics, **METRICS}
    names = dict.fromkeys(n for per_point in samples.values() for per_metric in per_point.values()
                          for n in per_metric)
    order = [*plan.workload.metrics, *METRICS] + sorted(n for n in names if n not in defined)
    metrics = {}
    for n in order:
        if n in names and (plan.all_metrics or n in defined):
            d = metric_def(plan.workload, n)
            metrics[n] = tabulate.MetricMeta(d.unit, d.direction)
    measured = {raw["variant"]: raw["kernel"] for raw in kept}
    variants = [VariantInfo(v.name, ", ".join([measured.get(v.name) or v.source(), *v.settings()]))
                for v in plan.variants]
    notes = sorted({n for raw in kept for n in raw["result"].get("notes", [])})
    spans = {v.name: [clock.of_run(raw["result"].get("snapshots") or ()) for raw in kept if raw["variant"] == v.name]
             for v in plan.variants}
    if line := clock.sides_note(spans):
        notes.append(line)
    if host != "local":
        notes.append(f"measured on lab host {host}")
    for other, count in sorted(Counter(run_host(raw) for raw in stored if run_host(raw) != host).items()):
        notes.append(f"{count} run(s) measured on host {other} before it failed are kept but not compared")
    return tabulate.build(plan.title, plan.workload_label, plan.swept, variants, [p.point for p in plan.points],
                       metrics, samples, plan.primary, plan.alpha, notes, boots)
