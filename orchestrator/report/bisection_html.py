"""One self-contained HTML file for a bisection: the culprit, a plot of every commit's samples
against the good and bad references (inline SVG, no scripts, no network), and the steps."""

from __future__ import annotations

import html
import math

from orchestrator.explain import profile_render
from orchestrator.explain import render as explain_render
from orchestrator.explain.watched import watched_html
from orchestrator.measure.leftout import sentence
from orchestrator.metrictable.block import metric_block
from orchestrator.render.page import page, table
from orchestrator.render.scale import whole_or_4g as num
from orchestrator.render.svg import strip_plot
from orchestrator.report.bisection import (
    ENDED,
    WHERE,
    BisectReport,
    CommitFigures,
    Step,
    listed,
    median,
    parent_culprit,
)
from orchestrator.report.reproduce import lines as reproduce_lines

VERDICT_COLOURS = {"good": "#009E73", "bad": "#D55E00", "skip": "#999999"}


def samples_plot(steps: tuple[Step, ...], samples: dict[str, list[float]], metric: str) -> str:
    """Dots per measured commit in step order (once, where it was first decided), coloured by
    verdict; dashed lines at the good and bad medians."""
    first = {s.commit.sha: s for s in reversed(steps)}  # a commit re-examined or confirmed is shown once
    shown = [s for s in steps if samples.get(s.commit.sha) and first[s.commit.sha] is s]
    if not shown:
        return "<p>No samples.</p>"
    groups = [(s.role if s.role != "step" else str(s.index), s.verdict, samples[s.commit.sha]) for s in shown]
    refs = []
    for ref in ("good", "bad"):
        ref_step = next((s for s in shown if s.role == ref), None)
        if ref_step is not None:
            refs.append((f"{ref} median", ref_step.commit.median, ref))
    return strip_plot(groups, metric, f"{metric} per commit", x_label="commits in the order measured",
                      refs=refs, colours=VERDICT_COLOURS)


def _fig(f: CommitFigures | None) -> str:
    if f is None or math.isnan(f.median):
        return "-"
    return f"{num(f.median)} (95% CI {num(f.ci_low)}..{num(f.ci_high)}, {f.boots} boots of {f.n} runs)"


def render_html(r: BisectReport) -> str:
    e = html.escape
    head = f"vmbisect campaign {r.name}: {r.kind.replace('_', ' ')}"
    steps = table(["#", "role", "commit", "subject", "verdict", "host", "boots", "runs", "median", "reason"],
                  [[str(s.index), s.role, s.commit.sha[:12], s.commit.subject, s.verdict, s.host, str(s.commit.boots),
                    str(s.commit.n), median(s.commit), s.reason] for s in r.steps],
                  [["num", "", "mono", "", "", "", "num", "num", "num", ""] for _ in r.steps])
    culprit = ""
    if r.culprit is not None:
        c = r.culprit
        culprit = (f"<pre>commit {e(c.sha)}\nAuthor: {e(c.author)} &lt;{e(c.email)}&gt;\nDate:   {e(c.date)}\n\n"
                   f"    {e(c.subject)}</pre>"
                   f"<p>{e(r.metric)} ({e(r.direction)} is better): parent {_fig(r.parent_figures)}, "
                   f"culprit {_fig(r.culprit_figures)}; change {e(r.change)}</p>")
        if r.parent_figures is not None and r.culprit_figures is not None:
            block = "\n".join(metric_block(parent_culprit(r), r.metric))
            culprit += ("<p>Parent against culprit, mmtests layout, one value per boot (+ is better, * significant "
                        "in a two-sided Welch t-test on the boot values):</p>"
                        f"<pre>{e(block)}</pre>")
    shown, more = listed([f"<li><code>{e(c.sha[:12])}</code> {e(c.subject)}</li>" for c in r.candidates])
    candidates = "".join(shown) + (f"<li>{e(more)}</li>" if more else "")
    notes = "".join(f"<p><strong>{label}:</strong> {e(text)}</p>" for label, text in (
        ("Range", r.range), ("Confidence", r.confidence_text), ("Confirmation", r.confirmation), ("Revert", r.revert),
        ("Share", r.partial), ("Steps", ENDED.get(r.steps_end, "") if r.partial else ""),
        ("All steps reverted", r.reverted if len(r.parts) > 1 else ""), ("Measured on", r.hosts),
        ("Workers", r.taken_over), ("Evidence", sentence(r.excluded))) if text)
    if len(r.parts) > 1:
        notes += ("<p>The regression came in steps (oldest first, each one's share of the good-to-bad gap with its "
                  "95% CI):</p><ol class=\"steps\">" + "".join(
                      f"<li><code>{e(p.step.commit[:12])}</code> {e(p.subject)}: "
                      f"{'<strong>' if p.step.crossed else ''}{e(p.step.describe().split(' ', 1)[1])}"
                      f"{'</strong>' if p.step.crossed else ''}</li>" for p in r.parts) + "</ol>")
    notes += "".join(f"<p><strong>Note:</strong> {e(n)}</p>" for n in r.notes) + watched_html(r.watched)
    again = ""
    if r.reproduce is not None:  # the Markdown section's text, its heading as the page's own
        text = "\n".join(reproduce_lines(r.reproduce, r.culprit.sha if r.culprit else "", WHERE)[2:]).rstrip()
        again = f"<h2>Reproduce</h2><pre class=\"reproduce\">{e(text)}</pre>\n"
    return page(head, f"{culprit}{'<ul>' + candidates + '</ul>' if candidates else ''}{notes}\n"
                      f"<h2>{e(r.metric)} per commit</h2>{samples_plot(r.steps, r.samples, r.metric)}\n"
                      f"{explain_render.html(r.changed)}\n{profile_render.html(r.profile)}\n"
                      f"{again}<h2>Steps</h2>{steps}\n<h2>git bisect log</h2><pre>{e(r.bisect_log)}</pre>")
