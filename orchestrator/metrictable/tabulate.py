"""From samples to a Comparison: summaries per variant, signed differences against the
baseline, significance by a proper test with the false discovery rate controlled, and the
verdict sentences. Pure: the runner and the store feed it, the renderers show it.

Differences follow mmtests: in percent of the baseline's mean, signed so that + is better
(for a lower-is-better metric a drop is +). Significance: the boot is the unit, as in a
bisection (orchestrator.stats.compare_runs): the runs of one boot are averaged into the boot's
level; variants with guests of their own are compared by Welch's t-test on those levels,
variants that ran in the same guests (a setting switched between runs, A B B A) by a paired
t-test on each boot's difference. p-values are Benjamini-Hochberg adjusted within two
families, the primary metrics (the ones asked about) and all the others, and a cell is
significant when q < alpha. The verdict states each change as tested (boot levels, with its
95% interval and the boots it rests on).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from orchestrator.metrictable.cells import Cell, Comparison, Row, VariantInfo
from orchestrator.stats import TwoSample, benjamini_hochberg, compare_runs, summarize

TEST = ("two-sided t-test against the baseline with the boot as the unit: Welch on boot means, paired by boot "
        "for variants that share a guest; Benjamini-Hochberg q < {alpha} within primary and other metrics")

MIN_BOOTS = 2  # a test needs two boots per side (two shared boots when paired)

Samples = Mapping[str, Mapping[str, Mapping[str, list[float]]]]
BootIds = Mapping[str, Mapping[str, Mapping[str, list[int]]]]


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


Key = tuple[str, str, str]  # metric, point label, variant
Draft = tuple[str, Point, list[tuple[str, list[float]]]]  # a row's metric and point, each variant's values


def build(
    title: str,
    workload: str,
    swept: str | None,
    variants: Sequence[VariantInfo],
    points: Sequence[Point],
    metrics: Mapping[str, MetricMeta],
    samples: Samples,
    primary: Sequence[str],
    alpha: float = 0.05,
    notes: Sequence[str] = (),
    boots: BootIds | None = None,
) -> Comparison:
    """`samples[variant][point label][metric]` -> values; `boots`, the same shape, names the
    boot each value was taken in (variants that ran in one guest share its id). Without
    `boots` every value is a boot of its own (the caller passes boot means). Rows for every
    metric in `metrics` order that has a non-zero value somewhere; primary metrics first."""
    base = variants[0].name
    shown = [m for m in (*primary, *(m for m in metrics if m not in primary)) if m in metrics and _nonzero(
        samples, m)]
    drafts = _drafts(shown, points, variants, samples)
    grouped = {(metric, point.label, name): by_boot(values, _ids(boots, name, point.label, metric, len(values)))
               for metric, point, pv in drafts for name, values in pv}
    tests = {(metric, point.label, name): compare_runs(grouped[(metric, point.label, base)],
                                                         grouped[(metric, point.label, name)])
             for metric, point, pv in drafts for name, values in pv if name != base and values}
    pvals = {k: (t.p if t is not None else None) for k, t in tests.items()}
    qvals = _adjusted(pvals, primary)
    rows = [_row(d, metrics[d[0]], base, grouped, tests, pvals, qvals, alpha) for d in drafts]
    untested = sorted({x.variant for r in rows for x in r.cells if x.diff_pct is not None and x.tested is None})
    if untested:
        notes = (*notes, f"cells of {', '.join(untested)} have too few boots to test: a test needs {MIN_BOOTS} boots "
                         f"per variant, or {MIN_BOOTS} boots that ran both variants when they share a guest (the runs "
                         "of one boot are not independent samples), so none is marked there")
    draft = Comparison(title, workload, swept, tuple(variants), tuple(rows), alpha, TEST.format(alpha=alpha),
                            (), tuple(notes), {k: {p: dict(m) for p, m in v.items()} for k, v in samples.items()},
                            tuple(m for m in primary if m in shown))
    return dataclasses.replace(draft, verdict=verdict(draft))


def _drafts(shown: Sequence[str], points: Sequence[Point], variants: Sequence[VariantInfo],
            samples: Samples) -> list[Draft]:
    """Each row to be: its metric and point with every variant's values, when any has some."""
    drafts: list[Draft] = []
    for metric in shown:
        for point in points:
            per_variant = [(v.name, samples.get(v.name, {}).get(point.label, {}).get(metric, [])) for v in variants]
            if any(values for _n, values in per_variant):
                drafts.append((metric, point, per_variant))
    return drafts


