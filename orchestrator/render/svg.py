"""Self-contained inline SVG plots (no scripts, no network): lines with error bars over a sweep,
per-run strip plots, grouped bars. Pure functions from data to an SVG string; every text is
escaped."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from html import escape

from orchestrator.render import palette
from orchestrator.render.scale import Scale, compact, is_log2_sweep, linear, log2, nice_ticks

W, H = 760, 320
LEFT, RIGHT, BOTTOM = 64, 16, 46
AXIS, GRID, TEXT = "#444444", "#e4e4e4", "#222222"

Point = tuple[float, float, float, float]  # x, mean, error bar low end, error bar high end
LineSeries = tuple[str, Sequence[Point]]
Group = tuple[str, str, Sequence[float]]  # label under the group, colour key (series name), values
Reference = tuple[str, float, str]  # legend label, y value, colour key
BarSeries = tuple[str, Sequence[float], Sequence[float] | None]  # name, value per category, +- whisker
LegendEntry = tuple[str, str, str]  # text, colour, "box" or "dash"


def line_plot(series: Sequence[LineSeries], x_label: str, y_label: str, title: str,
              colours: Mapping[str, str] | None = None) -> str:
    """One line with markers and vertical error bars per series, over a log2 x axis when the x
    values are powers of two spanning at least 8x, a linear one otherwise. Error bars whose
    ends coincide are not drawn."""
    colour = palette.assign([name for name, _ in series], colours)
    xs = sorted({p[0] for _, points in series for p in points})
    parts, top = _open(title, [(name, colour[name], "box") for name, _ in series])
    bottom, left, right = H - BOTTOM, LEFT, W - RIGHT
    y_ticks = nice_ticks(*_span([v for _, points in series for p in points for v in p[1:]]))
    y = linear(y_ticks[0], y_ticks[-1], bottom, top)
    x, x_ticks = _x_axis_scale(xs, left + 24, right - 24)
    parts += _y_axis(y_ticks, y, top, bottom, y_label)
    parts += _x_axis([(x(t), compact(t)) for t in x_ticks], bottom, x_label)
    for i, (name, points) in enumerate(series):
        dodge = (i - (len(series) - 1) / 2) * 3
        c = colour[name]
        ordered = sorted(points)
        coords = " ".join(f"{x(p[0]) + dodge:.1f},{y(p[1]):.1f}" for p in ordered)
        parts.append(f'<polyline class="series" points="{coords}" fill="none" stroke="{c}" stroke-width="2"/>')
        for px, mean, lo, hi in ordered:
            cx = x(px) + dodge
            if lo != hi:
                parts.append(_whisker(cx, y(lo), y(hi), c))
            parts.append(f'<circle class="marker" cx="{cx:.1f}" cy="{y(mean):.1f}" r="4" fill="{c}">'
                         f'<title>{escape(name)} at {compact(px)}: {compact(mean)} '
                         f'({compact(lo)}..{compact(hi)})</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def strip_plot(groups: Sequence[Group], y_label: str, title: str, x_label: str = "",
               refs: Sequence[Reference] = (), colours: Mapping[str, str] | None = None) -> str:
    """Every value as a dot (white-rimmed, so overlapping ones stay apart), jittered a little
    sideways within its group, with a short dark bar at the group's median; adjacent groups with the same label stand together under it.
    `refs` draws dashed horizontal reference lines across the plot."""
    colour = palette.assign([key for _, key, _ in groups] + [key for _, _, key in refs], colours)
    keys = list(dict.fromkeys(key for _, key, _ in groups))
    legend = [(k, colour[k], "box") for k in keys] + [(label, colour[k], "dash") for label, _, k in refs]
    parts, top = _open(title, legend)
    bottom, left, right = H - BOTTOM, LEFT, W - RIGHT
    y_ticks = nice_ticks(*_span([v for _, _, values in groups for v in values] + [v for _, v, _ in refs]))
    y = linear(y_ticks[0], y_ticks[-1], bottom, top)
    centres, unit, labels = _strip_layout([label for label, _, _ in groups], left, right)
    parts += _y_axis(y_ticks, y, top, bottom, y_label)
    parts += _x_axis(labels, bottom, x_label)
    for _label, value, key in refs:
        parts.append(f'<line class="ref" x1="{left}" x2="{right}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                     f'stroke="{colour[key]}" stroke-width="1.5" stroke-dasharray="6 4"/>')
    jitter, half_bar = min(unit * 0.25, 8.0), min(unit * 0.35, 14.0)
    for (label, key, values), cx in zip(groups, centres):
        for j, v in enumerate(values):
            dx = ((j * 0.618034) % 1.0 - 0.5) * 2 * jitter
            parts.append(f'<circle class="dot" cx="{cx + dx:.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour[key]}" '
                         f'stroke="#ffffff" stroke-width="0.8"><title>{escape(label)} ({escape(key)}): {compact(v)}</title></circle>')
        if values:
            m = y(statistics.median(values))
            parts.append(f'<line class="median" x1="{cx - half_bar:.1f}" x2="{cx + half_bar:.1f}" y1="{m:.1f}" '
                         f'y2="{m:.1f}" stroke="{TEXT}" stroke-width="2.5"/>')
    parts.append("</svg>")
    return "".join(parts)


def bar_plot(categories: Sequence[str], series: Sequence[BarSeries], y_label: str, title: str,
             colours: Mapping[str, str] | None = None) -> str:
    """Grouped bars: per category one bar per series, side by side, with an optional +-
    whisker per bar; the y axis always includes zero."""
    colour = palette.assign([name for name, _, _ in series], colours)
    parts, top = _open(title, [(name, colour[name], "box") for name, _, _ in series])
    bottom, left, right = H - BOTTOM, LEFT, W - RIGHT
    ends = [0.0] + [v + s * e for _, values, errs in series
                    for v, e in zip(values, errs or [0.0] * len(values)) for s in (-1, 1)]
    y_ticks = nice_ticks(*_span(ends))
    y = linear(y_ticks[0], y_ticks[-1], bottom, top)
    slot = (right - left) / max(1, len(categories))
    bar = slot * 0.8 / max(1, len(series))
    parts += _y_axis(y_ticks, y, top, bottom, y_label)
    parts += _x_axis([(left + slot * (i + 0.5), c) for i, c in enumerate(categories)], bottom, "")
    for k, (name, values, errs) in enumerate(series):
        c = colour[name]
        for i, v in enumerate(values):
            x0 = left + slot * i + slot * 0.1 + bar * k
            y0, y1 = sorted((y(0.0), y(v)))
            parts.append(f'<rect class="bar" x="{x0:.1f}" y="{y0:.1f}" width="{bar:.1f}" height="{y1 - y0:.1f}" '
                         f'fill="{c}"><title>{escape(name)}, {escape(categories[i])}: {compact(v)}</title></rect>')
            if errs and errs[i]:
                parts.append(_whisker(x0 + bar / 2, y(v - errs[i]), y(v + errs[i]), TEXT))
    parts.append("</svg>")
    return "".join(parts)


def _open(title: str, legend: Sequence[LegendEntry]) -> tuple[list[str], float]:
    """The root element, background, title and legend; returns them and the plot area's top."""
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
              f'role="img" aria-label="{escape(title)}" font-family="sans-serif">'),
             f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
             f'<text x="{W / 2}" y="18" font-size="14" text-anchor="middle" fill="{TEXT}">{escape(title)}</text>']
    x, row = float(LEFT), 0
    for text, colour, style in legend:
        width = 22 + 6.5 * len(text)
        if x + width > W - RIGHT and x > LEFT:
            x, row = float(LEFT), row + 1
        ly = 34 + 16 * row
        if style == "dash":
            parts.append(f'<line x1="{x:.1f}" x2="{x + 16:.1f}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" '
                         f'stroke-width="2" stroke-dasharray="4 3"/>')
        else:
            parts.append(f'<rect x="{x:.1f}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 20:.1f}" y="{ly}" font-size="11" fill="{TEXT}">{escape(text)}</text>')
        x += width + 12
    return parts, 34 + 16 * row + (14 if legend else 0)


