"""Campaign file (YAML) -> frozen, typed Campaign. Reference: docs/campaign.md.

Every error names the field's path (e.g. `guest.disks.controller`) and, where there is a
fixed set, the valid choices; unknown keys are rejected with the keys that are allowed.
Counts and sizes have upper bounds (the table in docs/campaign.md says which and why), and
the file itself is bounded: size, nesting, number of values, no alias loops, UTF-8 only.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from orchestrator import yamlcheck
from orchestrator.errors import UserError
from orchestrator.measure.endpoints import MEASURED, Threshold
from orchestrator.notify.recipients import Notify, parse_notify
from orchestrator.vm.clocksource import CLOCKS, DEFAULT_CLOCK, LEGACY_CLOCK
from orchestrator.vm.spec import (
    AIO_MODES,
    BACKINGS,
    CACHE_MODES,
    CONTROLLERS,
    MACHINES,
    MAX_DISK_MIB,
    MAX_DISKS,
    MAX_IOTHREADS,
    MAX_MEMORY_MIB,
    MAX_QUEUES,
    MAX_VCPUS,
    DiskSpec,
    Topology,
    VmSpec,
)

ACCELS = ("auto", "kvm", "tcg")
DIRECTIONS = ("higher", "lower")
# Bounds of the file itself (docs/campaign.md, "Limits").
MAX_TEXT = yamlcheck.MAX_TEXT
MAX_APPEND = 2047  # x86 COMMAND_LINE_SIZE is 2048 bytes with the terminating NUL
MAX_CONFIG_ITEMS = 64
MAX_PARAMS = 64
MAX_BOOTS = 1000
MAX_RUNS_PER_BOOT = 100
MAX_WATCH = 16
# A revision is a name git resolves (tag, branch, hash, HEAD~3, v6.1^): never an option, a
# range or anything with blanks; `git check-ref-format` allows more, we need no more.
_REVISION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./~^@{}+-]{0,254}")
BUILD_FAILURE_POLICIES = ("skip",)
BOOT_FAILURE_POLICIES = ("skip", "bad")
CONFIRMS = ("revert", "none")


@dataclass(frozen=True)
class KernelRecipe:
    config: tuple[str, ...] = ("guest-base",)
    cc: str = ""


@dataclass(frozen=True)
class Workload:
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    name: str
    threshold: Threshold
    direction: str = ""
    watch: tuple[str, ...] = ()  # other metrics the report shows for the culprit and its parent


@dataclass(frozen=True)
class SkipPolicy:
    build_failure: str = "skip"
    boot_failure: str = "skip"


@dataclass(frozen=True)
class Timeouts:
    build_s: float = 3600.0
    boot_s: float = 180.0
    run_s: float = 1800.0


@dataclass(frozen=True)
class Explain:
    """What is done after a culprit is found to say why it regressed (docs/explain.md):
    `profile`, the kernel profile of parent and culprit on `profile_boots` guests each, never
    counted as evidence. On unless `explain: none`: the default recipe (guest-base) builds kernels
    with kallsyms and the ORC unwinder; a kernel without symbols leaves a note instead."""

    profile: bool = True
    profile_boots: int = 2


MAX_PROFILE_BOOTS = 8


@dataclass(frozen=True)
class Steps:
    """After the culprit is confirmed (docs/campaign.md, "Regressions in several steps"): look
    for the other steps of the regression while the named ones do not add up to the whole
    (`first`: stop at the culprit), down to a part of the good-to-bad gap of `min_share`."""

    first: bool = False
    min_share: float = 0.2


@dataclass(frozen=True)
class Campaign:
    name: str
    repository: Path
    good: str
    bad: str
    workload: Workload
    metric: Metric
    kernel: KernelRecipe = KernelRecipe()
    guest: VmSpec = VmSpec()
    accel: str = "auto"
    append: str = ""
    boots_per_commit: int = 2
    max_boots_per_commit: int = 8
    runs_per_boot: int = 3
    confirm: str = "revert"
    skip_policy: SkipPolicy = SkipPolicy()
    timeouts: Timeouts = Timeouts()
    first_parent: bool = False
    alpha: float = 0.05
    lab: Path | None = None  # lab file (docs/hosts.md); None: this machine
    host: str | None = None  # the lab host every guest runs on; None: the first free one, then that one
    notify: Notify | None = None  # who is mailed when it ends (docs/mail.md); None: the lab's list
    explain: Explain = Explain()
    steps: Steps = Steps()
    source: Path | None = None


def load_campaign(path: Path) -> Campaign:
    return parse_campaign(read_campaign_file(path), base=path.parent, source=path)


def read_campaign_file(path: Path) -> Any:
    """The file's YAML as plain data, or a one-line UserError (yamlcheck.read_file)."""
    return yamlcheck.read_file(path, "campaign", "a campaign file is a page",
                               "a mapping with name, repository, good, bad, workload, metric")


