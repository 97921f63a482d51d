"""A Comparison as one self-contained HTML page: variants, verdict, per primary metric a line
plot over the sweep and every run's value, host CPU per vCPU, and the full mmtests-like table."""

from __future__ import annotations

import math
import re
import statistics
from html import escape

from scipy import stats as sps

from orchestrator.metrictable.cells import Cell, Comparison, Row
from orchestrator.metrictable.tabulate import runs_per_boot
from orchestrator.render import palette
from orchestrator.render.page import page, table
from orchestrator.render.svg import bar_plot, line_plot, strip_plot

VCPU_METRIC = re.compile(r"host_vcpu_used\.(\d+)")
STATS = ("mean", "min", "stddev", "CoV", "max", "boots")
BETTER = {"higher": "higher is better", "lower": "lower is better", "none": "descriptive"}


def render_html(c: Comparison) -> str:
    colours = palette.assign(v.name for v in c.variants)
    parts = [_summary(c)]
    for metric in _plotted(c):
        parts.append(f"<h2>{escape(metric)}</h2>")
        parts.append(_sweep_figure(c, metric, colours))
        parts.append(_runs_figure(c, metric, colours))
    parts.append(_vcpu_figure(c, colours))
    parts.append("<h2>All metrics</h2><p>Per metric and point each variant's summary over its runs; "
                 f"the change is against the baseline {escape(c.variants[0].name)} in percent of its value, "
                 "signed so that + is better (plain change where a metric has no better direction: descriptive). "
                 "<strong>*</strong> and highlight: the change of the mean is significant; q is the "
                 "Benjamini-Hochberg adjusted p-value.</p>")
    parts.append(_full_table(c))
    return page(c.title, "\n".join(p for p in parts if p))


def _summary(c: Comparison) -> str:
    variants = table(["variant", "description"],
                     [[v.name + (" (baseline)" if i == 0 else ""), v.description] for i, v in enumerate(c.variants)])
    verdict = "".join(f"<li>{escape(s)}</li>" for s in c.verdict)
    notes = "".join(f"<p><strong>Note:</strong> {escape(n)}</p>" for n in c.notes)
    bisect = ("<h2>Bisect</h2><pre>" + "\n".join(escape(b) for b in c.bisect) + "</pre>") if c.bisect else ""
    return (f"<p>Workload {escape(c.workload)}.</p>{variants}<h2>Verdict</h2><ul>{verdict}</ul>{bisect}{notes}"
            f"<p>Test: {escape(c.test)} (alpha {c.alpha:g}).</p>")


def _plotted(c: Comparison) -> tuple[str, ...]:
    return c.primary or ((c.rows[0].metric,) if c.rows else ())


def _label(metric: str, unit: str) -> str:
    return f"{metric} ({unit})" if unit else metric


def _rows(c: Comparison, metric: str) -> list[Row]:
    return [r for r in c.rows if r.metric == metric]


def _cell(row: Row, variant: str) -> Cell | None:
    return next((cell for cell in row.cells if cell.variant == variant), None)


def _mean_ci(cell: Cell) -> tuple[float, float]:
    """The 95 % confidence interval of the mean from Student's t over the boots (the runs of
    one boot are not independent: the interval uses the runs' spread but boots - 1 degrees of
    freedom and the boots' count); the mean itself for one boot."""
    s = cell.summary
    n = min(cell.boots or s.n, s.n)
    if n < 2:
        return s.mean, s.mean
    half = float(sps.t.ppf(0.975, n - 1)) * s.stddev / math.sqrt(n)
    return s.mean - half, s.mean + half


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def _sweep_figure(c: Comparison, metric: str, colours: dict[str, str]) -> str:
    swept = [(r.x, r) for r in _rows(c, metric) if r.x is not None]
    if not swept:
        return ""
    series = []
    for v in c.variants:
        cells = [(x, cell) for x, r in swept if (cell := _cell(r, v.name)) is not None]
        if cells:
            series.append((v.name, [(x, cell.summary.mean, *_mean_ci(cell)) for x, cell in cells]))
    svg = line_plot(series, c.swept or "sweep", _label(metric, swept[0][1].unit), f"{metric}: mean over the sweep",
                    colours)
    return _figure(svg, f"Mean of {metric} per variant at each {c.swept or 'sweep'} point; error bars: 95% "
                        "confidence interval of the mean (Student's t over the boots, boots-1 degrees of freedom), "
                        "none for one boot.")


def _runs_figure(c: Comparison, metric: str, colours: dict[str, str]) -> str:
    rows = _rows(c, metric)
    groups = [(r.point or v.name, v.name, c.samples.get(v.name, {}).get(r.point, {}).get(metric, []))
              for r in rows for v in c.variants]
    if not any(values for _, _, values in groups):
        return ""
    svg = strip_plot(groups, _label(metric, rows[0].unit), f"{metric}: every run",
                     x_label=c.swept or "", colours=colours)
    return _figure(svg, f"Every run's {metric}: one dot per run, a dark bar at each variant's median.")


