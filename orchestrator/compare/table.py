"""From samples to a Comparison: summaries per variant, signed differences against the
baseline, significance by a proper test with the false discovery rate controlled, and the
verdict sentences. Pure: the runner and the store feed it, the renderers show it.

Differences follow mmtests: in percent of the baseline's mean, signed so that + is better
(for a lower-is-better metric a drop is +). Significance: two-sided Mann-Whitney U per cell;
p-values are Benjamini-Hochberg adjusted within two families, the primary metrics (the ones
asked about) and all the others, and a cell is significant when q < alpha.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.compare.model import Cell, Comparison, Row, VariantInfo
from orchestrator.stats import benjamini_hochberg, detectable_change, mann_whitney_p, summarize

TEST = "two-sided Mann-Whitney U against the baseline, Benjamini-Hochberg q < {alpha} within primary and other metrics"

MIN_RANK_RUNS = 4  # with 3 against 3 the smallest two-sided Mann-Whitney p is 0.1


@dataclass(frozen=True)
class MetricMeta:
    unit: str
    direction: str  # higher, lower, none


@dataclass(frozen=True)
class Point:
    label: str  # "" without a sweep
    x: float | None


def signed_diff(base: float, value: float, direction: str) -> float | None:
    """Percent change of `value` against `base`, + meaning better (plain change for `none`)."""
    if base == 0:
        return None
    change = (value - base) / abs(base) * 100.0
    return -change if direction == "lower" else change


def build(
    title: str,
    workload: str,
    swept: str | None,
    variants: Sequence[VariantInfo],
    points: Sequence[Point],
    metrics: Mapping[str, MetricMeta],
    samples: Mapping[str, Mapping[str, Mapping[str, list[float]]]],
    primary: Sequence[str],
    alpha: float = 0.05,
    notes: Sequence[str] = (),
) -> Comparison:
    """`samples[variant][point label][metric]` -> values. Rows for every metric in `metrics`
    order that has a non-zero value somewhere; primary metrics first."""
    base = variants[0].name
    shown = [m for m in (*primary, *(m for m in metrics if m not in primary)) if m in metrics and _nonzero(
        samples, m)]
    drafts: list[tuple[str, Point, list[tuple[str, list[float]]]]] = []
    for metric in shown:
        for point in points:
            per_variant = [(v.name, samples.get(v.name, {}).get(point.label, {}).get(metric, [])) for v in variants]
            if any(values for _n, values in per_variant):
                drafts.append((metric, point, per_variant))
    pvals = {(metric, point.label, name): mann_whitney_p(dict(pv)[base], values)
             for metric, point, pv in drafts for name, values in pv if name != base}
    qvals: dict[tuple[str, str, str], float] = {}
    for family in (True, False):
        keys = [k for k, p in pvals.items() if p is not None and (k[0] in primary) == family]
        qvals.update(zip(keys, benjamini_hochberg([pvals[k] for k in keys])))  # type: ignore[misc]
    rows = []
    for metric, point, per_variant in drafts:
        meta = metrics[metric]
        base_values = dict(per_variant)[base]
        cells = []
        for name, values in per_variant:
            if not values:
                continue
            s = summarize(values)
            if name == base or not base_values:
                cells.append(Cell(name, s, statistics.median(values), None, None, None, False))
                continue
            diff = signed_diff(summarize(base_values).mean, s.mean, meta.direction)
            key = (metric, point.label, name)
            q = qvals.get(key)
            cells.append(Cell(name, s, statistics.median(values), diff, pvals[key], q,
                              q is not None and q < alpha and bool(diff)))
        rows.append(Row(metric, meta.unit, meta.direction, point.label, point.x, tuple(cells)))
    fewest = min((x.summary.n for r in rows for x in r.cells), default=0)
    if 0 < fewest < MIN_RANK_RUNS:
        notes = (*notes, f"some cells have only {fewest} run(s): a two-sided rank test cannot reach significance "
                         f"with fewer than {MIN_RANK_RUNS} runs per variant, so none is marked there")
    draft = Comparison(title, workload, swept, tuple(variants), tuple(rows), alpha, TEST.format(alpha=alpha),
                            (), tuple(notes), {k: {p: dict(m) for p, m in v.items()} for k, v in samples.items()},
                            tuple(m for m in primary if m in shown))
    return dataclasses.replace(draft, verdict=verdict(draft))


def _nonzero(samples: Mapping[str, Mapping[str, Mapping[str, list[float]]]], metric: str) -> bool:
    return any(v != 0 for per_point in samples.values() for per_metric in per_point.values()
               for v in per_metric.get(metric, []))


def _pct(diff: float | None) -> str:
    return "n/a" if diff is None else f"{diff:+.1f}%"


def _judge(diff: float | None, direction: str) -> str:
    if direction == "none" or diff is None:
        return "(descriptive)"
    return "better" if diff > 0 else "worse"


def verdict(c: Comparison) -> tuple[str, ...]:
    """Sentences a reader needs first: per variant and primary metric what changed significantly,
    or that nothing did (with the change this many runs could have detected); then the other
    metrics' significant changes, so trade-offs show."""
    base = c.variants[0].name
    out = []
    for v in c.variants[1:]:
        for metric in c.primary:
            rows = [r for r in c.rows if r.metric == metric]
            cells = [(r, x) for r in rows for x in [_cell(r, v.name)] if x is not None and x.diff_pct is not None]
            if not cells:
                continue
            sig = [(r, x) for r, x in cells if x.significant]
            where = "" if not c.swept else f" at {len(sig)} of {len(cells)} points"
            if sig:
                parts = [f"{r.point + ': ' if r.point else ''}{_pct(x.diff_pct)} {_judge(x.diff_pct, r.direction)} "
                         f"(q={x.q_value:.3g})" for r, x in sig]
                out.append(f"{metric}: {v.name} differs significantly from {base}{where}: " + "; ".join(parts) + ".")
            else:
                r, x = max(cells, key=lambda rx: abs(rx[1].diff_pct or 0.0))
                b = _cell(r, base)
                cov = max(x.summary.cov, b.summary.cov if b else 0.0)
                n = min(x.summary.n, b.summary.n if b else 0)
                floor = detectable_change(cov, n, c.alpha)
                detect = (f"; at CoV {100 * cov:.1f}% with n={n} per variant only changes above about "
                          f"{round(100 * floor, 1):g}% "
                          f"are reliably detected" if floor is not None else "")
                out.append(f"{metric}: no significant difference between {v.name} and {base}"
                           f"{' at any point' if c.swept else ''} (largest change {_pct(x.diff_pct)}"
                           f"{' at ' + r.point if r.point else ''}){detect}.")
        others = sorted(((r, x) for r in c.rows if r.metric not in c.primary
                         for x in [_cell(r, v.name)] if x is not None and x.significant),
                        key=lambda rx: -abs(rx[1].diff_pct or 0.0))
        if others:
            listed = [f"{r.metric}{' (' + r.point + ')' if r.point else ''} {_pct(x.diff_pct)} "
                      f"{_judge(x.diff_pct, r.direction)}" for r, x in others[:8]]
            more = f" and {len(others) - 8} more" if len(others) > 8 else ""
            out.append(f"Other significant changes, {v.name} against {base}: " + ", ".join(listed) + more + ".")
    return tuple(out)


def _cell(row: Row, variant: str) -> Cell | None:
    return next((x for x in row.cells if x.variant == variant), None)