def _y_axis(ticks: Sequence[float], y: Scale, top: float, bottom: float, label: str) -> list[str]:
    parts = []
    for t in ticks:
        ty = y(t)
        parts.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{LEFT - 5}" y="{ty + 3.5:.1f}" font-size="10" text-anchor="end" '
                     f'fill="{TEXT}">{compact(t)}</text>')
    parts.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{top:.1f}" y2="{bottom:.1f}" stroke="{AXIS}"/>')
    mid = (top + bottom) / 2
    parts.append(f'<text x="14" y="{mid:.1f}" font-size="11" text-anchor="middle" fill="{TEXT}" '
                 f'transform="rotate(-90 14 {mid:.1f})">{escape(label)}</text>')
    return parts


def _x_axis(ticks: Sequence[tuple[float, str]], bottom: float, label: str) -> list[str]:
    parts = [f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{bottom:.1f}" y2="{bottom:.1f}" stroke="{AXIS}"/>']
    for tx, text in ticks:
        parts.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{bottom:.1f}" y2="{bottom + 4:.1f}" stroke="{AXIS}"/>')
        parts.append(f'<text x="{tx:.1f}" y="{bottom + 15:.1f}" font-size="10" text-anchor="middle" '
                     f'fill="{TEXT}">{escape(text)}</text>')
    if label:
        parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" font-size="11" text-anchor="middle" '
                     f'fill="{TEXT}">{escape(label)}</text>')
    return parts


