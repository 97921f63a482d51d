"""One table from a campaign's kind to what runs it, reports it and says where it stands
(kernelci-core's lab_type -> class table): `resume`, `report` and `status` look the kind up
here, never guess it with isinstance or from the stored JSON's keys. A new kind of campaign is
a new row: its spec (orchestrator/specs.py), its result (orchestrator/results.py), its run and
its report.

`run_stored` runs a stored campaign of any kind to its end, under its lock, pausing on the
host's faults (commands/bisect.py execute, verify.execute, compare.execute own that); it is
what `vmbisect resume` calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.results import ANSWERS, VerifyResult, read

if TYPE_CHECKING:
    from orchestrator.store import Store


@dataclass(frozen=True)
class Options:
    """How a stored campaign runs: the libvirt URI without a lab, progress as JSON lines, take
    the lock over from a controller on another host that is gone."""

    uri: str
    as_json: bool = False
    take_over: bool = False


def _run_bisect(store: Store, campaign_id: int, spec: Any, o: Options) -> int:
    from orchestrator.commands.bisect import execute, preflight

    preflight(spec.campaign)
    return execute(spec.campaign, store, campaign_id, o.uri, o.as_json, o.take_over)


def _run_verify(store: Store, campaign_id: int, spec: Any, o: Options) -> int:
    from orchestrator.commands import verify

    return verify.execute(store, campaign_id, o.uri, o.take_over)


def _run_compare(store: Store, campaign_id: int, spec: Any, o: Options) -> int:
    from orchestrator.commands import compare

    return compare.resume(store, campaign_id, spec, o.uri, o.take_over)


def _report_bisect(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.report import collect, render_json, render_markdown
    from orchestrator.report_html import render_html

    renderers = {"md": render_markdown, "html": render_html, "json": render_json}
    campaign = spec.campaign
    gb = GitBisect(campaign.repository, campaign_workdir(store, campaign_id))
    gb.prepare()
    return renderers[fmt](collect(store, campaign_id, campaign.metric.name, choose_workload(campaign).direction,
                                  gb.info))


def _report_verify(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    row = store.campaign(campaign_id)
    result = read("verify", row.state, row.result)
    if fmt == "json":
        return json.dumps(result.to_dict() if result is not None else {}, indent=2)
    if isinstance(result, VerifyResult):
        return "\n".join(result.lines)
    return result.line() if result is not None else ""


def _report_compare(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    from orchestrator.commands import compare

    return compare.report(store, campaign_id, spec, fmt)


@dataclass(frozen=True)
class Kind:
    run: Callable[["Store", int, Any, Options], int]
    report: Callable[["Store", int, Any, str], str]
    result: type


KINDS: dict[str, Kind] = {
    "bisect": Kind(_run_bisect, _report_bisect, ANSWERS["bisect"]),
    "verify": Kind(_run_verify, _report_verify, ANSWERS["verify"]),
    "compare": Kind(_run_compare, _report_compare, ANSWERS["compare"]),
}


def run_stored(store: Store, campaign_id: int, options: Options) -> int:
    """Start or go on with the stored campaign `campaign_id`, whatever its kind."""
    from orchestrator.specs import stored

    row = store.campaign(campaign_id)
    return KINDS[row.kind].run(store, campaign_id, stored(row), options)


def report(store: Store, campaign_id: int, fmt: str) -> str:
    from orchestrator.specs import stored

    row = store.campaign(campaign_id)
    return KINDS[row.kind].report(store, campaign_id, stored(row), fmt)


def status_line(row: Any) -> str:
    """What the campaign ended with, in one line (nothing while it runs without a result)."""
    result = read(row.kind, row.state, row.result)
    return result.line() if result is not None else ""
