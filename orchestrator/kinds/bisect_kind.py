"""The `bisect` kind: a commit bisection from a campaign file (docs/campaign.md), run by the
engine (orchestrator/bisect/engine.py) to its culprit."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import UserError
from orchestrator.kinds.kind import Kind, OnEvent, Run, StoredCampaign
from orchestrator.kinds.specs import BisectSpec
from orchestrator.results import DEFAULT_MIN_SHARE, BisectOutcome, BisectResult

if TYPE_CHECKING:
    from orchestrator.bisect.engine import Outcome
    from orchestrator.campaign.file import Campaign
    from orchestrator.campaign.workload import WorkloadChoice
    from orchestrator.notify.recipients import Notify
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow


def preflight(campaign: Campaign) -> WorkloadChoice:
    """Everything about a campaign that can be checked without building or booting, checked
    before it is recorded: workload, parameters, metric and its direction, the threshold's sign,
    the disks the workload needs, run_s against the workload's own time, the kernel recipe, the
    repository and both revisions (read from the user's repository, nothing cloned), the lab
    file and its host."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.campaign.file import check_threshold_sign
    from orchestrator.campaign.workload import choose_workload
    from orchestrator.hosts.labfile import lab_from
    from orchestrator.kbuild.recipe import parse_recipe

    if campaign.lab is not None:
        lab_from(campaign.lab, campaign.host)  # the file's hosts, and `host:` one of them
    choice = choose_workload(campaign)
    check_threshold_sign(campaign.metric.threshold, choice.direction)
    needs = choice.workload.needs_disks
    if campaign.guest.disks.count < needs:
        raise UserError(f"guest.disks.count: {choice.workload.name} needs at least {needs} data disk(s), "
                        f"got {campaign.guest.disks.count}")
    own = float(choice.params.get("runtime", 0)) + float(choice.params.get("ramp_time", 0))
    if own >= campaign.timeouts.run_s:
        raise UserError(f"timeouts.run_s: {campaign.timeouts.run_s:g} s is not more than the workload's own "
                        f"{own:g} s (runtime + ramp_time)")
    try:
        parse_recipe(list(campaign.kernel.config) + ([f"cc={campaign.kernel.cc}"] if campaign.kernel.cc else []))
    except UserError as exc:
        raise UserError(f"kernel.{exc}") from None
    repo = campaign.repository
    if not is_dir(repo) or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UserError(f"repository: {repo} is not a git repository")
    for field, rev in (("good", campaign.good), ("bad", campaign.bad)):
        if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               check=False).returncode != 0:
            raise UserError(f"{field}: {rev!r} is not a commit in {repo}")
    return choice


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system
        return False


def summary(outcome: Outcome, campaign_id: int, min_share: float = DEFAULT_MIN_SHARE) -> str:
    """What `vmbisect bisect` prints at the end: the culprit with its confidence, confirmation
    and revert, its share and the regression's steps when it carries clearly less than all, or
    the candidates left; the notes; how to see the report."""
    from orchestrator.bisect.confidence import confidence_words
    from orchestrator.bisect.confirmation import TEXT_LEADS_WITH_VERDICT
    from orchestrator.report.bisection import listed

    result = outcome.result
    if outcome.outcome is BisectOutcome.FOUND:
        head = f"culprit: {outcome.culprit}\n{confidence_words(outcome.confidence, [])}"
        for key, part in (("confirmation", result.confirmation if result else None),
                          ("revert", result.revert if result else None)):
            if part is not None:
                head += f"\n{key}: {part.verdict}" + ("" if part.verdict in TEXT_LEADS_WITH_VERDICT else f": {part.text}")
        head += "".join(f"\n{line}" for line in (result.regression_steps(min_share) if result else ()))
    else:
        shown, more = listed([c[:12] for c in outcome.candidates])
        head = ("inconclusive: the first bad commit is one of: " if outcome.outcome is BisectOutcome.INCONCLUSIVE
                else "only skipped commits left; the first bad commit is one of: ") + " ".join(shown + [more]).rstrip()
    notes = "".join(f"\nnote: {n}" for n in outcome.notes)
    return f"{head}{notes}\nreport: vmbisect report {campaign_id} --format md"


def check(spec: Any) -> None:
    preflight(spec.campaign)


