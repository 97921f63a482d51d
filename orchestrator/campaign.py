"""Campaign file (YAML) -> frozen, typed Campaign. Reference: docs/campaign.md.

Every error names the field's path (e.g. `guest.disks.controller`) and, where there is a
fixed set, the valid choices; unknown keys are rejected with the keys that are allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

import yaml

from orchestrator.bisect.endpoints import DIRECTIONS, Threshold
from orchestrator.errors import UserError
from orchestrator.vm.spec import AIO_MODES, BACKINGS, CACHE_MODES, CONTROLLERS, MACHINES, DiskSpec, Topology, VmSpec

ACCELS = ("auto", "kvm", "tcg")
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
    source: Path | None = None


def load_campaign(path: Path) -> Campaign:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"campaign: cannot read {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"campaign: {path} is not valid YAML{where}") from exc
    return parse_campaign(data, base=path.parent, source=path)


def parse_campaign(data: Any, base: Path = Path("."), source: Path | None = None) -> Campaign:
    top = _mapping(data, "campaign")
    _known(top, "", [f.name for f in fields(Campaign) if f.name != "source"])
    for required in ("name", "repository", "good", "bad", "workload", "metric"):
        if required not in top:
            raise UserError(f"{required}: missing (required)")
    repo = Path(_str(top["repository"], "repository")).expanduser()
    campaign = Campaign(
        name=_name(top["name"]),
        repository=repo if repo.is_absolute() else (base / repo).resolve(),
        good=_str(top["good"], "good"),
        bad=_str(top["bad"], "bad"),
        workload=_workload(top["workload"]),
        metric=_metric(top["metric"]),
        kernel=_kernel(top.get("kernel", {})),
        guest=_guest(top.get("guest", {})),
        accel=_choice(top.get("accel", "auto"), "accel", ACCELS),
        append=_str(top.get("append", ""), "append"),
        boots_per_commit=_int(top.get("boots_per_commit", 2), "boots_per_commit", 2),
        max_boots_per_commit=_int(top.get("max_boots_per_commit", 8), "max_boots_per_commit", 2),
        runs_per_boot=_int(top.get("runs_per_boot", 3), "runs_per_boot", 1),
        confirm=_choice(top.get("confirm", "revert"), "confirm", CONFIRMS),
        skip_policy=_skip(top.get("skip_policy", {})),
        timeouts=_timeouts(top.get("timeouts", {})),
        first_parent=_bool(top.get("first_parent", False), "first_parent"),
        alpha=_float(top.get("alpha", 0.05), "alpha", 1e-6, 0.5),
        source=source,
    )
    if campaign.max_boots_per_commit < campaign.boots_per_commit:
        raise UserError(f"max_boots_per_commit: must be at least boots_per_commit ({campaign.boots_per_commit}), "
                        f"got {campaign.max_boots_per_commit}")
    return campaign


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise UserError(f"{path}: expected a mapping of keys to values, got {type(value).__name__}")
    return value


def _known(data: Mapping[str, Any], path: str, allowed: list[str]) -> None:
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise UserError(f"{where}: unknown key; valid keys: {', '.join(allowed)}")


def _str(value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{path}: expected text, got {type(value).__name__}")
    return str(value)


def _name(value: Any) -> str:
    text = _str(value, "name")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", text):
        raise UserError(f"name: {text!r} must be 1-64 letters, digits, '.', '_' or '-'")
    return text


def _int(value: Any, path: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{path}: expected a whole number, got {value!r}")
    if value < minimum:
        raise UserError(f"{path}: must be at least {minimum}, got {value}")
    return value


def _float(value: Any, path: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{path}: expected a number, got {value!r}")
    if not low <= value <= high:
        raise UserError(f"{path}: must be between {low:g} and {high:g}, got {value}")
    return float(value)


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise UserError(f"{path}: expected true or false, got {value!r}")
    return value


def _choice(value: Any, path: str, choices: tuple[str, ...] | list[str]) -> str:
    text = _str(value, path)
    if text not in choices:
        raise UserError(f"{path}: invalid value {text!r}; valid choices: {', '.join(choices)}")
    return text


def _workload(value: Any) -> Workload:
    if isinstance(value, str):
        return Workload(value)
    data = _mapping(value, "workload")
    _known(data, "workload", ["name", "params"])
    if "name" not in data:
        raise UserError("workload.name: missing (required)")
    params = dict(_mapping(data.get("params", {}), "workload.params"))
    return Workload(_str(data["name"], "workload.name"), params)


def parse_threshold(value: Any, path: str) -> Threshold:
    """`-10%` (relative to good), `-0.1` (the same as a fraction) or `{absolute: 12000}`."""
    if isinstance(value, Mapping):
        _known(value, path, ["absolute", "relative"])
        if len(value) != 1:
            raise UserError(f"{path}: give exactly one of absolute, relative")
        kind, raw = next(iter(value.items()))
        if kind == "absolute":
            return Threshold("absolute", _float(raw, f"{path}.absolute", -1e300, 1e300))
        return parse_threshold(raw, f"{path}.relative")
    text = _str(value, path).strip()
    m = re.fullmatch(r"([+-]?\d+(?:\.\d+)?)\s*%", text)
    try:
        fraction = float(m.group(1)) / 100 if m else float(text)
    except ValueError:
        raise UserError(f"{path}: expected a relative change like -10% or {{absolute: VALUE}}, got {text!r}") from None
    if fraction == 0 or abs(fraction) >= 10:
        raise UserError(f"{path}: a relative change must be non-zero and below 1000%, got {text!r}")
    return Threshold("relative", fraction)


def _metric(value: Any) -> Metric:
    data = _mapping(value, "metric")
    _known(data, "metric", ["name", "direction", "threshold"])
    for required in ("name", "threshold"):
        if required not in data:
            raise UserError(f"metric.{required}: missing (required)")
    direction = _choice(data["direction"], "metric.direction", DIRECTIONS) if "direction" in data else ""
    threshold = parse_threshold(data["threshold"], "metric.threshold")
    if threshold.kind == "relative" and direction:
        regression_sign = -1 if direction == "higher" else 1
        if threshold.value * regression_sign < 0:
            raise UserError(f"metric.threshold: {threshold.describe()} is an improvement for a metric where "
                            f"{direction} is better; a regression threshold has the opposite sign")
    return Metric(_str(data["name"], "metric.name"), threshold, direction)


def _kernel(value: Any) -> KernelRecipe:
    data = _mapping(value, "kernel")
    _known(data, "kernel", ["config", "cc"])
    config = data.get("config", ["guest-base"])
    if isinstance(config, str):
        config = [config]
    if not isinstance(config, list) or not config:
        raise UserError("kernel.config: expected a list of a base and fragments, e.g. [tinyconfig, guest-base]")
    return KernelRecipe(tuple(_str(c, "kernel.config") for c in config), _str(data.get("cc", ""), "kernel.cc"))


def _guest(value: Any) -> VmSpec:
    data = _mapping(value, "guest")
    _known(data, "guest", ["vcpus", "memory_mib", "topology", "pinning", "machine", "disks"])
    topology = None
    if "topology" in data:
        t = _mapping(data["topology"], "guest.topology")
        _known(t, "guest.topology", ["sockets", "cores", "threads"])
        topology = Topology(*(_int(t.get(k, 1), f"guest.topology.{k}", 1) for k in ("sockets", "cores", "threads")))
    pinning = data.get("pinning", [])
    if not isinstance(pinning, list):
        raise UserError("guest.pinning: expected a list with one host CPU set per vCPU")
    spec = VmSpec(
        vcpus=_int(data.get("vcpus", 2), "guest.vcpus", 1),
        memory_mib=_int(data.get("memory_mib", 1024), "guest.memory_mib", 128),
        topology=topology,
        pinning=tuple(_str(p, "guest.pinning") for p in pinning),
        machine=_choice(data.get("machine", "pc"), "guest.machine", MACHINES),
        disks=_disks(data.get("disks", {})),
    )
    try:
        return spec.validate()
    except UserError as exc:
        raise UserError(f"guest.{exc}") from None


def _disks(value: Any) -> DiskSpec:
    d = _mapping(value, "guest.disks")
    keys = [f.name for f in fields(DiskSpec)]
    _known(d, "guest.disks", keys)
    p = "guest.disks"
    directory = d.get("directory")
    return DiskSpec(
        count=_int(d.get("count", 0), f"{p}.count", 0),
        size_mib=_int(d.get("size_mib", 1024), f"{p}.size_mib", 1),
        controller=_choice(d.get("controller", "virtio-scsi"), f"{p}.controller", list(CONTROLLERS)),
        backing=_choice(d.get("backing", "raw"), f"{p}.backing", BACKINGS),
        directory=Path(_str(directory, f"{p}.directory")) if directory is not None else None,
        devices=tuple(_str(x, f"{p}.devices") for x in d.get("devices", [])),
        cache=_choice(d.get("cache", "none"), f"{p}.cache", CACHE_MODES),
        aio=_choice(d.get("aio", "threads"), f"{p}.aio", AIO_MODES),
        queues=_int(d.get("queues", 0), f"{p}.queues", 0),
        iothreads=_int(d.get("iothreads", 0), f"{p}.iothreads", 0),
    )


def _skip(value: Any) -> SkipPolicy:
    data = _mapping(value, "skip_policy")
    _known(data, "skip_policy", ["build_failure", "boot_failure"])
    return SkipPolicy(
        _choice(data.get("build_failure", "skip"), "skip_policy.build_failure", BUILD_FAILURE_POLICIES),
        _choice(data.get("boot_failure", "skip"), "skip_policy.boot_failure", BOOT_FAILURE_POLICIES),
    )


def _timeouts(value: Any) -> Timeouts:
    data = _mapping(value, "timeouts")
    _known(data, "timeouts", ["build_s", "boot_s", "run_s"])
    return Timeouts(*(_float(data.get(k, getattr(Timeouts, k)), f"timeouts.{k}", 1, 7 * 86400)
                      for k in ("build_s", "boot_s", "run_s")))