def with_clock(raw: Mapping[str, Any], clock: str) -> dict[str, Any]:
    """`raw` (a campaign file's mapping) with its guest's clock written out, as the store keeps
    it: a campaign names the clock it started with, so a later default never changes it."""
    guest = raw.get("guest", {})
    return {**raw, "guest": {**guest, "clock": clock}} if isinstance(guest, Mapping) else dict(raw)


def stored_clock(data: Mapping[str, Any]) -> dict[str, Any]:
    """A stored campaign file as it was meant: one stored before `guest.clock` existed booted
    its guests with the kernel's own clock, and is resumed so."""
    guest = data.get("guest", {})
    if isinstance(guest, Mapping) and "clock" not in guest:
        return {**data, "guest": {**guest, "clock": LEGACY_CLOCK}}
    return dict(data)


def parse_campaign(data: Any, base: Path = Path("."), source: Path | None = None) -> Campaign:
    yamlcheck.check_tree(data, "campaign", "a campaign file is a page")
    top = yamlcheck.mapping(data, "campaign")
    yamlcheck.known(top, "", [f.name for f in fields(Campaign) if f.name != "source"])
    for required in ("name", "repository", "good", "bad", "workload", "metric"):
        if required not in top:
            raise UserError(f"{required}: missing (required)")
    campaign = Campaign(
        name=_name(top["name"]),
        repository=_repository(top["repository"], base),
        good=_revision(top["good"], "good"),
        bad=_revision(top["bad"], "bad"),
        workload=_workload(top["workload"]),
        metric=_metric(top["metric"]),
        kernel=_kernel(top.get("kernel", {})),
        guest=_guest(top.get("guest", {})),
        accel=_choice(top.get("accel", "auto"), "accel", ACCELS),
        append=yamlcheck.text(top.get("append", ""), "append", MAX_APPEND),
        boots_per_commit=_int(top.get("boots_per_commit", 2), "boots_per_commit", 2, MAX_BOOTS),
        max_boots_per_commit=_int(top.get("max_boots_per_commit", 8), "max_boots_per_commit", 2, MAX_BOOTS),
        runs_per_boot=_int(top.get("runs_per_boot", 3), "runs_per_boot", 1, MAX_RUNS_PER_BOOT),
        confirm=_choice(top.get("confirm", "revert"), "confirm", CONFIRMS),
        skip_policy=_skip(top.get("skip_policy", {})),
        timeouts=_timeouts(top.get("timeouts", {})),
        first_parent=_bool(top.get("first_parent", False), "first_parent"),
        alpha=_float(top.get("alpha", 0.05), "alpha", 1e-6, 0.5),
        lab=_path(top["lab"], "lab", base) if top.get("lab") is not None else None,
        host=yamlcheck.text(top["host"], "host") if top.get("host") is not None else None,
        notify=parse_notify(top["notify"]) if "notify" in top else None,
        explain=_explain(top["explain"]) if "explain" in top else Explain(),
        steps=_steps(top["steps"]) if "steps" in top else Steps(),
        source=source,
    )
    if campaign.host is not None and campaign.lab is None:
        raise UserError("host: needs lab: naming the lab file of the hosts")
    if campaign.max_boots_per_commit < campaign.boots_per_commit:
        raise UserError(f"max_boots_per_commit: must be at least boots_per_commit ({campaign.boots_per_commit}), "
                        f"got {campaign.max_boots_per_commit}")
    return campaign


def _repository(value: Any, base: Path) -> Path:
    return _path(value, "repository", base, "the path of a git repository")


