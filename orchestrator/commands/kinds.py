"""One table from a campaign's kind to its spec, its checks, its run, its report and its status
line (kernelci-core's lab_type -> class table): `bisect`, `verify`, `compare`, `resume`,
`report` and `status` look the kind up here, never guess it with isinstance or from the stored
JSON's keys. A new kind of campaign is a new row: its spec (orchestrator/specs.py), its result
(orchestrator/results.py), its run and its report.

`execute` is the one piece every kind's run goes through: the campaign's lock in the store
(taken over from a controller on another host only when asked), the pause on the host's faults
(state paused with a typed reason; `vmbisect resume` goes on), the lab's guest pool opened and
closed, and at the end the reports written to the data directory (reports/<name>-<id>.md and
.html: the morning view, the dashboard and the mail point at them) and every hook in END_HOOKS
called. `run_stored` is the same for a queue worker, with cli.main's exit codes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.results import ANSWERS, STOPS, Result, VerifyResult, read
from orchestrator.specs import SPECS

if TYPE_CHECKING:
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.ports import Event
    from orchestrator.store import CampaignRow, Store

OnEvent = Callable[["Event"], None]
EndHook = Callable[["Store", int], None]

# Called once a run of a campaign ends as done, refused, failed or paused (the row's state and
# result say which), after its reports are written; a hook that raises is reported on stderr and
# changes nothing else. The lead wires the mail sender here.
END_HOOKS: list[EndHook] = []
REPORTED = ("done", "refused", "failed")  # states whose reports are written (a paused one goes on)


@dataclass(frozen=True)
class Run:
    """What a kind's run gets from `execute`: the stored campaign, the open guest pool, where
    progress goes."""

    store: Store
    campaign_id: int
    spec: Any
    pool: GuestPool
    on_event: OnEvent


# ---- bisect and verify (a campaign file) ---------------------------------------------------

def _check_bisect(spec: Any) -> None:
    from orchestrator.commands.bisect import preflight

    preflight(spec.campaign)


def _lab_of_campaign(spec: Any) -> tuple[Path | None, str | None]:
    return spec.campaign.lab, spec.campaign.host


@contextmanager
def _bisect_view(store: Store, campaign_id: int, spec: Any, as_json: bool) -> Iterator[OnEvent]:
    """JSON lines on stdout, or the live view sized by the range's commits."""
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.progress import LiveView, json_lines

    if as_json:
        yield json_lines()
        return
    c = spec.campaign
    gb = GitBisect(c.repository, campaign_workdir(store, campaign_id))
    gb.prepare()
    with LiveView(gb.count_between(gb.resolve(c.good, "good"), gb.resolve(c.bad, "bad"), c.first_parent)) as view:
        yield view


def _run_bisect(r: Run) -> str:
    from orchestrator.commands.bisect import summary
    from orchestrator.wiring import run_campaign

    return summary(run_campaign(r.spec.campaign, r.store, r.campaign_id, r.pool, r.on_event), r.campaign_id)


def _stderr_lines(store: Store, campaign_id: int, spec: Any, as_json: bool) -> AbstractContextManager[OnEvent]:
    from orchestrator.progress import json_lines

    return nullcontext(json_lines(sys.stderr))