def _points(c: Comparison) -> list[str]:
    from_rows = list(dict.fromkeys(r.point for r in c.rows))
    return from_rows or list(next(iter(c.samples.values()), {}))


def _vcpu_figure(c: Comparison, colours: dict[str, str]) -> str:
    points = _points(c)
    if not points:
        return ""
    first = points[0]
    per_variant = {v.name: c.samples.get(v.name, {}).get(first, {}) for v in c.variants}
    vcpus = sorted({int(m.group(1)) for metrics in per_variant.values() for name in metrics
                    if (m := VCPU_METRIC.fullmatch(name))})
    if not vcpus:
        return ""
    series = []
    for name, metrics in per_variant.items():
        runs = [metrics.get(f"host_vcpu_used.{n}", []) for n in vcpus]
        if any(runs):
            series.append((name, [statistics.fmean(r) if r else 0.0 for r in runs],
                           [statistics.stdev(r) if len(r) > 1 else 0.0 for r in runs]))
    unit = next((r.unit for r in c.rows if VCPU_METRIC.fullmatch(r.metric)), "")
    where = f" at {first}" if first else ""
    svg = bar_plot([f"vCPU {n}" for n in vcpus], series, _label("host CPU used", unit),
                   f"host CPU used per vCPU{where}", colours)
    return ("<h2>Host CPU per vCPU</h2>"
            + _figure(svg, f"Mean host CPU use of each vCPU thread{where}; whiskers: +- one standard deviation "
                           "over the runs."))


def _num(v: float) -> str:
    return f"{v:.2f}" if abs(v) >= 100 or v == 0 else f"{v:.4g}"


def _stat(cell: Cell, stat: str) -> str:
    s = cell.summary
    if stat == "CoV":
        return f"{100 * s.cov:.2f}%"
    if stat == "boots":
        return runs_per_boot(cell)
    return _num({"mean": s.mean, "min": s.min, "stddev": s.stddev, "max": s.max}[stat])


def _change(row: Row, cell: Cell | None) -> str:
    if cell is None or cell.diff_pct is None:
        return "-"
    text = f"{cell.diff_pct:+.2f}%"
    if row.direction == "none":
        text += " (descriptive)"
    return text + (" *" if cell.significant else "")


def _ordered_rows(c: Comparison) -> list[Row]:
    rank = {m: i for i, m in enumerate(c.primary)}
    return sorted(c.rows, key=lambda r: rank.get(r.metric, len(rank)))


def _full_table(c: Comparison) -> str:
    base, others = c.variants[0].name, [v.name for v in c.variants[1:]]
    headers = ["metric", "point", "statistic", base] + [h for o in others for h in (o, f"{o} vs {base}")]
    rows: list[list[str]] = []
    classes: list[list[str]] = []
    for row in _ordered_rows(c):
        block_rows, block_classes = _block(row, base, others)
        rows += block_rows
        classes += block_classes
    return table(headers, rows, classes)


def _block(row: Row, base: str, others: list[str]) -> tuple[list[list[str]], list[list[str]]]:
    """One metric at one point: a line per statistic (and q when there is something to compare),
    the first with a rule above it."""
    cells = {name: _cell(row, name) for name in [base, *others]}
    texts, classes = [], []
    for i, stat in enumerate(STATS + ("q",) if others else STATS):
        edge = "first" if i == 0 else ""
        lead = _label(row.metric, row.unit) if i == 0 else BETTER.get(row.direction, "") if i == 1 else ""
        text = [lead, row.point if i == 0 else "", stat, _value(cells[base], stat)]
        cls = [_cls(edge, "quiet" if i else ""), edge, _cls(edge, "quiet"), _cls(edge, "num")]
        for o in others:
            cell = cells[o]
            sig = "sig" if stat == "mean" and cell is not None and cell.significant else ""
            text += [_value(cell, stat), _other_change(row, cell, stat)]
            cls += [_cls(edge, sig, "num")] * 2
        texts.append(text)
        classes.append(cls)
    return texts, classes


def _cls(*names: str) -> str:
    return " ".join(n for n in names if n)


def _value(cell: Cell | None, stat: str) -> str:
    if stat == "q":
        return ""
    return "-" if cell is None else _stat(cell, stat)


def _other_change(row: Row, cell: Cell | None, stat: str) -> str:
    if stat == "mean":
        return _change(row, cell)
    if stat == "q" and cell is not None:
        return "-" if cell.q_value is None else f"q={cell.q_value:.3g}"
    return ""
