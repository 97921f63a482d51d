"""Everything that changed, rendered (pure): the significant rows in the kernel test robot's
layout within 78 columns (the Markdown report, which is also the mail's body), and every row as
an HTML table. The robot's layout: parent mean ± stddev%, %change, culprit mean ± stddev%,
metric; here the ± is the CoV of the boot values, the unit every figure rests on."""

from __future__ import annotations

import html as _html
import textwrap

from orchestrator.explain.changed import Changed, ChangedRow, SideStats
from orchestrator.render.keyed import keyed_rows
from orchestrator.render.page import table
from orchestrator.render.scale import whole_or_4g as num

WIDTH = 78
SIDE = 16  # "    mean ±CoV%" : a mean in 10 columns, a space, the CoV in 5
CHANGE = 12


def _side(s: SideStats | None) -> str:
    if s is None:
        return f"{'-':>10}      "
    return f"{num(s.mean):>10} ±{s.cov * 100:3.0f}%"


def _change(r: ChangedRow) -> str:
    return f"{'n/a' if r.change_pct is None else f'{r.change_pct:+.1f}%':>10}  "


def _name(r: ChangedRow) -> str:
    return r.metric + (f" ({r.judged})" if r.judged else "")


def lkp_lines(c: Changed, rows: tuple[ChangedRow, ...], width: int = WIDTH) -> list[str]:
    """The rows in the robot's layout, no line over `width` columns and no row wrapped: a metric
    name that does not fit after its figures is shortened there and given whole in a key below
    the table (render/keyed.py)."""
    out = [f"{c.parent[:12]:>{SIDE}}{'':{CHANGE}}{c.culprit[:12]:>{SIDE}}",
           f"{'-' * SIDE} {'-' * (CHANGE - 2)} {'-' * SIDE}",
           f"{'mean':>10} {'±CoV':>5}{'%change':>10}  {'mean':>10} {'±CoV':>5}"]
    lines, key = keyed_rows([(f"{_side(r.parent)}{_change(r)}{_side(r.culprit)}  ", _name(r)) for r in rows], width)
    return out + lines + ([""] + key if key else [])


def _boots(c: Changed) -> str:
    return (f"{c.parent_boots} boot{'s' if c.parent_boots != 1 else ''} of the parent and {c.culprit_boots} of the "
            f"culprit, {c.runs} runs")


def markdown(c: Changed | None) -> list[str]:
    """The report's section: the significant rows (all of them go to the HTML report and JSON)."""
    if c is None:
        return []
    sig = c.significant
    out = ["## What changed with the culprit", "", *textwrap.wrap(
           f"Every metric recorded on the confirmation's boots ({_boots(c)}), parent against culprit: each side's "
           "mean over its boots (a boot's value is the mean of its runs) ± the CoV of those values, and the "
           f"culprit's change in percent. Tested like `vmbisect compare`: {c.test}.", WIDTH), ""]
    if not sig:
        return out + [*textwrap.wrap(f"No change is significant among the {len(c.rows)} metrics recorded; every "
                                     "row is in the HTML report and the JSON.", WIDTH), "", *_vcpus(c)]
    return out + [*textwrap.wrap(f"The {len(sig)} of {len(c.rows)} metrics whose change is significant, strongest "
                                 "evidence first (every row is in the HTML report and the JSON):", WIDTH),
                  "", "```", *lkp_lines(c, sig), "```", "", *_vcpus(c)]


def _vcpus(c: Changed) -> list[str]:
    lines = vcpu_lines(c)
    if not lines:
        return []
    return [*textwrap.wrap("Each vCPU, parent against culprit, and the CPU cost per operation beside the bisected "
                           "metric (means over boots; * significant):", WIDTH), "", "```", *lines, "```", ""]


VCPU_METRICS = ("guest_vcpu_busy_pct", "host_vcpu_used")
COSTS = ("guest_cpu_us_per_op", "host_cpu_us_per_op", "ctxt_per_op")


def vcpu_lines(c: Changed) -> list[str]:
    """Each vCPU side by side, parent and culprit, significant or not (a load moved from one
    vCPU to another shows here before any total moves): its busy share seen from inside the
    guest and the host CPUs its thread used; then the CPU cost per operation beside the
    bisected metric. [] when no per-vCPU figure was recorded."""
    by_name = {r.metric: r for r in c.rows}
    vcpus = sorted({int(n) for r in c.rows for base, _dot, n in [r.metric.rpartition(".")]
                    if base in VCPU_METRICS and n.isdigit()})
    if not vcpus:
        return []

    def mean(row: ChangedRow | None, side: str) -> str:
        s = None if row is None else getattr(row, side)
        return "-" if s is None else num(s.mean)

    out = [f"{'':4}  {'busy % in the guest':>21}  {'host CPUs of its thread':>23}",
           f"{'vCPU':>4}  {'parent':>10} {'culprit':>10}  {'parent':>11} {'culprit':>11}"]
    for n in vcpus:
        busy, host = by_name.get(f"{VCPU_METRICS[0]}.{n}"), by_name.get(f"{VCPU_METRICS[1]}.{n}")
        out.append(f"{n:>4}  {mean(busy, 'parent'):>10} {mean(busy, 'culprit'):>10}  {mean(host, 'parent'):>11} "
                   f"{mean(host, 'culprit'):>11}")
    # each once: the bisected metric may itself be a cost (guest_cpu_us_per_op)
    costs = [by_name[m] for m in dict.fromkeys((*(r.metric for r in c.rows if r.headline), *COSTS)) if m in by_name]
    out += ["", *(f"{r.metric[:30]:>30}  {mean(r, 'parent'):>10} -> {mean(r, 'culprit'):>10} {_pct(r.change_pct):>9}"
                  f"{' *' if r.significant else ''}" for r in costs)]
    return out


def html(c: Changed | None) -> str:
    """The HTML report's section: every row, significant ones highlighted."""
    if c is None:
        return ""
    e = _html.escape
    rows, classes = [], []
    for r in c.rows:
        rows.append([r.metric, r.unit, r.direction, *_cells(r.parent), _pct(r.change_pct), *_cells(r.culprit),
                     "" if r.q is None else f"{r.q:.2g}", "yes" if r.significant else ("" if r.q is not None
                                                                                     else "too few boots"),
                     r.judged])
        mark = "sig" if r.significant else ""
        classes.append(["mono", "", "", "num", "num", f"num {mark}".strip(), "num", "num", "num", mark, ""])
    return (f"<h2>What changed with the culprit</h2><p>Every metric recorded on the confirmation's boots "
            f"({e(_boots(c))}), parent <code>{e(c.parent[:12])}</code> against culprit "
            f"<code>{e(c.culprit[:12])}</code>, strongest evidence first: each side's mean over its boots (a boot's "
            f"value is the mean of its runs), the CoV of those values, and the culprit's change. "
            f"Tested as <code>vmbisect compare</code> tests: {e(c.test)}.</p>"
            + table(["metric", "unit", "better", "parent mean", "CoV", "change", "culprit mean", "CoV", "q",
                     "significant", ""], rows, classes)
            + (f"<p>Each vCPU, parent against culprit, and the CPU cost per operation:</p><pre>{e(chr(10).join(vcpus))}"
               "</pre>" if (vcpus := vcpu_lines(c)) else ""))


def _cells(s: SideStats | None) -> list[str]:
    return ["-", ""] if s is None else [num(s.mean), f"{s.cov * 100:.1f}%"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"
