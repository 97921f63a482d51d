"""One metric of a table in the mmtests compare layout: Min, Amean, Stddev, CoeffVar, Max per
sweep point; each variant's value with its difference to the baseline in percent, `*` around
significant ones; then the boots the runs came from, the unit of the test."""

from __future__ import annotations

from orchestrator.metrictable.cells import Cell, Comparison
from orchestrator.metrictable.tabulate import signed_diff

STATS = ("Min", "Amean", "Stddev", "CoeffVar", "Max")
LABEL_W, VALUE_W = 10, 12


def number(x: float) -> str:
    """Two decimals like mmtests; four significant digits below 1 so CPU-seconds stay readable."""
    return f"{x:.2f}" if abs(x) >= 1 or x == 0 else f"{x:.4g}"


def _stat(cell: Cell, stat: str) -> float:
    s = cell.summary
    return {"Min": s.min, "Amean": s.mean, "Stddev": s.stddev, "CoeffVar": 100 * s.cov, "Max": s.max}[stat]


def _diff(base: Cell, cell: Cell, stat: str, direction: str) -> float | None:
    if stat == "Amean":
        return cell.diff_pct
    # spread is better smaller, whatever the metric's direction
    return signed_diff(_stat(base, stat), _stat(cell, stat), "lower" if stat in ("Stddev", "CoeffVar") else direction)


def _entry(value: float, diff: float | None, significant: bool) -> str:
    shown = diff if diff is None or round(diff, 2) != 0 else 0.0  # no "-0.00%"
    pct = "n/a" if shown is None else f"{shown:.2f}%"
    return f"{number(value):>{VALUE_W}} " + (f"*{pct:>8}*" if significant else f"({pct:>8})")


def _better(direction: str) -> str:
    return {"higher": "higher is better", "lower": "lower is better"}.get(direction, "descriptive")


def metric_block(c: Comparison, metric: str) -> list[str]:
    rows = [r for r in c.rows if r.metric == metric]
    if not rows:
        return []
    first = rows[0]
    point_w = max([len(r.point) for r in rows] + [1])
    width = VALUE_W + 11
    out = [f"{metric} ({first.unit + ', ' if first.unit else ''}{_better(first.direction)})",
           " " * (LABEL_W + point_w + 1) + "".join(f"{v.name[:width - 1]:>{width}}" for v in c.variants)]
    for row in rows:
        base = next((x for x in row.cells if x.variant == c.variants[0].name), None)
        for stat in STATS:
            line = f"{stat:<{LABEL_W}}{row.point:<{point_w}} "
            for v in c.variants:
                cell = next((x for x in row.cells if x.variant == v.name), None)
                if cell is None:
                    line += f"{'-':>{width}}"
                    continue
                diff = 0.0 if cell is base else (_diff(base, cell, stat, row.direction) if base else None)
                line += _entry(_stat(cell, stat), diff, stat == "Amean" and cell.significant)
            out.append(line.rstrip())
        if any(x.boots for x in row.cells):
            line = f"{'Boots':<{LABEL_W}}{row.point:<{point_w}} "
            for v in c.variants:
                cell = next((x for x in row.cells if x.variant == v.name), None)
                line += f"{cell.boots if cell is not None else '-':>{VALUE_W}}" + " " * (width - VALUE_W)
            out.append(line.rstrip())
    return out
