"""The bisection report: collected from the store (and git for commit details), rendered as
Markdown that pastes into a mail, or JSON.

Every figure is on boots, the unit the decisions were taken on: a commit's value is the
geometric mean of its boots' means, its interval and the parent-against-culprit table use one
value per boot; the boots the judge's rule left out (stats.stray_boots) are in none of them, and
the report says which and why. The answer's confidence, the confirmation against the parent and the revert
come from the stored result. A commit's figures come from the lab host that measured it last
(a campaign that moved off a failed host measured its references again on the new one), and
the report says which host measured what."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import statistics
from dataclasses import asdict, dataclass
from typing import Callable, Mapping, Sequence

from orchestrator.backends.git_bisect import CommitInfo
from orchestrator.bisect.confidence import HIGH_CONFIDENCE
from orchestrator.decisions import Basis, Decided, Role
from orchestrator.direction import Direction
from orchestrator.explain import gather as explain
from orchestrator.explain import profile_render, profile_stored
from orchestrator.explain import render as explain_render
from orchestrator.explain.changed import Changed
from orchestrator.explain.watched import WatchedSection, watched_markdown, watched_section
from orchestrator.measure.evidence import boots_by_host
from orchestrator.measure.leftout import Excluded, left_out, sentence
from orchestrator.metrictable.block import metric_block
from orchestrator.metrictable.cells import Comparison, VariantInfo
from orchestrator.metrictable.tabulate import MetricMeta, Point, build
from orchestrator.queue import takeovers
from orchestrator.render.scale import whole_or_4g as num
from orchestrator.report.reproduce import Reproduce, of_campaign
from orchestrator.report.reproduce import lines as reproduce_lines
from orchestrator.results import (
    DEFAULT_MIN_SHARE,
    BisectOutcome,
    BisectResult,
    RegressionStep,
    StepsEnd,
    answer_as,
    stopped,
    text_of,
)
from orchestrator.stats import Boot, median_ci
from orchestrator.store import BootRow, Store
from orchestrator.workloads.definition import MetricDef


@dataclass(frozen=True)
class CommitFigures:
    """`n` runs in `boots` boots; median and its interval over the boots' means."""

    sha: str
    subject: str
    n: int
    median: float
    ci_low: float
    ci_high: float
    mean: float
    boots: int = 0


@dataclass(frozen=True)
class Step:
    index: int
    role: str
    commit: CommitFigures
    verdict: str
    reason: str
    confidence: float
    host: str = ""  # the lab host whose boots the figures are
    backed_by: str = ""  # the decision's Kind: measured, inherited, build_failed...


@dataclass(frozen=True)
class Part:
    """One step of a regression in several steps, with its commit's subject."""

    step: RegressionStep
    subject: str


@dataclass(frozen=True)
class BisectReport:
    name: str
    state: str
    metric: str
    direction: str
    kind: str
    culprit: CommitInfo | None
    culprit_figures: CommitFigures | None
    parent_figures: CommitFigures | None
    candidates: tuple[CommitInfo, ...]
    steps: tuple[Step, ...]
    notes: tuple[str, ...]
    bisect_log: str
    samples: dict[str, list[float]]
    boot_means: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    confidence: float = 0.0
    confidence_text: str = ""
    confirmation: str = ""
    revert: str = ""
    change: str = ""  # the culprit against its parent on boots, as the confirmation tested it
    hosts: str = ""  # which lab hosts measured, how many boots each, and the boots a failed host lost
    watched: WatchedSection | None = None  # the campaign's metric.watch, culprit against parent (watched.py)
    taken_over: str = ""  # orchestrator/queue/takeovers.py summary: "taken over once; 1 boot lost"
    changed: Changed | None = None  # every metric of the confirmation's boots, parent against culprit
    reproduce: Reproduce | None = None  # what a reader needs to run the measurement again
    excluded: Excluded = Excluded()  # the boots left out of the evidence, and why (measure/leftout.py)
    profile: profile_stored.Profiled | None = None  # the kernel profile of the profile boots (docs/explain.md)
    partial: str = ""  # the culprit's share when it carries clearly less than all of the regression
    parts: tuple[Part, ...] = ()  # the regression's steps, oldest first (orchestrator/bisect/steps.py)
    steps_end: str = ""  # why the search for more steps ended (results.StepsEnd)
    reverted: str = ""  # bad with every step reverted together against bad
    suggested_threshold: float | None = None  # a refusal short of the threshold: the one that would bisect it
    range: str = ""  # the range's size and the steps (report/estimate.py Estimate.range_words)


