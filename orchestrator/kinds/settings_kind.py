"""The `settings` kind (docs/settings-bisect.md): `vmbisect bisect FILE` with `kind: settings`
(or `cmdline`: the same kind) bisects the command-line parameters and guest settings between a
good and a bad side on one kernel (orchestrator/setbisect/)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.decisions import Found
from orchestrator.errors import UserError
from orchestrator.kinds.kind import Kind, OnEvent, Run, StoredCampaign, no_files
from orchestrator.kinds.specs import SettingsSpec
from orchestrator.results import SetBisectResult, text_of

if TYPE_CHECKING:
    from orchestrator.notify.recipients import Notify
    from orchestrator.ports import Event
    from orchestrator.report.estimate import Estimate
    from orchestrator.setbisect.campaign import SettingsCampaign
    from orchestrator.store import BootRow


def preflight(c: SettingsCampaign) -> None:
    """What can be checked without booting: the lab file and its host, workload, metric and its
    direction, the threshold's sign, the disks the workload and the disk settings need, run_s,
    and the kernel (the file is there, the stored kernel is known, the commit and its recipe)."""
    from orchestrator.campaign.file import check_threshold_sign
    from orchestrator.campaign.workload import choose_workload
    from orchestrator.hosts.labfile import lab_from
    from orchestrator.kbuild.recipe import parse_recipe

    common = c.common
    if common.lab is not None:
        lab_from(common.lab, common.host)
    choice = choose_workload(common)
    check_threshold_sign(common.metric.threshold, choice.direction)
    disk_settings = [u.name for u in c.units() for ch in u.changes
                     if ch.name in ("scheduler", "read_ahead_kb", "nomerges") or "{disk}" in ch.name]
    needs = max(choice.workload.needs_disks, 1 if disk_settings else 0)
    if common.guest.disks.count < needs:
        why = (f"{choice.workload.name} needs" if needs == choice.workload.needs_disks
               else f"the disk settings ({', '.join(disk_settings)}) need")
        raise UserError(f"guest.disks.count: {why} at least {needs} data disk(s), got {common.guest.disks.count}")
    own = float(choice.params.get("runtime", 0)) + float(choice.params.get("ramp_time", 0))
    if own >= common.timeouts.run_s:
        raise UserError(f"timeouts.run_s: {common.timeouts.run_s:g} s is not more than the workload's own "
                        f"{own:g} s (runtime + ramp_time)")
    k = c.kernel
    if k.file is not None and not k.file.is_file():
        raise UserError(f"kernel.file: {k.file} is not a file")
    if k.stored is not None:
        from orchestrator.kbuild.kernelstore import KernelStore

        KernelStore().resolve(k.stored)
    if k.commit is not None:
        from orchestrator.backends.git_bisect import git

        try:
            parse_recipe(list(k.config))
        except UserError as exc:
            raise UserError(f"kernel.{exc}") from None
        assert k.repository is not None
        if not k.repository.is_dir() or git(k.repository, "rev-parse", "--git-dir", check=False).returncode != 0:
            raise UserError(f"kernel.repository: {k.repository} is not a git repository")
        if git(k.repository, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{k.commit}^{{commit}}",
               check=False).returncode != 0:
            raise UserError(f"kernel.commit: {k.commit!r} is not a commit in {k.repository}")


def set_progress(what: str, as_json: bool) -> AbstractContextManager[OnEvent]:
    """A set bisection's progress: JSON lines on stdout, or one line per event on stderr."""
    from orchestrator.progress import json_lines

    if as_json:
        return nullcontext(json_lines())

    def say(e: Event) -> None:
        if e.phase == "measure":
            return
        commit = f" {e.commit}" if e.commit else ""
        print(f"{what} [{e.elapsed_s:6.0f} s] {e.phase}{commit}{': ' + e.message if e.message else ''}",
              file=sys.stderr, flush=True)

    return nullcontext(say)


def summary(result: SetBisectResult, campaign_id: int) -> str:
    """What `vmbisect bisect` prints at the end of a set bisection (settings and config)."""
    how = "together (no single change moves the metric)" if result.found is Found.TOGETHER else "alone"
    out = [f"named: {' + '.join(result.units)} {how}", *[f"  {c}" for c in result.changes],
           f"confirmation: {text_of(result.confirmation)}", f"revert: {text_of(result.revert)}"]
    out += [f"note: {n}" for n in result.notes]
    out.append(f"report: vmbisect report {campaign_id} --format md")
    return "\n".join(out)


def no_estimate(campaign: StoredCampaign, boots: list[BootRow]) -> Estimate:
    """A set bisection's boots left are not estimated (the search's rounds depend on the answers)."""
    from orchestrator.report.estimate import Estimate

    return Estimate(None, f"no estimate for a {campaign.row.kind} campaign")


def _check(spec: SettingsSpec) -> None:
    preflight(spec.campaign)


def _lab(spec: SettingsSpec) -> tuple[Path | None, str | None]:
    return spec.campaign.common.lab, spec.campaign.common.host


def _notify(spec: SettingsSpec) -> Notify | None:
    return spec.campaign.common.notify


def _progress(campaign: StoredCampaign, as_json: bool) -> AbstractContextManager[OnEvent]:
    return set_progress("settings", as_json)


def _run(r: Run) -> str:
    from orchestrator.wiring import settings_bisection

    return summary(settings_bisection(r.spec.campaign, r.store, r.campaign_id, r.pool, r.on_event).run(
        r.campaign_id), r.campaign_id)


def _report(campaign: StoredCampaign, fmt: str) -> str:
    from orchestrator.report.sets import RENDERERS, collect

    spec = campaign.spec
    c: SettingsCampaign = spec.campaign
    common = c.common
    about = [c.kernel.describe(), f"workload {common.workload.name} "
             + " ".join(f"{k}={v}" for k, v in common.workload.params.items()),
             f"metric {common.metric.name}, threshold {common.metric.threshold.describe()}",
             f"good: cmdline '{' '.join(c.good.cmdline)}', settings {dict(c.good.settings)}",
             f"bad: cmdline '{' '.join(c.bad.cmdline)}', settings {dict(c.bad.settings)}"]
    return RENDERERS[fmt](collect(campaign.store, campaign.id, c.units(), common.metric.name, about, spec.KIND))


def _metric(spec: SettingsSpec) -> str | None:
    return str(spec.campaign.common.metric.name)


def _file(raw: Any, path: Path) -> SettingsSpec:
    """The checked spec of a settings campaign file (nothing stored yet)."""
    from orchestrator.setbisect.campaign import parse_settings

    campaign = parse_settings(raw, base=path.parent, source=path)
    preflight(campaign)
    return SettingsSpec.of(raw, campaign)


KIND: Kind[SettingsSpec] = Kind(name="settings", spec=SettingsSpec, result=SetBisectResult, check=_check, lab=_lab,
                                notify=_notify, progress=_progress, run=_run, report=_report, files=no_files,
                                metric=_metric, left=no_estimate, file=_file, aliases=("cmdline",))
