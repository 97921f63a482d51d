"""A `settings` campaign file (YAML) -> a typed SettingsCampaign. Reference:
docs/settings-bisect.md. Commit campaigns stay in orchestrator/campaign/file.py; the parts both
share (name, workload, metric, guest, accel, boots, runs, timeouts, alpha, lab, host, notify) are
parsed by it, with the same field paths and limits.

    kind: settings                  (or cmdline: the same kind)
    name: sched-regression
    kernel: {file: /boot/vmlinuz-6.1.0-13-amd64, modules: 6.1.0-13-amd64}
            (or {stored: NAME}, or {commit: v6.1, repository: ~/linux, config: [guest-base]})
    good: {cmdline: "", settings: {scheduler: none, nomerges: 0}}
    bad:  {cmdline: "", settings: {scheduler: bfq, read_ahead_kb: 4096, nomerges: 2}}
    together: [[a, b]]              (optional: changes settable only together)
    workload: {name: fio, params: {...}}
    metric: {name: iops, threshold: -10%}
    guest: {disks: {count: 1, controller: virtio-scsi}}

Every error is one line naming the field and, where there is a fixed set, the valid choices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from orchestrator import yamlcheck
from orchestrator.campaign.file import MAX_APPEND, Campaign, parse_campaign
from orchestrator.compare.variant import SCHEDULERS, parse_sysfs
from orchestrator.errors import UserError, choices_error
from orchestrator.setbisect.model import Unit
from orchestrator.setbisect.settings import QUEUE_KNOBS, SETTINGS, SYSFS_PREFIX, SettingsSide, side_of, units

FILE_KINDS = ("settings", "cmdline")
# keys a settings campaign shares with a commit campaign (parsed by orchestrator/campaign/file.py)
COMMON = ("name", "workload", "metric", "guest", "accel", "boots_per_commit", "max_boots_per_commit",
          "runs_per_boot", "timeouts", "alpha", "lab", "host", "notify")
OWN = ("kind", "kernel", "good", "bad", "together")
KERNEL_KEYS = ("file", "stored", "commit", "repository", "config", "modules")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:/+-]*(=[A-Za-z0-9_.,:/+@%=-]*)?")
NOMERGES = ("0", "1", "2")
MAX_READ_AHEAD_KB = 1 << 20
MAX_GROUPS = 64


@dataclass(frozen=True)
class KernelChoice:
    """The one kernel every candidate boots: a bzImage `file`, a kernel `stored` by `vmbisect
    build`, or `commit` of `repository` built with the recipe `config`; `modules`: the host's
    release whose modules go into the guest (distribution kernels: bfq is a module)."""

    file: Path | None = None
    stored: str | None = None
    commit: str | None = None
    repository: Path | None = None
    config: tuple[str, ...] = ("guest-base",)
    modules: str | None = None

    def describe(self) -> str:
        what = (f"kernel {self.file}" if self.file else f"kernel {self.stored}" if self.stored
                else f"commit {self.commit} of {self.repository} ({', '.join(self.config)})")
        return f"{what}, modules {self.modules}" if self.modules else what


@dataclass(frozen=True)
class SettingsCampaign:
    common: Campaign  # name, workload, metric, guest, boots, runs, timeouts, alpha, lab, host
    kernel: KernelChoice
    good: SettingsSide
    bad: SettingsSide
    together: tuple[tuple[str, ...], ...] = ()

    @property
    def name(self) -> str:
        return self.common.name

    def units(self) -> list[Unit]:
        return units(self.good, self.bad, self.together)


def parse_settings(data: Any, base: Path = Path("."), source: Path | None = None) -> SettingsCampaign:
    yamlcheck.check_tree(data, "campaign", "a campaign file is a page")
    top = yamlcheck.mapping(data, "campaign")
    yamlcheck.known(top, "", [*OWN, *COMMON])
    kind = yamlcheck.text(top.get("kind", ""), "kind")
    if kind not in FILE_KINDS:
        raise choices_error("kind", kind, FILE_KINDS)
    for required in ("kernel", "good", "bad"):
        if required not in top:
            raise UserError(f"{required}: missing (required)")
    common = parse_campaign({**{k: v for k, v in top.items() if k in COMMON}, "repository": str(base),
                             "good": "HEAD", "bad": "HEAD"}, base, source)
    good, bad = _side(top["good"], "good"), _side(top["bad"], "bad")
    together = _together(top.get("together", []))
    campaign = SettingsCampaign(common, _kernel(top["kernel"], base), good, bad, together)
    if not campaign.units():
        raise UserError("bad: the two sides do not differ (same command line and settings); nothing to bisect")
    return campaign


def _kernel(value: Any, base: Path) -> KernelChoice:
    data = yamlcheck.mapping(value, "kernel")
    yamlcheck.known(data, "kernel", list(KERNEL_KEYS))
    given = [k for k in ("file", "stored", "commit") if k in data]
    if len(given) != 1:
        raise UserError(f"kernel: give exactly one of file, stored, commit (got {', '.join(given) or 'none'})")
    modules = yamlcheck.text(data["modules"], "kernel.modules", 128) if data.get("modules") is not None else None
    if "file" in data:
        return KernelChoice(file=_path(data["file"], "kernel.file", base), modules=modules)
    if "stored" in data:
        return KernelChoice(stored=yamlcheck.text(data["stored"], "kernel.stored", 128), modules=modules)
    from orchestrator.campaign.file import revision

    if "repository" not in data:
        raise UserError("kernel.repository: missing (required with kernel.commit)")
    config = data.get("config", ["guest-base"])
    config = [config] if isinstance(config, str) else config
    yamlcheck.items(config, "kernel.config", "recipe items", 64)
    return KernelChoice(commit=revision(data["commit"], "kernel.commit"),
                        repository=_path(data["repository"], "kernel.repository", base),
                        config=tuple(yamlcheck.text(c, "kernel.config") for c in config), modules=modules)


def _path(value: Any, field: str, base: Path) -> Path:
    text = yamlcheck.text(value, field)
    if not text:
        raise UserError(f"{field}: empty; give a path")
    path = Path(text).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _side(value: Any, path: str) -> SettingsSide:
    data = yamlcheck.mapping(value, path)
    yamlcheck.known(data, path, ["cmdline", "settings"])
    cmdline = yamlcheck.text(data.get("cmdline", "") or "", f"{path}.cmdline", MAX_APPEND)
    names: set[str] = set()
    for word in cmdline.split():
        if not _WORD.fullmatch(word):
            raise UserError(f"{path}.cmdline: {word[:60]!r} is not a parameter (name or name=value of letters, "
                            "digits and _.,:/+-; no quotes)")
        name = word.partition("=")[0]
        if name in names:
            raise UserError(f"{path}.cmdline: {name} given twice")
        if name in SETTINGS:
            raise UserError(f"{path}.cmdline: {name} is also a setting's name; set it under settings")
        names.add(name)
    return side_of(cmdline, _settings(data.get("settings", {}) or {}, f"{path}.settings"))


def _settings(value: Any, path: str) -> dict[str, str]:
    data = yamlcheck.mapping(value, path)
    yamlcheck.known(data, path, list(SETTINGS))
    out: dict[str, str] = {}
    if "scheduler" in data:
        sched = yamlcheck.text(data["scheduler"], f"{path}.scheduler")
        if sched not in SCHEDULERS:
            raise choices_error(f"{path}.scheduler", sched, SCHEDULERS)
        out["scheduler"] = sched
    if "read_ahead_kb" in data:
        out["read_ahead_kb"] = str(_whole(data["read_ahead_kb"], f"{path}.read_ahead_kb", 0, MAX_READ_AHEAD_KB))
    if "nomerges" in data:
        raw = data["nomerges"]
        if isinstance(raw, bool) or not isinstance(raw, (int, str)) or str(raw) not in NOMERGES:
            raise choices_error(f"{path}.nomerges", raw, NOMERGES)
        out["nomerges"] = str(raw)
    for path_, setting in yamlcheck.mapping(data.get("sysfs", {}) or {}, f"{path}.sysfs").items():
        text = setting if isinstance(setting, str) else str(setting) if isinstance(setting, int) and not isinstance(
            setting, bool) else None
        if text is None:
            raise UserError(f"{path}.sysfs.{path_}: expected a value (text or a whole number), got "
                            f"{yamlcheck.kind(setting)}")
        sys_path, sys_value = parse_sysfs(f"{path}.sysfs", f"{yamlcheck.text(path_, f'{path}.sysfs')}={text}")
        if sys_path in QUEUE_KNOBS.values() or sys_path.endswith("/queue/scheduler"):
            raise UserError(f"{path}.sysfs: {sys_path} has a setting of its own (scheduler, read_ahead_kb, nomerges)")
        out[f"{SYSFS_PREFIX}{sys_path}"] = sys_value
    if "nice" in data:
        out["nice"] = str(_whole(data["nice"], f"{path}.nice", -20, 19))
    return out


def _whole(value: Any, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{path}: expected a whole number from {low} to {high}, got {yamlcheck.shown(value)}")
    return value


def _together(value: Any) -> tuple[tuple[str, ...], ...]:
    groups = yamlcheck.items(value, "together", "groups of change names", MAX_GROUPS)
    out = []
    for i, group in enumerate(groups):
        names = yamlcheck.items(group, f"together[{i}]", "change names", 64)
        if len(names) < 2:
            raise UserError(f"together[{i}]: a group names at least two changes, got {len(names)}")
        out.append(tuple(yamlcheck.text(n, f"together[{i}]", 256) for n in names))
    return tuple(out)


def is_settings_file(raw: Any) -> bool:
    return isinstance(raw, Mapping) and raw.get("kind") in FILE_KINDS