# where the report says the .config files are: the mail attaches them, the reports directory
# holds them beside the report (kinds/run.write_reports)
WHERE = "attached to the mail and kept beside the report file"
MAX_LISTED = 20  # commits of an answer's list a page or a mail shows (the JSON report has them all)


def figures(sha: str, subject: str, boots: list[Boot]) -> CommitFigures:
    means = [statistics.fmean(b.runs) for b in boots]
    if not means:
        return CommitFigures(sha, subject, 0, float("nan"), float("nan"), float("nan"), float("nan"), 0)
    lo, hi = median_ci(means)
    return CommitFigures(sha, subject, sum(len(b.runs) for b in boots), statistics.median(means), lo, hi,
                         statistics.fmean(means), len(boots))


def collect(store: Store, campaign_id: int, metric: str, direction: str, info: Callable[[str], CommitInfo],
            bisected: MetricDef | None = None, watch: tuple[MetricDef, ...] = (),
            min_share: float = DEFAULT_MIN_SHARE, range_words: str = "") -> BisectReport:
    row = store.campaign(campaign_id)
    boots, host_of, hosts = boots_by_host(store, campaign_id, metric)
    samples = {c: [v for b in bs for v in b.runs] for c, bs in boots.items()}
    info = functools.lru_cache(maxsize=None)(info)

    def subject(sha: str) -> str:
        return info(sha).subject

    steps = steps_of(store.decisions(campaign_id), boots, host_of, subject)
    answered = answer_as(BisectResult, row.state, row.result)
    stop = stopped(row.state, row.result)
    done = answered or BisectResult(BisectOutcome.INCONCLUSIVE)
    culprit = info(done.culprit) if done.culprit else None
    parent = done.parent
    confirmation = done.confirmation
    report = BisectReport(
        name=row.name, state=row.state, metric=metric, direction=direction,
        kind=done.outcome.value if answered else row.state,
        culprit=culprit,
        culprit_figures=figures(culprit.sha, culprit.subject, boots.get(culprit.sha, [])) if culprit else None,
        parent_figures=figures(parent, subject(parent), boots.get(parent, [])) if parent else None,
        candidates=tuple(info(c) for c in done.candidates),
        steps=steps, notes=done.notes + ((stop.reason,) if stop else ()), range=range_words,
        suggested_threshold=stop.suggested if stop else None,
        bisect_log=row.bisect_log, samples=samples, confidence=done.confidence,
        confidence_text=done.confidence_text,
        confirmation=f"{confirmation.verdict}: {confirmation.text}" if confirmation is not None else "",
        revert=text_of(done.revert),
        change=confirmation.text.removeprefix("culprit against parent ")
        if confirmation is not None and confirmation.change is not None else "not measured", hosts=hosts,
        taken_over=takeovers.summary(takeovers.of(store, campaign_id)), excluded=excluded(store, campaign_id, metric),
        changed=explain.collect(store, campaign_id, metric, culprit.sha, parent) if culprit and parent else None,
        profile=profile_stored.collect(store, campaign_id, parent, culprit.sha) if culprit and parent else None,
        partial=done.partial or done.unsettled_share(min_share), parts=tuple(Part(x, subject(x.commit)) for x in done.steps),
        steps_end=done.steps_end.value if done.steps_end else "", reverted=text_of(done.reverted))
    watched = watched_section(store, campaign_id, parent or "", culprit.sha if culprit else "",
                              host_of.get(culprit.sha) if culprit else None, bisected, watch)
    named = {role: sha for role, sha in (("culprit", culprit.sha if culprit else ""), ("parent", parent)) if sha}
    return dataclasses.replace(report, boot_means={c: [statistics.fmean(b.runs) for b in bs]
                                                   for c, bs in boots.items()}, watched=watched,
                               reproduce=of_campaign(store, row, named))