def _path(value: Any, field: str, base: Path, what: str = "a file") -> Path:
    """A path of the file (`~` expanded, relative to the campaign file's directory)."""
    text = yamlcheck.text(value, field)
    if not text:
        raise UserError(f"{field}: empty; give {what}")
    try:
        path = Path(text).expanduser()
        return path if path.is_absolute() else (base / path).resolve()
    except RuntimeError:
        raise UserError(f"{field}: cannot expand {text.split('/')[0]!r}: no such user") from None
    except OSError as exc:
        raise UserError(f"{field}: {text[:80]!r}: {exc.strerror}") from None


def _revision(value: Any, path: str) -> str:
    text = yamlcheck.text(value, path)
    if not _REVISION.fullmatch(text) or ".." in text:
        raise UserError(f"{path}: {text!r} is not a revision; give a tag, branch or commit hash "
                        "(letters, digits and . _ / ~ ^ @ {{ }} + -, not starting with '-', no '..')")
    return text


def revision(value: Any, path: str) -> str:
    """A revision as the campaign file accepts one (`path` names the field or flag in errors)."""
    return _revision(value, path)


def _name(value: Any) -> str:
    text = yamlcheck.text(value, "name")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", text):
        raise UserError(f"name: {text!r} must be 1-64 letters, digits, '.', '_' or '-'")
    return text


