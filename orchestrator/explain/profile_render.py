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
from orchestrator.render.keyed import keyed_rows
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


def lkp_lines(d: ProfileDiff, rows: tuple[SymbolMove, ...], width: int = WIDTH) -> tuple[list[str], list[str]]:
    """`rows` in the robot's layout: parent %, change in points, culprit %, the key, no row
    wrapped: a key that does not fit after its figures is shortened there and given whole in the
    key lines returned second (render/keyed.py). `!` marks a row whose boots lie apart (every
    boot of one side beyond every boot of the other)."""
    out = [f"{'parent':>8} {'':>8} {'culprit':>8}",
           f"{'-' * 8} {'-' * 8} {'-' * 8}",
           f"{'%':>8} {'points':>8} {'%':>8}"]
    lines, legend = keyed_rows([(f"{r.parent_pct:8.2f} {r.change:+8.2f} {r.culprit_pct:8.2f} {'!' if r.apart else ' '} ",
                                 key(d, r)) for r in rows], width, head=0.3)  # the symbol is at the end
    return out + lines, legend


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
            "", "```", *_tables(d, n), "```", "",
            *_only(d, "culprit", "Sampled with the culprit only", n), *_only(d, "parent", "Sampled with the parent only", n),
            *[line for note in emulated_notes(d) for line in (*textwrap.wrap(f"Note: {note}", WIDTH), "")]]


def _tables(d: ProfileDiff, n: int) -> list[str]:
    """The self rows, then the children rows under the same head, then one key below both of
    the names shortened in either."""
    own, chain = top(d, n, SELF), top(d, n, CHILDREN)
    lines, legend = lkp_lines(d, own + chain)
    rows = lines[3:]
    return [*lines[:3], *rows[:len(own)], "", *rows[len(own):], *([""] + legend if legend else [])]


# Functions whose time is the emulator's, not the kernel's: reading an emulated clocksource (the
# HPET, the ACPI PM timer) and touching an emulated device's registers are exits to QEMU, slow
# under emulation and cheap on hardware (docs/explain.md, "What a profile under TCG can and
# cannot show").
CLOCK_READS = ("read_hpet", "acpi_pm_read", "acpi_pm_read_verified", "acpi_pm_read_slow")
DEVICE_ACCESS = ("vp_notify", "ioread8", "ioread16", "ioread32", "iowrite8", "iowrite16", "iowrite32",
                 "native_io_delay")
EMULATED_NOTE = 10.0  # percent of a side's self samples from which the note is given


def _self_share(d: ProfileDiff, names: tuple[str, ...]) -> tuple[float, float, list[str]]:
    """The parent's and the culprit's self share of `names` together, and those sampled."""
    rows = [r for r in d.rows if r.kind == SELF and display(r.symbol) in names]
    return (sum(r.parent_pct for r in rows), sum(r.culprit_pct for r in rows),
            sorted({display(r.symbol) for r in rows if max(r.parent_pct, r.culprit_pct) > 0}))


def emulated_notes(d: ProfileDiff) -> list[str]:
    """What it means when the guest's clocksource reads or its device accesses take
    EMULATED_NOTE% of a side's samples or more: time the emulator takes, not the kernel."""
    out = []
    p, c, names = _self_share(d, CLOCK_READS)
    if max(p, c) >= EMULATED_NOTE:
        out.append(f"{', '.join(names)} (reading the clocksource) takes {p:.1f}% of the parent's samples and {c:.1f}% "
                   "of the culprit's: the guest keeps time with an emulated device (the HPET or the ACPI PM timer, "
                   "chosen when the guest finds its TSC unreliable, as under TCG, which has no invariant TSC), and "
                   "every read of it is an exit to the emulator, slow there and cheap on real hardware. The share "
                   "says the clock is slow to read in this guest, not that the kernel reads it more often; a guest "
                   "booted with `clocksource=tsc tsc=reliable` keeps time without it.")
    p, c, names = _self_share(d, DEVICE_ACCESS)
    if max(p, c) >= EMULATED_NOTE:
        out.append(f"{', '.join(names)} (an emulated device's registers) takes {p:.1f}% of the parent's samples and "
                   f"{c:.1f}% of the culprit's: each access is an exit to the emulator, slow there and cheap on real "
                   "hardware; the share measures the emulation as much as the kernel.")
    return out


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
            + "".join(f"<p>Note: {e(note.replace('`', ''))}</p>" for note in emulated_notes(d))
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
