"""A Comparison as text: every metric's block in the mmtests compare layout
(orchestrator/metrictable/block.py) and Markdown around it that pastes into a mail."""

from __future__ import annotations

from orchestrator.metrictable.block import metric_block, number
from orchestrator.metrictable.cells import Comparison, Row
from orchestrator.metrictable.tabulate import runs_per_boot


def render_text(c: Comparison) -> str:
    """Every metric's block, primary metrics first, like `compare-mmtests.pl`."""
    metrics = list(dict.fromkeys(r.metric for r in c.rows))
    blocks = [metric_block(c, m) for m in metrics]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def summary_table(c: Comparison, rows: list[Row]) -> list[str]:
    """Markdown: metric, point, the baseline's mean, each other variant's mean and change."""
    base = c.variants[0].name
    head = ["metric", *(["point"] if c.swept else []), "unit", f"{base} (mean)",
            *(f"{v.name} (mean, change)" for v in c.variants[1:])]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = {x.variant: x for x in r.cells}
        line = [r.metric, *([r.point] if c.swept else []), r.unit, number(cells[base].summary.mean) if base in cells
                else "-"]
        for v in c.variants[1:]:
            x = cells.get(v.name)
            if x is None:
                line.append("-")
                continue
            pct = "n/a" if x.diff_pct is None else f"{x.diff_pct:+.2f}%"
            line.append(f"{number(x.summary.mean)} ({pct}{'*' if x.significant else ''})")
        out.append("| " + " | ".join(line) + " |")
    return out


def render_markdown(c: Comparison) -> str:
    shapes = sorted({runs_per_boot(x) for r in c.rows for x in r.cells})
    runs = shapes[0] if len(shapes) == 1 else ", ".join(shapes) if shapes else "no runs"
    out = [f"# {c.title}", "", f"Workload {c.workload}; {runs} per variant"
           f"{' and point' if c.swept else ''}. Differences are against {c.variants[0].name}, in percent, "
           f"+ is better (for latency and CPU cost, lower is better); * marks a significant difference "
           f"({c.test}).", "", "Variants:", ""]
    out += [f"- **{v.name}**: {v.description}" for v in c.variants] + [""]
    out += [f"- {s}" for s in c.verdict] + [""]
    if c.bisect:
        out += ["## Bisect", "", "Each row that regressed, and the command that bisects it (docs/compare.md):", "",
                "```", *c.bisect, "```", ""]
    for note in c.notes:
        out += [f"Note: {note}", ""]
    key_rows = [r for r in c.rows if r.metric in c.primary or any(x.significant for x in r.cells)]
    if key_rows:
        out += ["## Summary", ""] + summary_table(c, key_rows) + [""]
    out += ["## All metrics", "", "```", render_text(c).rstrip(), "```", ""]
    return "\n".join(out)