def _int(value: Any, path: str, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{path}: expected a whole number, got {yamlcheck.shown(value)}")
    if value < minimum:
        raise UserError(f"{path}: must be at least {minimum}, got {value}")
    if value > maximum:
        raise UserError(f"{path}: must be at most {maximum}, got {yamlcheck.shown(value)}")
    return value


def _float(value: Any, path: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{path}: expected a number, got {yamlcheck.shown(value)}")
    if not low <= value <= high:
        raise UserError(f"{path}: must be between {low:g} and {high:g}, got {yamlcheck.shown(value)}")
    return float(value)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{path}: expected true or false, got {yamlcheck.shown(value)}")
    return value


def _choice(value: Any, path: str, choices: tuple[str, ...] | list[str]) -> str:
    text = yamlcheck.text(value, path)
    if text not in choices:
        raise UserError(f"{path}: invalid value {text!r}; valid choices: {', '.join(choices)}")
    return text


def _workload(value: Any) -> Workload:
    if isinstance(value, str):
        return Workload(value)
    data = yamlcheck.mapping(value, "workload")
    yamlcheck.known(data, "workload", ["name", "params"])
    if "name" not in data:
        raise UserError("workload.name: missing (required)")
    raw = yamlcheck.mapping(data.get("params", {}), "workload.params")
    if len(raw) > MAX_PARAMS:
        raise UserError(f"workload.params: at most {MAX_PARAMS} parameters, got {len(raw)}")
    params = {yamlcheck.text(key, "workload.params", 64): _param(param, f"workload.params.{key}") for key, param in raw.items()}
    return Workload(yamlcheck.text(data["name"], "workload.name", 64), params)


def _param(value: Any, path: str) -> Any:
    """One setting: text, true/false or a finite number (a list would be a sweep, not a bisection)."""
    if isinstance(value, (bool, str)):
        return value if isinstance(value, bool) else yamlcheck.text(value, path, 256)
    if isinstance(value, (int, float)):
        _float(value, path, -1e15, 1e15)
        return value
    raise UserError(f"{path}: expected one value (number, text, true/false), got {yamlcheck.kind(value)}")


def parse_threshold(value: Any, path: str) -> Threshold:
    """`-10%` (relative to good), `-0.1` (the same as a fraction), `{absolute: 12000}` or
    `measured` (whatever regression the endpoints show; measure/endpoints.py THRESHOLD_RULE)."""
    if value == MEASURED:
        return Threshold(MEASURED, 0.0)
    if isinstance(value, Mapping):
        yamlcheck.known(value, path, ["absolute", "relative"])
        if len(value) != 1:
            raise UserError(f"{path}: give exactly one of absolute, relative")
        kind, raw = next(iter(value.items()))
        if kind == "absolute":
            return Threshold("absolute", _float(raw, f"{path}.absolute", -1e300, 1e300))
        return parse_threshold(raw, f"{path}.relative")
    text = yamlcheck.text(value, path, 64).strip()
    m = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)\s*%", text)
    try:
        fraction = float(m.group(1)) / 100 if m else float(text)
    except ValueError:
        raise UserError(f"{path}: expected a relative change like -10%, {{absolute: VALUE}} or measured, "
                        f"got {text!r}") from None
    if not math.isfinite(fraction) or fraction == 0 or abs(fraction) >= 10:
        raise UserError(f"{path}: a relative change must be non-zero and below 1000%, got {text!r}")
    return Threshold("relative", fraction)


def _metric(value: Any) -> Metric:
    data = yamlcheck.mapping(value, "metric")
    yamlcheck.known(data, "metric", ["name", "direction", "threshold", "watch"])
    for required in ("name", "threshold"):
        if required not in data:
            raise UserError(f"metric.{required}: missing (required)")
    direction = _choice(data["direction"], "metric.direction", DIRECTIONS) if "direction" in data else ""
    threshold = parse_threshold(data["threshold"], "metric.threshold")
    if direction:
        check_threshold_sign(threshold, direction)
    watch = yamlcheck.items(data.get("watch", []), "metric.watch", "metric names", MAX_WATCH)
    return Metric(yamlcheck.text(data["name"], "metric.name", 128), threshold, direction,
                  tuple(dict.fromkeys(yamlcheck.text(w, "metric.watch", 128) for w in watch)))


def check_threshold_sign(threshold: Threshold, direction: str) -> None:
    """A relative threshold points the regression's way: negative when higher is better. Called
    again once the workload has told the direction a campaign left out."""
    regression_sign = -1 if direction == "higher" else 1
    if threshold.kind == "relative" and threshold.value * regression_sign < 0:
        raise UserError(f"metric.threshold: {threshold.describe()} is an improvement for a metric where "
                        f"{direction} is better; a regression threshold has the opposite sign")


def _kernel(value: Any) -> KernelRecipe:
    data = yamlcheck.mapping(value, "kernel")
    yamlcheck.known(data, "kernel", ["config", "cc"])
    config = data.get("config", ["guest-base"])
    if isinstance(config, str):
        config = [config]
    if not isinstance(config, list) or not config:
        raise UserError("kernel.config: expected a list of a base and fragments, e.g. [tinyconfig, guest-base]")
    yamlcheck.items(config, "kernel.config", "recipe items", MAX_CONFIG_ITEMS)
    return KernelRecipe(tuple(yamlcheck.text(c, "kernel.config") for c in config), yamlcheck.text(data.get("cc", ""), "kernel.cc", 64))


def _guest(value: Any) -> VmSpec:
    data = yamlcheck.mapping(value, "guest")
    yamlcheck.known(data, "guest", ["vcpus", "memory_mib", "topology", "pinning", "emulator_pinning", "machine",
                                    "clock", "disks"])
    topology = None
    if "topology" in data:
        t = yamlcheck.mapping(data["topology"], "guest.topology")
        yamlcheck.known(t, "guest.topology", ["sockets", "cores", "threads"])
        topology = Topology(*(_int(t.get(k, 1), f"guest.topology.{k}", 1, MAX_VCPUS)
                              for k in ("sockets", "cores", "threads")))
    pinning = yamlcheck.items(data.get("pinning", []), "guest.pinning", "host CPU sets, one per vCPU", MAX_VCPUS)
    spec = VmSpec(
        vcpus=_int(data.get("vcpus", 2), "guest.vcpus", 1, MAX_VCPUS),
        memory_mib=_int(data.get("memory_mib", 1024), "guest.memory_mib", 128, MAX_MEMORY_MIB),
        topology=topology,
        pinning=tuple(yamlcheck.text(p, "guest.pinning", 256) for p in pinning),
        machine=_choice(data.get("machine", "pc"), "guest.machine", MACHINES),
        disks=_disks(data.get("disks", {})),
        clock=_choice(data.get("clock", DEFAULT_CLOCK), "guest.clock", CLOCKS),
        emulator_pin=yamlcheck.text(data.get("emulator_pinning", ""), "guest.emulator_pinning", 256),
    )
    try:
        return spec.validate()
    except UserError as exc:
        field_name, _, rest = str(exc).partition(":")
        raise UserError(f"{_SPEC_PATHS.get(field_name, 'guest')}:{rest}") from None


# VmSpec.validate's field names (shared with the command line) -> the campaign file's paths.
_SPEC_PATHS = {
    "vcpus": "guest.vcpus", "memory": "guest.memory_mib", "machine": "guest.machine", "topology": "guest.topology",
    "pinning": "guest.pinning", "emulator pinning": "guest.emulator_pinning",
    "controller": "guest.disks.controller", "disks": "guest.disks.count",
    "disk size": "guest.disks.size_mib", "backing": "guest.disks.backing", "devices": "guest.disks.devices",
    "cache": "guest.disks.cache", "aio": "guest.disks.aio", "queues": "guest.disks.queues",
    "iothreads": "guest.disks.iothreads", "queues/iothreads": "guest.disks.queues/iothreads",
}


def _disks(value: Any) -> DiskSpec:
    d = yamlcheck.mapping(value, "guest.disks")
    keys = [f.name for f in fields(DiskSpec)]
    yamlcheck.known(d, "guest.disks", keys)
    p = "guest.disks"
    directory = d.get("directory")
    devices = yamlcheck.items(d.get("devices", []), f"{p}.devices", "host block devices, one per disk", MAX_DISKS)
    return DiskSpec(
        count=_int(d.get("count", 0), f"{p}.count", 0, MAX_DISKS),
        size_mib=_int(d.get("size_mib", 1024), f"{p}.size_mib", 1, MAX_DISK_MIB),
        controller=_choice(d.get("controller", "virtio-scsi"), f"{p}.controller", list(CONTROLLERS)),
        backing=_choice(d.get("backing", "raw"), f"{p}.backing", BACKINGS),
        directory=Path(yamlcheck.text(directory, f"{p}.directory")) if directory is not None else None,
        devices=tuple(yamlcheck.text(x, f"{p}.devices") for x in devices),
        cache=_choice(d.get("cache", "none"), f"{p}.cache", CACHE_MODES),
        aio=_choice(d.get("aio", "threads"), f"{p}.aio", AIO_MODES),
        queues=_int(d.get("queues", 0), f"{p}.queues", 0, MAX_QUEUES),
        iothreads=_int(d.get("iothreads", 0), f"{p}.iothreads", 0, MAX_IOTHREADS),
    )


def _skip(value: Any) -> SkipPolicy:
    data = yamlcheck.mapping(value, "skip_policy")
    yamlcheck.known(data, "skip_policy", ["build_failure", "boot_failure"])
    return SkipPolicy(
        _choice(data.get("build_failure", "skip"), "skip_policy.build_failure", BUILD_FAILURE_POLICIES),
        _choice(data.get("boot_failure", "skip"), "skip_policy.boot_failure", BOOT_FAILURE_POLICIES),
    )


def _explain(value: Any) -> Explain:
    """`explain: {profile: BOOL, profile_boots: N}` (a mapping asks for the profile unless it
    says `profile: false`); the string `profile` is short for `{profile: true}`, `none` for
    `{profile: false}`."""
    if isinstance(value, str):
        return Explain(profile=_choice(value, "explain", ("profile", "none")) == "profile")
    data = yamlcheck.mapping(value, "explain")
    yamlcheck.known(data, "explain", ["profile", "profile_boots"])
    return Explain(_bool(data.get("profile", True), "explain.profile"),
                   _int(data.get("profile_boots", Explain.profile_boots), "explain.profile_boots", 1,
                        MAX_PROFILE_BOOTS))


def _timeouts(value: Any) -> Timeouts:
    data = yamlcheck.mapping(value, "timeouts")
    yamlcheck.known(data, "timeouts", ["build_s", "boot_s", "run_s"])
    return Timeouts(*(_float(data.get(k, getattr(Timeouts, k)), f"timeouts.{k}", 1, 7 * 86400)
                      for k in ("build_s", "boot_s", "run_s")))


def _steps(value: Any) -> Steps:
    """`steps: first | all` or `steps: {min_share: 0.2}` (a mapping looks for every step)."""
    if not isinstance(value, Mapping):
        return Steps(first=_choice(value, "steps", ("all", "first")) == "first")
    data = yamlcheck.mapping(value, "steps")
    yamlcheck.known(data, "steps", ["min_share"])
    return Steps(min_share=_float(data.get("min_share", Steps.min_share), "steps.min_share", 0.01, 0.99))