def _adjusted(pvals: Mapping[Key, float | None], primary: Sequence[str]) -> dict[Key, float]:
    """Benjamini-Hochberg q-values within two families: the primary metrics and the others."""
    qvals: dict[Key, float] = {}
    for family in (True, False):
        keys = [k for k, p in pvals.items() if p is not None and (k[0] in primary) == family]
        qvals.update(zip(keys, benjamini_hochberg([pvals[k] for k in keys])))  # type: ignore[misc]
    return qvals


def _row(draft: Draft, meta: MetricMeta, base: str, grouped: Mapping[Key, Mapping[Hashable, list[float]]],
         tests: Mapping[Key, TwoSample | None], pvals: Mapping[Key, float | None], qvals: Mapping[Key, float],
         alpha: float) -> Row:
    """One row: each variant's cell, its difference against the baseline and whether it is
    significant."""
    metric, point, per_variant = draft
    base_values = dict(per_variant)[base]
    cells = []
    for name, values in per_variant:
        if not values:
            continue
        s = summarize(values)
        key = (metric, point.label, name)
        n_boots = len(grouped[key])
        if name == base or not base_values:
            cells.append(Cell(name, s, statistics.median(values), None, None, None, False, n_boots))
            continue
        diff = signed_diff(summarize(base_values).mean, s.mean, meta.direction)
        q = qvals.get(key)
        t = tests.get(key)
        cells.append(Cell(name, s, statistics.median(values), diff, pvals.get(key), q,
                          q is not None and q < alpha and bool(diff) and t is not None and t.change != 0,
                          n_boots, t))
    return Row(metric, meta.unit, meta.direction, point.label, point.x, tuple(cells))


def _ids(boots: BootIds | None, variant: str, point: str, metric: str, n: int) -> list[Hashable]:
    """The boot of each of a cell's values; without boot ids, one boot per value, never shared."""
    ids = (boots or {}).get(variant, {}).get(point, {}).get(metric)
    return list(ids) if ids is not None and len(ids) == n else [(variant, i) for i in range(n)]


def by_boot(values: Sequence[float], ids: Sequence[Hashable]) -> dict[Hashable, list[float]]:
    out: dict[Hashable, list[float]] = {}
    for boot, value in zip(ids, values):
        out.setdefault(boot, []).append(value)
    return out


def runs_per_boot(cell: Cell) -> str:
    """"5 boots x 3 runs" (or "... x 1-3 runs" when boots had different counts)."""
    if not cell.boots:
        return f"{cell.summary.n} runs"
    per = cell.summary.n / cell.boots
    runs = f"{per:g} run{'s' if per != 1 else ''}" if per.is_integer() else f"{cell.summary.n} runs in all"
    return f"{cell.boots} boot{'s' if cell.boots != 1 else ''} x {runs}"


def tested_change(t: TwoSample, direction: str, q: float | None) -> str:
    """The change as tested, signed as the table signs it (+ is better): "-50.0% worse (boot
    means, 95% CI -51.7%..-48.2%, 5+5 boots, q=5.6e-11)"."""
    sign = -1 if direction == "lower" else 1
    lo, hi = sorted((sign * t.low * 100, sign * t.high * 100))
    boots = f"{t.n_a} boots, paired" if t.paired else f"{t.n_a}+{t.n_b} boots"
    return (f"{sign * t.change * 100:+.1f}% {_judge(sign * t.change, direction)} (boot means, 95% CI "
            f"{lo:+.1f}%..{hi:+.1f}%, {boots}{f', q={q:.3g}' if q is not None else ''})")


def _nonzero(samples: Samples, metric: str) -> bool:
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
                parts = [f"{r.point + ': ' if r.point else ''}{tested_change(x.tested, r.direction, x.q_value)}"
                         for r, x in sig if x.tested]
                out.append(f"{metric}: {v.name} differs significantly from {base}{where}: " + "; ".join(parts) + ".")
            else:
                r, x = max(cells, key=lambda rx: abs(rx[1].diff_pct or 0.0))
                t = x.tested
                detect = (f"; with {runs_per_boot(x)} per variant{' (paired by boot)' if t.paired else ''} only "
                          f"changes above about {round(100 * t.detectable(c.alpha), 1):g}% are reliably detected"
                          if t is not None and t.se > 0 else "")
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