def steps_of(decisions: Sequence[Decided], boots: Mapping[str, list[Boot]], host_of: Mapping[str, str],
             subject: Callable[[str], str]) -> tuple[Step, ...]:
    """The rows a campaign shows, in the report, `status ID`, the dashboard and the mail alike:
    every decision but the host's and those that only said a measurement began, each with the
    boots that decided it (`row_boots`, over `boots_by_host`)."""
    shown = [(i, d) for i, d in enumerate(decisions) if d.role is not Role.HOST and d.basis is not Basis.MEASURING]
    return tuple(Step(n + 1, d.role, figures(d.commit, subject(d.commit), row_boots(decisions, i, boots)),
                      d.verdict, d.reason, d.confidence, "" if d.inherited else host_of.get(d.commit, ""), d.basis.value)
                 for n, (i, d) in enumerate(shown))


def row_boots(decisions: Sequence[Decided], at: int, boots: Mapping[str, list[Boot]]) -> list[Boot]:
    """The boots behind decision `decisions[at]`: none for a verdict inherited by image (taken
    without a boot); for the endpoints and a step, its commit's boots up to the runs it was
    decided on (the endpoint check's 2+2 stay 2+2 when the references are booted again later:
    those boots belong to the steps that asked for them); for the confirmation, the culprit's
    boots of its pair (from its `measuring` decision on, as many as it counted), and so for a
    range's ends (its newer end's); for the revert, the reverted kernel's boots of its pair (a
    commit bisection's revert decision names the culprit: its kernel is the one booted in the
    pair that no decision names; a set bisection's names the kernel itself); otherwise every
    boot of its commit."""
    d = decisions[at]
    if d.inherited:
        return []
    mine = list(boots.get(d.commit, []))
    if d.role in (Role.CONFIRM, Role.REVERT, Role.ENDS):
        since = next((x.since for x in reversed(decisions[:at])
                      if x.role is d.role and x.commit == d.commit and x.basis is Basis.MEASURING), None)
        if since is None:
            return mine if d.role is Role.CONFIRM else []
        if d.role is Role.REVERT and not any(x.role is Role.CONFIRM and x.commit == d.commit for x in decisions):
            return [b for b in mine if b.seq >= since]  # a set bisection's revert: the decision names its kernel
        if d.role is Role.REVERT:
            named = {x.commit for x in decisions}
            first = min(((b.seq, c) for c, bs in boots.items() if c not in named for b in bs if b.seq >= since),
                        default=(0, ""))
            return [b for b in boots.get(first[1], []) if b.seq >= since]
        pair = [b for b in mine if b.seq >= since]
        return pair[:d.samples] if d.samples else pair
    if d.role in (Role.GOOD, Role.BAD, Role.STEP) and d.samples:
        out, runs = [], 0
        for b in sorted(mine, key=lambda b: b.seq):
            if runs >= d.samples:
                break
            out.append(b)
            runs += len(b.runs)
        return out
    return mine