def _run_verify(r: Run) -> str:
    from orchestrator.bisect.verify import verify_commit
    from orchestrator.commands.verify import table
    from orchestrator.wiring import verification_for

    campaign = r.spec.campaign
    judge, vcs, direction = verification_for(campaign, r.store, r.campaign_id, r.pool, r.on_event)
    result = verify_commit(judge, vcs, campaign, direction, r.spec.commit, r.spec.boots, r.spec.revert_on)
    return "\n".join([result.answer.line, *([result.revert] if result.revert else []),
                      *table(result, campaign.metric.name, direction)])


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
    """The answer's lines and, once measured, the parent-against-commit table (one value per
    boot, of the host that measured each last); HTML as one page of the same text."""
    import html
    import json

    from orchestrator.render.page import page

    row = store.campaign(campaign_id)
    result = read("verify", row.state, row.result)
    if fmt == "json":
        return json.dumps(result.to_dict() if result is not None else {}, indent=2)
    lines = list(result.lines) if isinstance(result, VerifyResult) else [result.line()] if result else []
    if isinstance(result, VerifyResult):
        lines += ["", *_verify_table(store, campaign_id, spec, result)]
    text = "\n".join(lines)
    title = f"vmbisect verification {row.name}: {spec.commit}"
    return page(title, f"<pre>{html.escape(text)}</pre>") if fmt == "html" else f"# {title}\n\n```\n{text}\n```\n"


def _verify_table(store: Store, campaign_id: int, spec: Any, result: VerifyResult) -> list[str]:
    import statistics
    from types import SimpleNamespace

    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.commands.verify import table
    from orchestrator.report import boots_by_host

    metric = spec.campaign.metric.name
    boots, _hosts, _line = boots_by_host(store, campaign_id, metric)
    means = {c: [statistics.fmean(b.runs) for b in boots.get(c, [])] for c in (result.parent, result.commit)}
    measured = SimpleNamespace(parent=result.parent, commit=result.commit, boot_means=means)
    return table(measured, metric, choose_workload(spec.campaign).direction)


def _metric_of_campaign(spec: Any) -> str | None:
    return str(spec.campaign.metric.name)


# ---- compare -------------------------------------------------------------------------------

def _check_compare(spec: Any) -> None:
    from orchestrator.commands.compare import check_kernels
    from orchestrator.compare.plan import plan_from_spec

    check_kernels(plan_from_spec(spec))


def _lab_of_compare(spec: Any) -> tuple[Path | None, str | None]:
    return spec.lab, spec.host


def _compare_lines(store: Store, campaign_id: int, spec: Any, as_json: bool) -> AbstractContextManager[OnEvent]:
    return nullcontext(lambda e: print(f"compare: {e.message}", file=sys.stderr, flush=True))


def _run_compare(r: Run) -> str:
    from orchestrator.commands.compare import execute, summary_text, write_reports
    from orchestrator.compare.plan import plan_from_spec

    result = execute(plan_from_spec(r.spec), r.store, r.campaign_id, r.pool, r.on_event)
    write_reports(result, list(r.spec.reports))
    return summary_text(result)