def _whisker(cx: float, y_lo: float, y_hi: float, colour: str) -> str:
    return (f'<path class="err" d="M{cx:.1f} {y_lo:.1f}V{y_hi:.1f}M{cx - 4:.1f} {y_lo:.1f}H{cx + 4:.1f}'
            f'M{cx - 4:.1f} {y_hi:.1f}H{cx + 4:.1f}" stroke="{colour}" stroke-width="1.5" fill="none"/>')


def _span(values: Sequence[float]) -> tuple[float, float]:
    return (min(values), max(values)) if values else (0.0, 1.0)


def _x_axis_scale(xs: Sequence[float], lo_px: float, hi_px: float) -> tuple[Scale, list[float]]:
    """The x scale and its ticks: powers of two on a log2 axis, the x values themselves when
    there are few, round numbers otherwise."""
    if is_log2_sweep(xs):
        powers = [2.0 ** k for k in range(round(math.log2(xs[0])), round(math.log2(xs[-1])) + 1)]
        return log2(xs[0], xs[-1], lo_px, hi_px), powers[::math.ceil(len(powers) / 12)]
    if len(xs) < 2:
        centre = xs[0] if xs else 0.0
        return linear(centre - 1, centre + 1, lo_px, hi_px), list(xs)
    scale = linear(xs[0], xs[-1], lo_px, hi_px)
    if len(xs) <= 12:
        return scale, list(xs)
    return scale, [t for t in nice_ticks(xs[0], xs[-1]) if xs[0] <= t <= xs[-1]]


def _strip_layout(labels: Sequence[str], left: float, right: float) -> tuple[list[float], float,
                                                                            list[tuple[float, str]]]:
    """Each group's centre, the width of one group, and each cluster's label position: groups
    are one unit wide, clusters (adjacent groups with one label) half a unit apart."""
    clusters = sum(1 for i, label in enumerate(labels) if i == 0 or labels[i - 1] != label)
    unit = (right - left) / (len(labels) + 0.5 * max(0, clusters - 1) + 1)
    centres: list[float] = []
    ticks: list[tuple[float, str]] = []
    cursor = left + unit / 2
    for i, label in enumerate(labels):
        if i > 0 and labels[i - 1] != label:
            cursor += unit / 2
        centres.append(cursor + unit / 2)
        cursor += unit
        if i == len(labels) - 1 or labels[i + 1] != label:
            start = next(j for j in range(i, -1, -1) if j == 0 or labels[j - 1] != label)
            ticks.append(((centres[start] + centres[i]) / 2, label))
    return centres, unit, ticks