def excluded(store: Store, campaign_id: int, metric: str) -> Excluded:
    """The boots the campaign's evidence does not hold: each lab host's whole boots the judge's
    rule leaves out, and the boots cut short (runs stored, yet fewer than a whole boot's), but
    not one that may still be measuring: while the campaign runs, a boot not marked whole
    that no takeover lost and that started after the last takeover."""
    rows = store.boots(campaign_id)
    hosts = {b.host for b in rows if b.status == "ok"}
    counted = {b.id for bs in store.boot_samples(campaign_id, metric).values() for b in bs}
    took = takeovers.of(store, campaign_id)
    lost = {b.boot_id for t in took for b in t.lost}
    since = max((t.at for t in took), default=None)
    running = store.campaign(campaign_id).state == "running"
    with_runs = {r.boot_id for r in store.runs(campaign_id)}

    def measuring(b: BootRow) -> bool:
        return (running and b.status in (takeovers.IN_FLIGHT, "ok") and not (b.facts or {}).get("whole")
                and b.id not in lost and (since is None or b.created >= since))

    cut = tuple(b.id for b in rows if b.id in with_runs and b.id not in counted and b.status != "lost"
                and not measuring(b))
    return Excluded(left_out(store.boot_samples(campaign_id, metric, h or None) for h in sorted(hosts)), cut)


def parent_culprit(r: BisectReport) -> Comparison:
    """The culprit against its parent as a two-variant comparison of the bisected metric, one
    value per boot (the mean of its runs): the table's test counts boots, not runs."""
    assert r.parent_figures is not None and r.culprit_figures is not None
    p, c = r.parent_figures.sha, r.culprit_figures.sha
    variants = [VariantInfo(p[:12], f"parent {p}"), VariantInfo(c[:12], f"culprit {c}")]
    samples = {p[:12]: {"": {r.metric: r.boot_means.get(p, [])}}, c[:12]: {"": {r.metric: r.boot_means.get(c, [])}}}
    return build(f"{r.name}: parent against culprit", r.metric, None, variants, [Point("", None)],
                 {r.metric: MetricMeta("", r.direction)}, samples, [r.metric])


def median(f: CommitFigures) -> str:
    """A step's median, "-" for a commit with no boots of its own (skipped, or inherited by image)."""
    return "-" if math.isnan(f.median) else num(f.median)


def _fig(f: CommitFigures) -> str:
    return (f"median of boots {num(f.median)} (95% CI {num(f.ci_low)}..{num(f.ci_high)}, {f.boots} boots of "
            f"{f.n} runs), mean {num(f.mean)}")


def listed(candidates: Sequence[str]) -> tuple[list[str], str]:
    """The first MAX_LISTED of a list of commits a page or a mail shows, and what is left out
    in words ("" for none): an answer on a range of thousands of commits stays a few lines."""
    more = len(candidates) - MAX_LISTED
    return list(candidates[:MAX_LISTED]), (f"and {more:,} more (the JSON report and the git bisect log list every "
                                           f"one)" if more > 0 else "")


