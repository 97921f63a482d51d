"""`vmbisect bisect FILE` for a `kind: settings` (or `cmdline`) campaign file: checked before
anything is stored, recorded as a `settings` campaign and run through the kind table; the
kind's checks, progress lines, summary and report (orchestrator/commands/kinds.py's row)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.errors import UserError

if TYPE_CHECKING:
    from orchestrator.ports import Event
    from orchestrator.results import SetBisectResult
    from orchestrator.setbisect.campaign import SettingsCampaign
    from orchestrator.specs import SettingsSpec
    from orchestrator.store import Store


def preflight(c: SettingsCampaign) -> None:
    """What can be checked without booting: the lab file and its host, workload, metric and its
    direction, the threshold's sign, the disks the workload and the disk settings need, run_s,
    and the kernel (the file is there, the stored kernel is known, the commit and its recipe)."""
    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.campaign import check_threshold_sign
    from orchestrator.hosts.lab import lab_from
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
        why = f"{choice.workload.name} needs" if needs == choice.workload.needs_disks else \
            f"the disk settings ({', '.join(disk_settings)}) need"
        raise UserError(f"guest.disks.count: {why} at least {needs} data disk(s), got {common.guest.disks.count}")
    own = float(choice.params.get("runtime", 0)) + float(choice.params.get("ramp_time", 0))
    if own >= common.timeouts.run_s:
        raise UserError(f"timeouts.run_s: {common.timeouts.run_s:g} s is not more than the workload's own "
                        f"{own:g} s (runtime + ramp_time)")
    k = c.kernel
    if k.file is not None and not k.file.is_file():
        raise UserError(f"kernel.file: {k.file} is not a file")
    if k.stored is not None:
        from orchestrator.kbuild.store import KernelStore

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


def spec_of_file(raw: Any, path: Path) -> SettingsSpec:
    """The checked spec of a settings campaign file (nothing stored yet)."""
    from orchestrator.setbisect.campaign import parse_settings
    from orchestrator.specs import SettingsSpec

    campaign = parse_settings(raw, base=path.parent, source=path)
    preflight(campaign)
    return SettingsSpec.of(raw, campaign)


def lines(store: Store, campaign_id: int, spec: Any, as_json: bool) -> AbstractContextManager[Callable[[Event], None]]:
    """Progress: JSON lines on stdout, or one line per event on stderr."""
    from orchestrator.progress import json_lines

    if as_json:
        return nullcontext(json_lines())

    def say(e: Event) -> None:
        if e.phase in ("measure",):
            return
        what = f" {e.commit}" if e.commit else ""
        print(f"settings [{e.elapsed_s:6.0f} s] {e.phase}{what}{': ' + e.message if e.message else ''}",
              file=sys.stderr, flush=True)

    return nullcontext(say)


def summary(result: SetBisectResult, campaign_id: int) -> str:
    how = "together (no single change moves the metric)" if result.found == "together" else "alone"
    out = [f"named: {' + '.join(result.units)} {how}", *[f"  {c}" for c in result.changes],
           f"confirmation: {result.confirmation.get('text', '')}", f"revert: {result.revert.get('text', '')}"]
    out += [f"note: {n}" for n in result.notes]
    out.append(f"report: vmbisect report {campaign_id} --format md")
    return "\n".join(out)


def report(store: Store, campaign_id: int, spec: Any, fmt: str) -> str:
    from orchestrator.setbisect.report import RENDERERS, collect

    c: SettingsCampaign = spec.campaign
    common = c.common
    about = [c.kernel.describe(), f"workload {common.workload.name} "
             + " ".join(f"{k}={v}" for k, v in common.workload.params.items()),
             f"metric {common.metric.name}, threshold {common.metric.threshold.describe()}",
             f"good: cmdline '{' '.join(c.good.cmdline)}', settings {dict(c.good.settings)}",
             f"bad: cmdline '{' '.join(c.bad.cmdline)}', settings {dict(c.bad.settings)}"]
    return RENDERERS[fmt](collect(store, campaign_id, c.units(), common.metric.name, about, spec.KIND))
