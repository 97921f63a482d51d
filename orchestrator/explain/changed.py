"""Everything that changed, parent against culprit: for every metric recorded on the runs of the
confirmation's boots (the workload's own and secondary metrics, the system metrics, each vCPU's
and each disk's), both sides' means, the change, each side's noise and whether the change is
significant, sorted by evidence. Pure: orchestrator/explain/gather.py feeds it the runs.

The boot is the unit, as in every decision: a boot's value of a metric is the mean of its runs,
a side's mean the mean of its boots' values, its CoV their standard deviation over that mean.
The test is `vmbisect compare`'s (orchestrator/metrictable/tabulate.py, statistics from
orchestrator/stats.py): a two-sided Welch t-test on the boot values, Benjamini-Hochberg
adjusted within two families (the bisected metric alone, and all the others), significant when
q < alpha. Many metrics are tested at once, so a row without the flag is "not shown by these
boots", never "unchanged"."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.direction import Direction
from orchestrator.metrictable.cells import Cell, VariantInfo
from orchestrator.metrictable.tabulate import MetricMeta, Point, build
from orchestrator.stats import relative_change

PARENT, CULPRIT = "parent", "culprit"
TEST = ("two-sided Welch t-test on the boot values, Benjamini-Hochberg q < {alpha} within the bisected metric and "
        "within all the others")


@dataclass(frozen=True)
class RunRecord:
    """One stored run: the boot that took it (the store's boot id), its commit, and its
    metrics as name -> (value, unit, direction)."""

    boot: int
    commit: str
    metrics: Mapping[str, tuple[float, str, str]]


@dataclass(frozen=True)
class SideStats:
    """One side of a row: the mean of its boots' values, their CoV (a fraction), the boots."""

    mean: float
    cov: float
    boots: int


@dataclass(frozen=True)
class ChangedRow:
    metric: str
    unit: str
    direction: str  # higher, lower or none
    parent: SideStats | None  # None: the metric was not recorded on that side's runs
    culprit: SideStats | None
    change_pct: float | None  # (culprit - parent) / |parent| in percent, unsigned by direction
    p: float | None  # None: too few boots to test
    q: float | None
    significant: bool
    headline: bool  # the bisected metric

    @property
    def judged(self) -> str:
        """"better", "worse", or "" (a descriptive metric, or no change)."""
        if self.direction == "none" or not self.change_pct:
            return ""
        return "better" if Direction(self.direction).better(self.change_pct) else "worse"


@dataclass(frozen=True)
class Changed:
    parent: str
    culprit: str
    parent_boots: int
    culprit_boots: int
    runs: int
    alpha: float
    test: str  # how significance was decided, one line
    rows: tuple[ChangedRow, ...]  # sorted by evidence: significant first, then by q, then by size

    @property
    def significant(self) -> tuple[ChangedRow, ...]:
        return tuple(r for r in self.rows if r.significant)


def boot_values(runs: Iterable[RunRecord], commit: str) -> tuple[dict[str, list[float]], dict[str, tuple[str, str]]]:
    """Per metric, one value per boot of `commit` (the mean of that boot's runs), in boot order;
    and each metric's unit and direction as the runs recorded them."""
    by_boot: dict[str, dict[int, list[float]]] = {}
    meta: dict[str, tuple[str, str]] = {}
    for run in sorted(runs, key=lambda r: r.boot):
        if run.commit != commit:
            continue
        for name, (value, unit, direction) in run.metrics.items():
            if math.isfinite(value):
                by_boot.setdefault(name, {}).setdefault(run.boot, []).append(value)
                meta.setdefault(name, (unit, direction))
    return {m: [statistics.fmean(v) for v in boots.values()] for m, boots in by_boot.items()}, meta


def changed(parent: str, culprit: str, runs: Iterable[RunRecord], headline: str, alpha: float = 0.05) -> Changed:
    """Every metric of the runs of `parent` and `culprit` compared (see the module's text)."""
    runs = list(runs)
    pv, pmeta = boot_values(runs, parent)
    cv, cmeta = boot_values(runs, culprit)
    meta = {**cmeta, **pmeta}
    names = [headline] if headline in meta else []
    names += sorted(m for m in meta if m != headline)
    comparison = build(f"{parent[:12]} against {culprit[:12]}", "", None,
                       [VariantInfo(PARENT, parent), VariantInfo(CULPRIT, culprit)], [Point("", None)],
                       {m: MetricMeta(*meta[m]) for m in names},
                       {PARENT: {"": pv}, CULPRIT: {"": cv}}, names[:1], alpha)
    rows = []
    for row in comparison.rows:
        cells = {c.variant: c for c in row.cells}
        p, c = cells.get(PARENT), cells.get(CULPRIT)
        change = relative_change(p.summary.mean, c.summary.mean) * 100 if p and c else None
        rows.append(ChangedRow(row.metric, row.unit, row.direction, _side(p), _side(c),
                               change if change is not None and math.isfinite(change) else None,
                               c.p_value if c and p else None, c.q_value if c and p else None,
                               bool(c and p and c.significant), row.metric == headline))
    rows.sort(key=evidence_order)
    return Changed(parent, culprit, len({r.boot for r in runs if r.commit == parent}),
                   len({r.boot for r in runs if r.commit == culprit}),
                   sum(1 for r in runs if r.commit in (parent, culprit)), alpha, TEST.format(alpha=alpha),
                   tuple(rows))


def evidence_order(row: ChangedRow) -> tuple[bool, float, float, str]:
    """Significant rows first, then the smallest q (the strongest evidence), then the largest
    change; rows that could not be tested last."""
    return (not row.significant, row.q if row.q is not None else 2.0, -abs(row.change_pct or 0.0), row.metric)


def _side(cell: Cell | None) -> SideStats | None:
    return None if cell is None else SideStats(cell.summary.mean, cell.summary.cov, cell.summary.n)