def render_markdown(r: BisectReport) -> str:
    out = [f"# vmbisect campaign {r.name}: {r.kind.replace('_', ' ')}", ""]
    if r.range:
        out += [f"Range: {r.range}", ""]
    if r.culprit is not None:
        c = r.culprit
        out += ["The first commit where the metric regressed:", "", f"    commit {c.sha}",
                f"    Author: {c.author} <{c.email}>", f"    Date:   {c.date}", "", f"        {c.subject}", ""]
    if r.confidence_text:
        by = [what for what, measured in (("the culprit against its parent", r.confirmation), ("its revert", r.revert))
              if measured]
        out += [f"Confidence: {r.confidence_text.removeprefix('confidence ').removeprefix('LOW confidence ')} "
                f"({'high' if r.confidence >= HIGH_CONFIDENCE else 'LOW: the answer may be wrong'}); "
                "the chance that the culprit is the commit named, from every boot of the search"
                + (f", updated by {' and by '.join(by)}" if by else ""), ""]
    if r.confirmation:
        out += [f"Confirmation: {r.confirmation}", ""]
    if r.revert:
        out += [f"Revert: {r.revert}", ""]
    out += steps_markdown(r)
    if r.hosts:
        out += [f"Measured on: {r.hosts}; every step was judged against references measured on its own host", ""]
    if r.taken_over:
        out += [f"Workers: {r.taken_over} (`vmbisect status ID` says from which worker, when and why)", ""]
    if r.excluded:
        out += [f"Evidence: {sentence(r.excluded)}", ""]
    if r.candidates:
        out += ["No single commit can be named; the first bad commit is in:" if r.kind == BisectOutcome.INCONCLUSIVE
                else "Only untestable (skipped) commits were left; the first bad commit is one of:", ""]
        shown, more = listed([f"    {c.sha[:12]} {c.subject}" for c in r.candidates])
        out += shown + ([f"    {more}"] if more else []) + [""]
    if r.culprit_figures and r.parent_figures:
        pf, cf = r.parent_figures, r.culprit_figures
        out += [f"{r.metric} ({Direction(r.direction).value} is better):", "", f"    parent  {pf.sha[:12]}: {_fig(pf)}",
                f"    culprit {cf.sha[:12]}: {_fig(cf)}",
                f"    change: {r.change}", ""]
        pc = parent_culprit(r)
        out += ["Parent against culprit, mmtests layout, one value per boot (+ is better, * significant in a "
                "two-sided Welch t-test on the boot values; the change above is the one the confirmation tested):",
                "", "```", *metric_block(pc, r.metric), "```", ""]
        out += [line for note in pc.notes for line in (f"Note: {note}", "")]
    out += explain_render.markdown(r.changed)
    out += profile_render.markdown(r.profile)
    for note in r.notes:
        out += [f"Note: {note}", ""]
    out += watched_markdown(r.watched)
    if r.reproduce is not None:
        out += reproduce_lines(r.reproduce, r.culprit.sha if r.culprit else "", WHERE)
    out += ["## Steps", "", "| # | role | commit | subject | verdict | host | boots | runs | median | reason |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for s in r.steps:
        f = s.commit
        out.append(f"| {s.index} | {s.role} | {f.sha[:12]} | {f.subject} | {s.verdict} | {s.host} | {f.boots} | "
                   f"{f.n} | {median(f)} | {s.reason.replace('|', '/')} |")
    out += ["", "## git bisect log", "", "```", r.bisect_log.rstrip(), "```", ""]
    return "\n".join(out)


# why the search for more steps ended, for people
ENDED = {StepsEnd.ADD_UP.value: "the steps add up to the whole regression within the noise",
         StepsEnd.SMALL.value: "what is left is below the campaign's steps.min_share",
         StepsEnd.FIRST.value: "the campaign asked for the first step only (steps: first)",
         StepsEnd.NOT_FOUND.value: "a part of the regression is left that no search named (see the notes)"}


def steps_markdown(r: BisectReport) -> list[str]:
    """The culprit's share when partial, and every step of the regression in history order,
    each with its share, the one that crossed the threshold said."""
    out = [f"Share: {r.partial}", ""] if r.partial else []
    if len(r.parts) > 1:
        out += [f"The regression came in {len(r.parts)} steps (oldest first; each one's share of the good-to-bad gap "
                "with its 95% CI; the one that crossed the threshold is the culprit above):", ""]
        out += [line for i, p in enumerate(r.parts, 1) for line in (f"    {i}. {p.step.describe()}",
                                                                       f"       {p.subject}")]
        out += [""]
        if r.reverted:
            out += [f"All steps reverted: {r.reverted}", ""]
    if r.partial and r.steps_end in ENDED:
        out += [f"Steps: {ENDED[r.steps_end]}", ""]
    return out


def render_json(r: BisectReport) -> str:
    return json.dumps({**asdict(dataclasses.replace(r, profile=None)), "profile": profile_render.as_json(r.profile)},
                      indent=2, default=str)