def lab(spec: Any) -> tuple[Path | None, str | None]:
    return spec.campaign.lab, spec.campaign.host


def notify(spec: Any) -> Notify | None:
    return spec.campaign.notify


def metric(spec: Any) -> str | None:
    return str(spec.campaign.metric.name)


@contextmanager
def _view(campaign: StoredCampaign, as_json: bool) -> Iterator[OnEvent]:
    """JSON lines on stdout, or the live view sized by the range's commits."""
    from orchestrator.progress import LiveView, json_lines

    if as_json:
        yield json_lines()
        return
    c = campaign.spec.campaign
    gb = campaign.clone()
    gb.prepare()
    with LiveView(gb.count_between(gb.resolve(c.good, "good"), gb.resolve(c.bad, "bad"), c.first_parent),
                  boots=c.boots_per_commit) as view:
        yield view


def _run(r: Run) -> str:
    from orchestrator import wiring
    from orchestrator.explain import profile_boots

    outcome = wiring.run_campaign(r.spec.campaign, r.store, r.campaign_id, r.pool, r.on_event)
    profile_boots.profile_culprit(r.spec.campaign, r.store, r.campaign_id, r.pool, outcome.result, wiring.say, wiring)
    return summary(outcome, r.campaign_id, r.spec.campaign.steps.min_share)


def _report(stored: StoredCampaign, fmt: str) -> str:
    from orchestrator.campaign.workload import choose_workload
    from orchestrator.report.bisection import collect, render_json, render_markdown
    from orchestrator.report.bisection_html import render_html

    renderers = {"md": render_markdown, "html": render_html, "json": render_json}
    campaign = stored.spec.campaign
    gb = stored.clone()
    gb.prepare()
    choice = choose_workload(campaign)
    span = _left(stored, stored.store.boots(stored.id)).range_words()
    return renderers[fmt](collect(stored.store, stored.id, campaign.metric.name, choice.direction, gb.info,
                                  choice.metric, choice.watched, campaign.steps.min_share, span))


def _files(stored: StoredCampaign) -> dict[str, str]:
    """The files of the report's Reproduce section (orchestrator/report/reproduce.py)."""
    from orchestrator.report.reproduce import files_of

    return files_of(stored.store, stored.row)


def _left(stored: StoredCampaign, boots: list[BootRow]) -> Estimate:
    """The boots a running bisection has left: its steps left over the commits left (counted in
    its clone, or the user's repository) at its boots per commit."""
    from orchestrator.report.estimate import bisect_estimate, commits_of, marks

    row, spec = stored.row, stored.spec
    git = commits_of(stored.store, row, spec)
    m = marks(row.bisect_log)
    c = spec.campaign
    bad, good = git.resolve(c.bad), git.resolve(c.good)
    whole = git.count(bad, (good,), c.first_parent) if bad and good else None
    if m.found:
        left: int | None = 1
    elif m.bad and m.goods:
        left = git.count(m.bad, m.goods, c.first_parent)
    else:
        left = whole
    return bisect_estimate(stored.store.decisions(row.id), [b.commit for b in boots], c.boots_per_commit, left, whole)


def from_file(raw: Any, path: Path) -> BisectSpec:
    """The checked spec of a campaign file without a `kind:` key (orchestrator/campaign/file.py)."""
    from orchestrator.campaign.file import parse_campaign

    campaign = parse_campaign(raw, base=path.parent, source=path)
    preflight(campaign)
    check_range(campaign)
    return BisectSpec.of(raw, campaign)


def check_range(campaign: Campaign) -> None:
    """A commit bisection's endpoints: bad descends from good and is another commit (git facts
    judged by git_bisect.range_problem), or a one-line UserError naming the field. Config
    bisections share `preflight` but not this: they may name one commit as both."""
    from orchestrator.backends.git_bisect import range_facts, range_problem

    if (problem := range_problem(range_facts(campaign.repository, campaign.good, campaign.bad))) is not None:
        raise UserError(problem)


KIND: Kind[BisectSpec] = Kind(name="bisect", spec=BisectSpec, result=BisectResult, check=check, lab=lab, notify=notify,
                              progress=_view, run=_run, report=_report, files=_files, metric=metric,
                              left=_left)
