"""The `config` kind (docs/config-bisect.md): `vmbisect bisect FILE` with `kind: config` starts
one; its row in the kind table (orchestrator/commands/kinds.py) checks, runs and reports it."""

from __future__ import annotations

import html
import json
import statistics
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import UserError
from orchestrator.results import SetBisectResult, StopKind, Stopped, read

if TYPE_CHECKING:
    from orchestrator.commands.kinds import OnEvent, Run
    from orchestrator.configbisect.sides import Sides
    from orchestrator.configbisect.spec import ConfigSpec
    from orchestrator.store import Store


def check(spec: ConfigSpec) -> None:
    """What can be checked without building or booting: the commit in the repository (read, not
    cloned), then everything a bisection campaign file's shared keys need (commands/bisect.py)."""
    from orchestrator.backends.git_bisect import git
    from orchestrator.commands.bisect import _is_dir, preflight

    repo = spec.campaign.repository
    if not _is_dir(repo) or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UserError(f"repository: {repo} is not a git repository")
    if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{spec.commit}^{{commit}}",
           check=False).returncode != 0:
        raise UserError(f"commit: {spec.commit!r} is not a commit in {repo}")
    preflight(spec.campaign)


def lab(spec: ConfigSpec) -> tuple[Path | None, str | None]:
    return spec.campaign.lab, spec.campaign.host


def progress(store: Store, campaign_id: int, spec: ConfigSpec, as_json: bool) -> AbstractContextManager[OnEvent]:
    from orchestrator.progress import json_lines

    if as_json:
        return nullcontext(json_lines())

    def line(e: Any) -> None:
        what = f" {e.commit}" if e.commit else ""
        print(f"config: {e.phase}{what}: {e.message}" if e.message else f"config: {e.phase}{what}",
              file=sys.stderr, flush=True)
    return nullcontext(line)


def run(r: Run) -> str:
    from orchestrator.setbisect.runner import SetRefused
    from orchestrator.wiring import config_bisection

    try:
        bisection, sides = config_bisection(r.spec, r.store, r.campaign_id, r.pool, r.on_event)
    except SetRefused as exc:
        message = f"config bisection refused: {exc}"
        r.store.set_state(r.campaign_id, "refused", Stopped(StopKind.REFUSED, message).to_dict())
        raise SetRefused(message) from None
    result = bisection.run(r.campaign_id)
    return "\n".join([*answer_lines(result), f"report: vmbisect report {r.campaign_id} --format md"])


def answer_lines(result: SetBisectResult) -> list[str]:
    how = "together (none alone moves it)" if result.found == "together" else "alone"
    out = [f"options: {' + '.join(u.removeprefix('CONFIG_') for u in result.units)} ({how})"]
    out += [f"  {c}" for c in result.changes]
    for key in ("confirmation", "revert"):
        part = getattr(result, key)
        if part:
            out.append(f"{key}: {part.get('text', part.get('verdict', ''))}")
    out += [f"note: {n}" for n in result.notes]
    out.append(f"{result.candidates} candidates judged, {result.boots} boots" +
               (f" on {result.host}" if result.host else ""))
    return out


def stored_sides(store: Store, campaign_id: int, spec: ConfigSpec) -> Sides | None:
    """The sides the campaign prepared (None before it got that far, or for other inputs)."""
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.configbisect import run as config_run
    from orchestrator.kbuild import gitrepo

    try:
        commit = gitrepo.resolve(spec.campaign.repository, spec.commit).commit
    except UserError:
        return None
    return config_run.stored_sides(campaign_workdir(store, campaign_id), config_run.inputs_digest(spec, commit))


def measurements(store: Store, campaign_id: int, spec: ConfigSpec, sides: Sides) -> list[str]:
    """One line per side and candidate measured: its options, boots, mean of boot means, change
    against good, the verdict."""
    from orchestrator.report import boots_by_host
    from orchestrator.setbisect.model import label
    from orchestrator.setbisect.runner import replay

    units = sides.units()
    names = [u.name for u in units]
    decisions = store.decisions(campaign_id)
    asked, _found = replay(units, decisions)
    applied = {"good": frozenset[str](), "bad": frozenset(names), **dict(asked)}
    verdicts = {d.commit: d.verdict for d in decisions if d.role.value in ("good", "bad", "candidate")}
    boots, _hosts, line = boots_by_host(store, campaign_id, spec.campaign.metric.name)
    good = [statistics.fmean(b.runs) for b in boots.get("good", [])]
    head = f"| candidate | boots | {spec.campaign.metric.name} (mean of boot means) | vs good | verdict |"
    out = [head, "|---|---|---|---|---|"]
    for key, chosen in applied.items():
        means = [statistics.fmean(b.runs) for b in boots.get(key, [])]
        if not means and key not in verdicts:
            continue
        mean = statistics.fmean(means) if means else float("nan")
        vs = f"{mean / statistics.fmean(good) - 1:+.1%}" if means and good and key != "good" else ""
        what = label(chosen, names).replace("CONFIG_", "")
        out.append(f"| {what} | {len(means)} | {mean:.6g} | {vs} | {verdicts.get(key, '')} |")
    return out + ([f"measured on: {line}"] if line else [])


def report(store: Store, campaign_id: int, spec: ConfigSpec, fmt: str) -> str:
    """The answer, the options in the order tried with their groups, the table of both sides and
    every candidate; json: the result and the sides' units."""
    from orchestrator.render.page import page

    row = store.campaign(campaign_id)
    result = read("config", row.state, row.result)
    sides = stored_sides(store, campaign_id, spec)
    if fmt == "json":
        return json.dumps({"result": result.to_dict() if result is not None else {},
                           "units": [{"name": u.name, "changes": [c.describe() for c in u.changes], "why": u.why}
                                     for u in (sides.units() if sides else [])],
                           "options": sides.lines() if sides else []}, indent=2)
    title = f"vmbisect config bisection {row.name} at {spec.commit}"
    lines = [f"good: {spec.good.label}", f"bad: {spec.bad.label}", ""]
    if isinstance(result, SetBisectResult):
        lines += answer_lines(result)
    elif result is not None:
        lines.append(result.line())
    if sides is not None:
        lines += ["", *sides.lines(), "", *measurements(store, campaign_id, spec, sides)]
    text = "\n".join(lines)
    return page(title, f"<pre>{html.escape(text)}</pre>") if fmt == "html" else f"# {title}\n\n```\n{text}\n```\n"


def metric(spec: ConfigSpec) -> str | None:
    return str(spec.campaign.metric.name)


def start(path: Path, raw: Any, store_url: str | None, uri: str, as_json: bool) -> int:
    """`vmbisect bisect FILE` for a `kind: config` file: checked whole, then recorded and run."""
    from orchestrator.commands.kinds import execute
    from orchestrator.configbisect.spec import parse_config_campaign
    from orchestrator.specs import record
    from orchestrator.store import Store

    spec = parse_config_campaign(raw, base=path.parent, source=path)
    check(spec)
    store = Store(store_url)
    campaign_id = record(store, spec.campaign.name, spec)  # type: ignore[arg-type]
    return execute(store, campaign_id, uri=uri, as_json=as_json)
