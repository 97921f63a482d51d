"""One self-contained HTML file for a bisection: the culprit, a plot of every commit's samples
against the good and bad references (inline SVG, no scripts, no network), and the steps."""

from __future__ import annotations

import html
import math

from orchestrator.report import BisectReport, CommitFigures, Step

W, H, PAD = 760, 300, 48


def _scale(lo: float, hi: float, top: float, bottom: float):  # type: ignore[no-untyped-def]
    span = (hi - lo) or 1.0
    return lambda v: bottom - (v - lo) / span * (bottom - top)


def samples_plot(steps: tuple[Step, ...], samples: dict[str, list[float]], metric: str) -> str:
    """Dots per measured commit in step order; dashed lines at the good and bad medians."""
    shown = [s for s in steps if samples.get(s.commit.sha)]
    values = [v for s in shown for v in samples[s.commit.sha]]
    if not values:
        return "<p>No samples.</p>"
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
    y = _scale(lo - pad, hi + pad, PAD / 2, H - PAD)
    step_w = (W - 2 * PAD) / max(1, len(shown))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" '
             f'aria-label="{html.escape(metric)} samples per commit">',
             f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff"/>',
             f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - PAD / 2}" y2="{H - PAD}" stroke="#444"/>',
             f'<line x1="{PAD}" y1="{PAD / 2}" x2="{PAD}" y2="{H - PAD}" stroke="#444"/>']
    for tick in range(5):
        v = lo - pad + (hi - lo + 2 * pad) * tick / 4
        parts.append(f'<text x="{PAD - 4}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.4g}</text>')
    colours = {"good": "#1a7f37", "bad": "#cf222e", "skip": "#8c959f"}
    for ref in ("good", "bad"):
        ref_step = next((s for s in shown if s.role == ref), None)
        if ref_step is not None:
            m = ref_step.commit.median
            parts.append(f'<line x1="{PAD}" x2="{W - PAD / 2}" y1="{y(m):.1f}" y2="{y(m):.1f}" '
                         f'stroke="{colours[ref]}" stroke-dasharray="4 4"/>')
    for i, s in enumerate(shown):
        cx = PAD + step_w * (i + 0.5)
        colour = colours.get(s.verdict, "#0969da")
        for j, v in enumerate(samples[s.commit.sha]):
            jitter = (j % 5 - 2) * 2.0
            parts.append(f'<circle cx="{cx + jitter:.1f}" cy="{y(v):.1f}" r="3.5" fill="{colour}" fill-opacity="0.8">'
                         f'<title>{html.escape(s.commit.sha[:12])}: {v:.4g}</title></circle>')
        parts.append(f'<text x="{cx:.1f}" y="{H - PAD + 14}" font-size="10" text-anchor="middle">'
                     f'{html.escape(s.role if s.role != "step" else str(s.index))}</text>')
    parts.append(f'<text x="{W / 2}" y="{H - 8}" font-size="11" text-anchor="middle">commits in the order measured '
                 f'(green good, red bad, grey skipped; dashed: reference medians)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _fig(f: CommitFigures | None) -> str:
    if f is None or math.isnan(f.median):
        return "-"
    return f"{f.median:.4g} (95% CI {f.ci_low:.4g}..{f.ci_high:.4g}, n={f.n})"


def render_html(r: BisectReport) -> str:
    e = html.escape
    head = f"vmbisect campaign {r.name}: {r.kind.replace('_', ' ')}"
    rows = "".join(
        f"<tr><td>{s.index}</td><td>{e(s.role)}</td><td><code>{e(s.commit.sha[:12])}</code></td>"
        f"<td>{e(s.commit.subject)}</td><td>{e(s.verdict)}</td><td>{s.commit.n}</td>"
        f"<td>{s.commit.median:.4g}</td><td>{e(s.reason)}</td></tr>" for s in r.steps)
    culprit = ""
    if r.culprit is not None:
        c = r.culprit
        culprit = (f"<pre>commit {e(c.sha)}\nAuthor: {e(c.author)} &lt;{e(c.email)}&gt;\nDate:   {e(c.date)}\n\n"
                   f"    {e(c.subject)}</pre>"
                   f"<p>{e(r.metric)} ({e(r.direction)} is better): parent {_fig(r.parent_figures)}, "
                   f"culprit {_fig(r.culprit_figures)}</p>")
    candidates = "".join(f"<li><code>{e(c.sha[:12])}</code> {e(c.subject)}</li>" for c in r.candidates)
    notes = "".join(f"<p><strong>Note:</strong> {e(n)}</p>" for n in r.notes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(head)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:72em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left}}pre{{background:#f6f8fa;padding:1em}}</style>
</head><body><h1>{e(head)}</h1>{culprit}{'<ul>' + candidates + '</ul>' if candidates else ''}{notes}
<h2>{e(r.metric)} per commit</h2>{samples_plot(r.steps, r.samples, r.metric)}
<h2>Steps</h2><table><tr><th>#</th><th>role</th><th>commit</th><th>subject</th><th>verdict</th><th>n</th>
<th>median</th><th>reason</th></tr>{rows}</table>
<h2>git bisect log</h2><pre>{e(r.bisect_log)}</pre></body></html>
"""