def _report_compare(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    from orchestrator.commands import compare

    return compare.report(store, campaign_id, spec, fmt)


def _metric_of_compare(spec: Any) -> str | None:
    return str(spec.metrics[0]) if spec.metrics else None


# ---- settings (a set bisection over command-line parameters and guest settings) -------------

def _check_settings(spec: Any) -> None:
    from orchestrator.commands.setbisect import preflight

    preflight(spec.campaign)


def _lab_of_settings(spec: Any) -> tuple[Path | None, str | None]:
    return spec.campaign.common.lab, spec.campaign.common.host


def _settings_lines(store: Store, campaign_id: int, spec: Any, as_json: bool) -> AbstractContextManager[OnEvent]:
    from orchestrator.commands.setbisect import lines

    return lines(store, campaign_id, spec, as_json)


def _run_settings(r: Run) -> str:
    from orchestrator.commands.setbisect import summary
    from orchestrator.wiring import settings_bisection

    return summary(settings_bisection(r.spec.campaign, r.store, r.campaign_id, r.pool, r.on_event).run(
        r.campaign_id), r.campaign_id)


def _report_settings(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    from orchestrator.commands.setbisect import report

    return report(store, campaign_id, spec, fmt)


def _metric_of_settings(spec: Any) -> str | None:
    return str(spec.campaign.common.metric.name)


def _settings_file(raw: Any, path: Path) -> Any:
    from orchestrator.commands.setbisect import spec_of_file

    return spec_of_file(raw, path)


# ---- the table -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """`check`: what can be checked before it (re)runs, without building or booting; `lab`:
    its lab file and the host it is pinned to; `progress`: where its progress goes by default
    (store, id, spec, as_json); `run`: measure to the end on the pool given, store the result,
    and say what to print; `report`: md, html or json; `metric`: the metric its counts are of."""

    spec: type
    result: type
    check: Callable[[Any], None]
    lab: Callable[[Any], tuple[Path | None, str | None]]
    progress: Callable[["Store", int, Any, bool], AbstractContextManager[OnEvent]]
    run: Callable[[Run], str]
    report: Callable[["Store", int, Any, str], str]
    metric: Callable[[Any], str | None]

    def status(self, row: CampaignRow) -> str:
        """What the campaign ended with, in one line ("" while it runs)."""
        result = read(row.kind, row.state, row.result)
        return result.line() if result is not None else ""


KINDS: dict[str, Kind] = {
    "bisect": Kind(SPECS["bisect"], ANSWERS["bisect"], _check_bisect, _lab_of_campaign, _bisect_view, _run_bisect,
                   _report_bisect, _metric_of_campaign),
    "verify": Kind(SPECS["verify"], ANSWERS["verify"], _check_bisect, _lab_of_campaign, _stderr_lines, _run_verify,
                   _report_verify, _metric_of_campaign),
    "compare": Kind(SPECS["compare"], ANSWERS["compare"], _check_compare, _lab_of_compare, _compare_lines,
                    _run_compare, _report_compare, _metric_of_compare),
}
KINDS["settings"] = Kind(SPECS["settings"], ANSWERS["settings"], _check_settings, _lab_of_settings, _settings_lines,
                         _run_settings, _report_settings, _metric_of_settings)

# Campaign files with a `kind:` key (none: a commit bisection, orchestrator/campaign.py): the
# file's kind -> the checked spec of it (raw YAML, the file's path); nothing is stored before.
# `cmdline` is the same kind as `settings`: one side's command line and settings are bisected together.
FILES: dict[str, Callable[[Any, Path], Any]] = {"settings": _settings_file, "cmdline": _settings_file}


# ---- running a stored campaign -------------------------------------------------------------

def execute(store: Store, campaign_id: int, *, uri: str = "qemu:///system", lab: Path | None = None,
            on_event: OnEvent | None = None, as_json: bool = False, take_over: bool = False,
            one_slot: bool = False) -> int:
    """Start or go on with the stored campaign `campaign_id`, whatever its kind, to its end:
    checked again, under its lock, paused on the host's faults, on a guest pool of `lab` (a lab
    file; None: the campaign's own, or this machine at `uri`) that is closed afterwards;
    progress to `on_event` (None: the kind's own view, JSON lines with `as_json`). Its reports
    are written and END_HOOKS called once it ends. Raises what went wrong (cli.main maps it to
    an exit code); 0 when it ran to its answer. `one_slot`: the campaign shares the lab with
    others a queue worker runs at once, and measures on one slot of it (wiring.lab_slots)."""
    from orchestrator import wiring
    from orchestrator.commands.bisect import paused_on_infra_error
    from orchestrator.hosts.lab import lab_from
    from orchestrator.specs import stored

    row = store.campaign(campaign_id)
    kind, spec = KINDS[row.kind], stored(row)
    kind.check(spec)
    own_lab, host = kind.lab(spec)
    with store.lock(campaign_id, take_over):
        try:
            with paused_on_infra_error(store, campaign_id):
                print(f"vmbisect: campaign {campaign_id} ({row.name}, {row.kind}); resume with: vmbisect resume "
                      f"{campaign_id}", file=sys.stderr)
                pool = wiring.open_pool(lab_from(lab or own_lab, host, uri), store, campaign_id, one_slot)
                try:
                    view = nullcontext(on_event) if on_event else kind.progress(store, campaign_id, spec, as_json)
                    with view as events:
                        said = kind.run(Run(store, campaign_id, spec, pool, events))
                finally:
                    pool.close()
        finally:
            ended(store, campaign_id)
    print(said)
    return 0


def run_stored(store: Store, campaign_id: int, *, lab: Path | None = None, on_event: OnEvent | None = None,
               take_over: bool = False, uri: str = "qemu:///system", one_slot: bool = False) -> int:
    """What a queue worker calls: `execute`, with cli.main's exit codes instead of exceptions
    (0 answered; 2 refused or a user error, the campaign's lock held by another live
    controller included; 3 paused on the host's fault; 4 the kernel failed; 130 interrupted),
    the error's one line on stderr."""
    from orchestrator.exits import exit_code

    return exit_code(lambda: execute(store, campaign_id, uri=uri, lab=lab, on_event=on_event, take_over=take_over,
                                     one_slot=one_slot))


def report_files(row: Any) -> tuple[Path, Path]:
    """Where a campaign's Markdown and HTML reports are written when it ends."""
    from orchestrator import paths

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", row.name).strip("._") or row.kind
    base = paths.data_dir() / "reports" / f"{name}-{row.id}"
    return base.with_suffix(".md"), base.with_suffix(".html")


def ended(store: Store, campaign_id: int) -> None:
    """After a run: a campaign that ended gets its reports written and END_HOOKS called; one
    still running (interrupted) gets nothing. Neither a report nor a hook that fails hides why
    the campaign ended: each is one line on stderr."""
    row = store.campaign(campaign_id)
    if row.state not in STOPS and row.state != "done":
        return
    if row.state in REPORTED:
        try:
            write_reports(store, row)
        except Exception as exc:  # noqa: BLE001 - the campaign's end stands; the report is made again by `report`
            print(f"vmbisect: campaign {campaign_id}: no report written: {exc}", file=sys.stderr)
    for hook in END_HOOKS:
        try:
            hook(store, campaign_id)
        except Exception as exc:  # noqa: BLE001 - a hook (the mail) failing does not change the campaign
            print(f"vmbisect: campaign {campaign_id}: end hook {getattr(hook, '__name__', hook)}: {exc}",
                  file=sys.stderr)


def write_reports(store: Store, row: Any) -> tuple[Path, Path]:
    md, page = report_files(row)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(report(store, row.id, "md"))
    page.write_text(report(store, row.id, "html"))
    from orchestrator.reproduce import write_files

    write_files(store, row.id, md.with_suffix(""))
    print(f"vmbisect: reports {md} and {page}", file=sys.stderr)
    return md, page


def report(store: Store, campaign_id: int, fmt: str) -> str:
    from orchestrator.specs import stored

    row = store.campaign(campaign_id)
    return KINDS[row.kind].report(store, campaign_id, stored(row), fmt)


def result_of(row: Any) -> Result | None:
    return read(row.kind, row.state, row.result)


def status_line(row: Any) -> str:
    """What the campaign ended with, in one line (nothing while it runs without a result)."""
    return KINDS[row.kind].status(row)


def metric_of(row: Any) -> str | None:
    """The metric a campaign judges by (None when it names none, or its stored spec no longer
    reads: the list still shows the campaign)."""
    from orchestrator.errors import UserError
    from orchestrator.specs import stored

    try:
        spec = stored(row)
    except UserError:
        return None
    return KINDS[row.kind].metric(spec)


def _config_kind() -> Kind:
    """The `config` kind (orchestrator/commands/configbisect.py): two .config sides at one commit."""
    from orchestrator.commands import configbisect as c

    return Kind(SPECS["config"], ANSWERS["config"], c.check, c.lab, c.progress, c.run, c.report, c.metric)


def _config_file(raw: Any, path: Path) -> Any:
    from orchestrator.commands.configbisect import spec_of_file

    return spec_of_file(raw, path)


KINDS["config"] = _config_kind()
FILES["config"] = _config_file
