"""The `config` kind (docs/config-bisect.md): `vmbisect bisect FILE` with `kind: config`
bisects the options between two .config sides at one commit (orchestrator/setbisect/config*.py)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.errors import KernelFault, UserError
from orchestrator.kinds import bisect_kind, settings_kind
from orchestrator.kinds.kind import Kind, OnEvent, Run, StoredCampaign, no_files
from orchestrator.results import SetBisectResult, StopKind, Stopped
from orchestrator.setbisect.configspec import KIND as NAME
from orchestrator.setbisect.configspec import ConfigSpec

if TYPE_CHECKING:
    from orchestrator.setbisect.configsides import ConfigSides
    from orchestrator.store import Store


def check(spec: ConfigSpec) -> None:
    """What can be checked without building or booting: the commit in the repository (read, not
    cloned), then everything a bisection campaign file's shared keys need (kinds/bisect_kind.py)."""
    from orchestrator.backends.git_bisect import git

    repo = spec.campaign.repository
    if not bisect_kind.is_dir(repo) or git(repo, "rev-parse", "--git-dir", check=False).returncode != 0:
        raise UserError(f"repository: {repo} is not a git repository")
    if git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{spec.commit}^{{commit}}",
           check=False).returncode != 0:
        raise UserError(f"commit: {spec.commit!r} is not a commit in {repo}")
    bisect_kind.preflight(spec.campaign)


def _progress(campaign: StoredCampaign, as_json: bool) -> AbstractContextManager[OnEvent]:
    return settings_kind.set_progress("config", as_json)


def _run(r: Run) -> str:
    from orchestrator.setbisect.setbisection import SetRefused
    from orchestrator.states import stop
    from orchestrator.wiring import config_bisection

    try:
        bisection, sides = config_bisection(r.spec, r.store, r.campaign_id, r.pool, r.on_event)
    except SetRefused as exc:
        message = f"config bisection refused: {exc}"
        stop(r.store, r.campaign_id, Stopped(StopKind.REFUSED, message))
        raise SetRefused(message) from None
    except KernelFault as exc:  # a side's recipe does not configure at the commit (ConfigNotApplied)
        stop(r.store, r.campaign_id, Stopped(StopKind.FAILED, f"config bisection failed: {exc}"))
        raise
    return settings_kind.summary(bisection.run(r.campaign_id), r.campaign_id)


def stored_sides(store: Store, campaign_id: int, spec: ConfigSpec) -> ConfigSides | None:
    """The sides the campaign prepared (None before it got that far, or for other inputs)."""
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.kbuild import gitrepo
    from orchestrator.setbisect import configrun as config_run

    try:
        commit = gitrepo.resolve(spec.campaign.repository, spec.commit).commit
    except UserError:
        return None
    return config_run.stored_sides(campaign_workdir(store, campaign_id), config_run.inputs_digest(spec, commit))


def _report(campaign: StoredCampaign, fmt: str) -> str:
    """The set bisection's report (orchestrator/report/sets.py: the answer, the units'
    changes in the order tried, every candidate with its boots and value against good, the
    confirmation and the revert), headed by the commit, the two sides and how olddefconfig
    grouped the options (units, what each pulls in, what is no candidate and why)."""
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.report.sets import RENDERERS, collect

    store, campaign_id, spec = campaign.store, campaign.id, campaign.spec
    c = spec.campaign
    sides = stored_sides(store, campaign_id, spec)
    about = [f"commit {spec.commit} of {c.repository}", f"good: {spec.good.label}", f"bad: {spec.bad.label}",
             f"workload {c.workload.name} " + " ".join(f"{k}={v}" for k, v in c.workload.params.items()),
             f"metric {c.metric.name}, threshold {c.metric.threshold.describe()}"]
    workdir = campaign_workdir(store, campaign_id)
    about += sides.lines() if sides is not None else [
        f"the two sides' options are not in {workdir}: not prepared yet (olddefconfig runs first), or the "
        "store was copied or moved since (the working directory is keyed by the store's URL)"]
    return RENDERERS[fmt](collect(store, campaign_id, sides.units() if sides else [], c.metric.name, about, NAME))


def _file(raw: Any, path: Path) -> ConfigSpec:
    """The checked spec of a `kind: config` campaign file (nothing stored yet)."""
    from orchestrator.setbisect.configspec import parse_config_campaign

    spec = parse_config_campaign(raw, base=path.parent, source=path)
    check(spec)
    return spec


KIND: Kind[ConfigSpec] = Kind(name=NAME, spec=ConfigSpec, result=SetBisectResult, check=check, lab=bisect_kind.lab,
                              notify=bisect_kind.notify, progress=_progress, run=_run, report=_report, files=no_files,
                              metric=bisect_kind.metric,
                              left=settings_kind.no_estimate, file=_file)
