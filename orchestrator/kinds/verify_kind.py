"""The `verify` kind (`vmbisect verify`): one suspect commit measured against its parent (and,
asked for, a tip with it reverted against the tip) on fresh interleaved boots."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from orchestrator.kinds import bisect_kind
from orchestrator.kinds.kind import Kind, OnEvent, Run, StoredCampaign, no_files
from orchestrator.kinds.specs import VerifySpec
from orchestrator.results import VerifyResult, answer_as, stopped

if TYPE_CHECKING:
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow, Store


def table(result: Any, metric: str, direction: str) -> list[str]:
    """Parent against commit in the mmtests layout, one value per boot."""
    from orchestrator.metrictable.block import metric_block
    from orchestrator.metrictable.cells import VariantInfo
    from orchestrator.metrictable.tabulate import MetricMeta, Point, build

    p, c = result.parent, result.commit
    variants = [VariantInfo(p[:12], f"parent {p}"), VariantInfo(c[:12], f"commit {c}")]
    samples = {p[:12]: {"": {metric: result.boot_means[p]}}, c[:12]: {"": {metric: result.boot_means[c]}}}
    comparison = build(f"{c[:12]} against its parent", metric, None, variants, [Point("", None)],
                       {metric: MetricMeta("", direction)}, samples, [metric])
    return metric_block(comparison, metric)


def _progress(campaign: StoredCampaign, as_json: bool) -> AbstractContextManager[OnEvent]:
    from orchestrator.progress import json_lines

    return nullcontext(json_lines(sys.stderr))


def _run(r: Run) -> str:
    from orchestrator.bisect.suspect import verify_commit
    from orchestrator.wiring import verification_for

    campaign = r.spec.campaign
    judge, vcs, direction = verification_for(campaign, r.store, r.campaign_id, r.pool, r.on_event)
    result = verify_commit(judge, vcs, campaign, direction, r.spec.commit, r.spec.boots, r.spec.revert_on)
    if campaign.explain.profile:  # `verify --profile`: after the verdict, never part of it
        from orchestrator import wiring
        from orchestrator.explain.profile_boots import profile_commits

        profile_commits(campaign, r.store, r.campaign_id, r.pool, result.parent, result.commit, wiring.say, wiring)
    return "\n".join([result.answer.line, *([result.revert.text] if result.revert is not None else []),
                      *table(result, campaign.metric.name, direction)])


def _report(campaign: StoredCampaign, fmt: str) -> str:
    """The answer's lines and, once measured, the parent-against-commit table (one value per
    boot, of the host that measured each last); HTML as one page of the same text."""
    import html
    import json

    from orchestrator.explain import profile_render, profile_stored
    from orchestrator.render.page import page

    store, campaign_id, spec, row = campaign.store, campaign.id, campaign.spec, campaign.row
    answered = answer_as(VerifyResult, row.state, row.result)
    stop = stopped(row.state, row.result)
    if fmt == "json":
        shown = answered or stop
        return json.dumps(shown.to_dict() if shown is not None else {}, indent=2)
    lines = ([*answered.lines, "", *_table(store, campaign_id, spec, answered)] if answered
             else [stop.line()] if stop else [])
    text = "\n".join(lines)
    title = f"vmbisect verification {row.name}: {spec.commit}"
    profile = profile_stored.collect(store, campaign_id, answered.parent, answered.commit) if answered else None
    if fmt == "html":
        return page(title, f"<pre>{html.escape(text)}</pre>{profile_render.html(profile)}")
    return "\n".join([f"# {title}\n\n```\n{text}\n```\n", *profile_render.markdown(profile)])


def _table(store: Store, campaign_id: int, spec: Any, result: VerifyResult) -> list[str]:
    import statistics
    from types import SimpleNamespace

    from orchestrator.campaign.workload import choose_workload
    from orchestrator.measure.evidence import boots_by_host

    metric = spec.campaign.metric.name
    boots, _hosts, _line = boots_by_host(store, campaign_id, metric)
    means = {c: [statistics.fmean(b.runs) for b in boots.get(c, [])] for c in (result.parent, result.commit)}
    measured = SimpleNamespace(parent=result.parent, commit=result.commit, boot_means=means)
    return table(measured, metric, choose_workload(spec.campaign).direction)


def _left(campaign: StoredCampaign, boots: list[BootRow]) -> Estimate:
    from orchestrator.report.estimate import fixed_estimate

    spec = campaign.spec
    total = 2 * spec.boots * (2 if spec.revert_on else 1)
    return fixed_estimate(total, len(boots), "verification")


KIND: Kind[VerifySpec] = Kind(name="verify", spec=VerifySpec, result=VerifyResult, check=bisect_kind.check, lab=bisect_kind.lab,
                              notify=bisect_kind.notify, progress=_progress, run=_run, report=_report, files=no_files,
                              metric=bisect_kind.metric, left=_left)
