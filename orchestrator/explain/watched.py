"""The watched metrics of a bisection (a campaign's `metric.watch`, docs/metrics.md): how each
moved from the culprit's parent to the culprit, and what the bisected and watched metrics
measure under TCG.

The figures come from the confirmation's boots (the culprit and its parent booted afresh,
interleaved; docs/campaign.md step 4): for each side the mean of its boots' means, the
relative change and its 95% interval from the test the confirmation itself makes, on boot
values with the boot noise pooled over the campaign's other boots (stats.compare_pooled: the
boot is the unit, runs of one boot are never independent; two boots a side would leave a
Welch test one degree of freedom). A metric with a value of zero or less has no log scale:
Welch's test on the two sides' boots (stats.compare_runs). `watched_section` reads the
store; `watched_markdown` and `watched_html` render it, pure. The section is a table of its
own, one row per watched metric, so that a wider parent-against-culprit table over every
metric can take its rows in."""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from orchestrator.decisions import Decided
from orchestrator.explain.gather import confirmation_window
from orchestrator.render.page import table
from orchestrator.render.scale import whole_or_4g as num
from orchestrator.stats import Boot, TwoSample, compare_pooled, compare_runs, pooled_boot_variance
from orchestrator.workloads.definition import MetricDef

BETTER = {"higher": "higher", "lower": "lower", "none": "descriptive"}


class WatchedStore(Protocol):
    def boot_samples(self, campaign_id: int, metric: str, host: str | None = None,
                     legacy: bool = True) -> dict[str, list[Boot]]: ...

    def decisions(self, campaign_id: int) -> list[Decided]: ...

    def last_run(self, campaign_id: int) -> Any: ...


@dataclass(frozen=True)
class WatchedChange:
    """One watched metric, the culprit against its parent: each side's mean of boot means and
    boots, and the test (None with fewer than two boots a side)."""

    metric: str
    unit: str
    direction: str
    parent_mean: float
    culprit_mean: float
    parent_boots: int
    culprit_boots: int
    test: TwoSample | None


@dataclass(frozen=True)
class WatchedSection:
    rows: tuple[WatchedChange, ...] = ()
    notes: tuple[str, ...] = ()  # what the bisected and watched metrics measure under the runs' accelerator
    alpha: float = 0.05


def change(metric: MetricDef, parent: Sequence[Boot], culprit: Sequence[Boot],
           others: Sequence[Sequence[Boot]] = ()) -> WatchedChange:
    """`culprit` against `parent`, the boot noise pooled over `others` (the campaign's other commits)."""
    def mean(boots: Sequence[Boot]) -> float:
        return statistics.fmean(statistics.fmean(b.runs) for b in boots) if boots else math.nan

    if all(v > 0 for bs in (parent, culprit, *others) for b in bs for v in b.runs):
        test = compare_pooled(parent, culprit, *pooled_boot_variance(others))
    else:
        test = compare_runs({b.seq: b.runs for b in parent}, {b.seq: b.runs for b in culprit})
    return WatchedChange(metric.name, metric.unit, metric.direction, mean(parent), mean(culprit), len(parent),
                         len(culprit), test)


def tcg_notes(metrics: Sequence[MetricDef], accel: str) -> tuple[str, ...]:
    """What each metric measures under TCG, when the runs ran there (MetricDef.tcg)."""
    if accel != "tcg":
        return ()
    return tuple(f"{m.name}: {m.tcg}" for m in metrics if m.tcg)


def watched_section(store: WatchedStore, campaign_id: int, parent: str, culprit: str, host: str | None,
                    bisected: MetricDef | None, watched: Sequence[MetricDef], alpha: float = 0.05) -> WatchedSection:
    """The watched metrics over the confirmation's boots of `parent` and `culprit` on `host`
    (no rows without a culprit), and the TCG notes of the bisected and watched metrics. The
    confirmation's first boot is counted in the bisected metric's boots (Boot.seq); a watched
    metric recorded wherever the bisected one is (as every system metric is) counts them alike."""
    last = store.last_run(campaign_id)
    accel = str(((last.raw if last is not None else None) or {}).get("accel", ""))
    notes = tcg_notes([m for m in (bisected, *watched) if m is not None], accel)
    if not culprit or not parent or not watched:
        return WatchedSection((), notes, alpha)
    first, end = confirmation_window(store.decisions(campaign_id), culprit) or (0, 1 << 62)  # none: all its boots
    rows = []
    for m in watched:
        boots = store.boot_samples(campaign_id, m.name, host)
        side = {c: [b for b in boots.get(c, []) if first <= b.seq < end] for c in (parent, culprit)}
        others = [bs for c, bs in boots.items() if c not in (parent, culprit)]
        rows.append(change(m, side[parent], side[culprit], others))
    return WatchedSection(tuple(rows), notes, alpha)


HEADER = ["metric", "better", "parent", "culprit", "change", "95% CI", "p"]
TITLE = ("Watched metrics, culprit against its parent on the confirmation's boots: each side's mean of boot means, "
         "the change with its 95% CI and p from a t-test on the boots, their noise pooled over the campaign as "
         "the confirmation's (* p < {alpha:g})")


def cells(r: WatchedChange, alpha: float) -> list[str]:
    unit = f" {r.unit}" if r.unit else ""
    t = r.test
    if t is None:
        return [r.metric, BETTER.get(r.direction, r.direction), f"{num(r.parent_mean)}{unit}",
                f"{num(r.culprit_mean)}{unit}", "-", "too few boots", "-"]
    mark = "*" if t.p < alpha else ""
    return [r.metric, BETTER.get(r.direction, r.direction), f"{num(r.parent_mean)}{unit}",
            f"{num(r.culprit_mean)}{unit}", f"{t.change:+.1%}{mark}", f"{t.low:+.1%}..{t.high:+.1%}", f"{t.p:.2g}",
            ]


def watched_markdown(s: WatchedSection | None) -> list[str]:
    """The section's lines of the Markdown report (and the mail): the table, then its notes."""
    if s is None:
        return []
    out: list[str] = []
    if s.rows:
        out += [TITLE.format(alpha=s.alpha) + ":", "", "| " + " | ".join(HEADER) + " |",
                "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(c.replace("|", "/") for c in cells(r, s.alpha)) + " |" for r in s.rows] + [""]
    out += [line for n in s.notes for line in (f"Note: the runs ran under TCG; {n}", "")]
    return out


def watched_html(s: WatchedSection | None) -> str:
    """The section of the HTML report, escaped."""
    if s is None:
        return ""
    out = ""
    if s.rows:
        out += (f"<h2>Watched metrics</h2><p>{html.escape(TITLE.format(alpha=s.alpha))}</p>"
                + table(HEADER, [cells(r, s.alpha) for r in s.rows],
                        [["", "", "num", "num", "num", "num", "num"] for _ in s.rows]))
    out += "".join(f"<p><strong>Note:</strong> the runs ran under TCG; {html.escape(n)}</p>" for n in s.notes)
    return out

