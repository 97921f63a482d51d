"""The profile diff rendered (pure): the symbols whose shares moved most in the kernel test
robot's layout within 78 columns (the Markdown report, which is also the mail's body), and in
the HTML report every row that moved with the two differential flame graphs
(orchestrator/render/flame.py): the culprit's, red where a share grew, and the parent's, blue
where one shrank or vanished."""

from __future__ import annotations

import html as _html
import textwrap
from typing import Any

from orchestrator.explain.profile import CHILDREN, SELF, ProfileDiff, SymbolMove, display, key, only_on, top
from orchestrator.explain.profile_stored import Profiled
from orchestrator.render.flame import flame_svg
from orchestrator.render.page import table

WIDTH = 78
HTML_ROWS = 60
TOP = 8  # rows of each kind in the Markdown report and the mail


def _side(d: ProfileDiff, which: str) -> str:
    p = getattr(d, which)
    boots = len(p.boots)
    return f"{p.samples} samples over {boots} boot{'s' if boots != 1 else ''}"


def _what(d: ProfileDiff) -> str:
    event = d.parent.event or d.culprit.event
    clock = ("the software clock (cpu-clock: the guest has no PMU, so the samples are time, not cycles)"
             if event.startswith("cpu-clock") else event)
    return (f"`perf record -a -g` of the workload on profile boots after the confirmation, never counted as "
            f"evidence: {clock}; parent {d.parent.label[:12]} {_side(d, 'parent')}, culprit "
            f"{d.culprit.label[:12]} {_side(d, 'culprit')}. Shares are percent of each side's samples: self, "
            "the samples in the function itself; children, those with it anywhere on the call chain.")


def lkp_lines(d: ProfileDiff, rows: tuple[SymbolMove, ...], width: int = WIDTH) -> list[str]:
    """`rows` in the robot's layout: parent %, change in points, culprit %, the key; a key that
    does not fit after its figures goes on a line of its own below them. `!` marks a row whose
    boots lie apart (every boot of one side beyond every boot of the other)."""
    out = [f"{'parent':>8} {'':>8} {'culprit':>8}",
           f"{'-' * 8} {'-' * 8} {'-' * 8}",
           f"{'%':>8} {'points':>8} {'%':>8}"]
    for r in rows:
        figures = f"{r.parent_pct:8.2f} {r.change:+8.2f} {r.culprit_pct:8.2f} {'!' if r.apart else ' '} "
        name = key(d, r)
        if len(figures) + len(name) <= width:
            out.append(figures + name)
        else:
            out += [figures.rstrip(), f"{'':4}{name}"[:width]]
    return out


def markdown(p: Profiled | None, n: int = TOP) -> list[str]:
    """The report's section: the `n` self shares and the `n` call-chain shares that moved most
    (or why there is no profile; nothing when none was asked for)."""
    if p is None:
        return []
    if p.diff is None:
        return [f"Kernel profile: none ({p.note})", ""]
    d = p.diff
    return ["## Where the time went: the kernel profile, parent against culprit", "",
            *textwrap.wrap(_what(d), WIDTH), "",
            *textwrap.wrap(f"The self shares and the call-chain (children) shares that moved most, {n} each, in "
                           "points (! the profile boots of the two sides lie apart; the HTML report draws the "
                           "differential flame graphs):", WIDTH),
            "", "```", *lkp_lines(d, top(d, n, SELF)), "", *lkp_lines(d, top(d, n, CHILDREN))[3:], "```", "",
            *_only(d, "culprit", "Sampled with the culprit only", n), *_only(d, "parent", "Sampled with the parent only", n)]


def _only(d: ProfileDiff, side: str, label: str, n: int) -> list[str]:
    rows = only_on(d, side, n)
    if not rows:
        return []
    shares = ", ".join(f"{display(r.symbol)} {max(r.parent_pct, r.culprit_pct):.2f}%" for r in rows)
    return [*textwrap.wrap(f"{label} (call-chain share): {shares}.", WIDTH), ""]


def html(p: Profiled | None) -> str:
    """The HTML report's section: the rows that moved and both flame graphs."""
    if p is None:
        return ""
    e = _html.escape
    if p.diff is None:
        return f"<p><strong>Kernel profile:</strong> none ({e(p.note)})</p>"
    d = p.diff
    rows = [[r.kind, display(r.symbol), f"{r.parent_pct:.2f}", f"{r.change:+.2f}", f"{r.culprit_pct:.2f}",
             "yes" if r.apart else ""] for r in top(d, HTML_ROWS)]
    classes = [["", "mono", "num", "num", "num", ""] for _ in rows]
    before, after = d.parent.pooled(), d.culprit.pooled()
    grew = flame_svg(before, after, True, f"culprit {d.culprit.label[:12]}: red grew, blue shrank against the "
                     f"parent {d.parent.label[:12]}", "with the parent", "with the culprit")
    shrank = flame_svg(before, after, False, f"parent {d.parent.label[:12]}: blue shrank or vanished with the culprit "
                       f"{d.culprit.label[:12]}", "with the parent", "with the culprit")
    return ("<h2>Where the time went: the kernel profile, parent against culprit</h2>"
            f"<p>{e(_what(d).replace('`', ''))}</p>"
            + table(["share", "symbol", "parent %", "change (points)", "culprit %", "boots apart"], rows, classes)
            + "<p>The culprit's profile: a frame's width is its share of the culprit's samples, red where that "
              "share grew against the parent, blue where it shrank (hover a frame for both shares).</p>"
            + f'<div class="flame">{grew}</div>'
            + "<p>The parent's profile, coloured the same way: what shrank or vanished with the culprit (blue), "
              "which the first graph cannot show (a frame the culprit never ran has no width there).</p>"
            + f'<div class="flame">{shrank}</div>')


def as_json(p: Profiled | None, n: int = HTML_ROWS) -> dict[str, Any] | None:
    """The JSON report's part: the event, each side's samples and boots, the rows that moved
    most (the stacks stay in the store)."""
    if p is None:
        return None
    if p.diff is None:
        return {"note": p.note}
    d = p.diff
    return {"event": d.parent.event, "parent": {"label": d.parent.label, "samples": d.parent.samples,
                                                "boots": len(d.parent.boots)},
            "culprit": {"label": d.culprit.label, "samples": d.culprit.samples, "boots": len(d.culprit.boots)},
            "rows": [{"key": key(d, r), "kind": r.kind, "symbol": display(r.symbol), "parent_pct": r.parent_pct,
                      "culprit_pct": r.culprit_pct, "change": r.change, "apart": r.apart} for r in top(d, n)]}


def appended(report: str, fmt: str, p: Profiled | None) -> str:
    """A whole report (md, html or json) with the profile's section added at its end (before
    the HTML page's closing tags; as the `profile` key of a JSON object)."""
    if p is None:
        return report
    if fmt == "md":
        return report.rstrip("\n") + "\n\n" + "\n".join(markdown(p))
    if fmt == "html":
        body, tail, rest = report.rpartition("</body>")
        return f"{body}{html(p)}{tail}{rest}" if tail else report + html(p)
    import json

    doc = json.loads(report)
    return json.dumps({**doc, "profile": as_json(p)}, indent=2) if isinstance(doc, dict) else report
