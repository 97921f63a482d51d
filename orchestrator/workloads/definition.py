"""Workload definitions: workloads/<name>/workload.yaml loaded into frozen typed objects, and
the resolution of a workload or preset name plus `key=value` overrides into run points.

A workload is one folder (lkp-tests' layout), workloads/<name>/: workload.yaml (parameters,
metrics with directions, presets, the kernel options it needs, the host programs its guests
carry), __init__.py (job rendering, argument lists, the parser, and TOOL: what runs in a guest)
and testdata/ (golden pairs of captured raw output and expected metrics). A new workload is a
new folder; nothing else names it."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from orchestrator.errors import UserError, choices_error
from orchestrator.workloads import kneeds
from orchestrator.workloads.params import ParamDef, ParamValue, param_def

DIRECTIONS = ("higher", "lower", "none")
DEFINITIONS_DIR = Path(__file__).resolve().parents[2] / "workloads"


@dataclass(frozen=True)
class MetricDef:
    """A metric a run records. direction: which way is better (`none`: descriptive, never judged).
    `per`: "disk" or "vcpu" when it is recorded only per instance, as `name.sda` or `name.0`;
    `min_vcpus`: the vCPUs a guest needs for it; `accel`: the only accelerator it is recorded
    under ("" any); `tcg`: what it measures under TCG, where that differs (said in reports)."""

    name: str
    unit: str
    direction: str
    help: str = ""
    per: str = ""
    min_vcpus: int = 1
    accel: str = ""
    tcg: str = ""


@dataclass(frozen=True)
class Preset:
    """Named parameters reproducing a reported setup; one parameter may be a sweep (a list)."""

    name: str
    workload: str
    params: Mapping[str, ParamValue | tuple[ParamValue, ...]]
    help: str = ""


@dataclass(frozen=True)
class WorkloadDef:
    name: str
    help: str
    needs_disks: int
    params: Mapping[str, ParamDef]
    metrics: Mapping[str, MetricDef]
    presets: Mapping[str, Preset]
    kconfig: Mapping[str, str] = field(default_factory=dict)
    kconfig_by_param: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    # the host programs its guests need: name -> {paths, package, data, hint} (orchestrator/image/tools.py)
    guest_tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def kernel_needs(self, point: Mapping[str, ParamValue]) -> dict[str, str]:
        """CONFIG_ option -> why, for one parameter set (docs/workloads.md, kernel needs)."""
        return kneeds.needed(self.kconfig, self.kconfig_by_param, point)

    def kernel_needs_all(self, points: Iterable[Mapping[str, ParamValue]]) -> dict[str, str]:
        """The options every one of `points` needs together."""
        return {o: why for p in points for o, why in self.kernel_needs(p).items()}


@dataclass(frozen=True)
class RunPlan:
    """What to run: a workload with one set of parameters per sweep point (one without a sweep)."""

    workload: WorkloadDef
    label: str
    points: tuple[Mapping[str, ParamValue], ...]
    swept: str | None

    def point_label(self, point: Mapping[str, ParamValue]) -> str:
        return f"{self.swept}={point[self.swept]}" if self.swept else ""


def load_workload(path: Path) -> WorkloadDef:
    where = str(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{where}: cannot read workload definition: {exc}".replace("\n", " ")) from exc
    name = str(raw["name"])
    params = {k: param_def(k, v, where) for k, v in (raw.get("params") or {}).items()}
    metrics = {}
    for k, v in (raw.get("metrics") or {}).items():
        if v.get("direction") not in DIRECTIONS:
            raise choices_error(f"{where}: metrics.{k}.direction", v.get("direction"), DIRECTIONS)
        metrics[k] = MetricDef(k, str(v["unit"]), v["direction"], str(v.get("help", "")))
    try:
        always, by_param = kneeds.parse_needs(raw, where)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    w = WorkloadDef(name, str(raw.get("help", "")), int(raw.get("needs_disks", 0)),
                    MappingProxyType(params), MappingProxyType(metrics), MappingProxyType({}),
                    MappingProxyType(always), MappingProxyType(by_param),
                    MappingProxyType(dict(raw.get("guest_tools") or {})))
    presets = {}
    for pname, pv in (raw.get("presets") or {}).items():
        values = {k: _parse_value(w, k, v, f"{where}: presets.{pname}") for k, v in (pv.get("params") or {}).items()}
        _one_sweep(values, f"{where}: presets.{pname}")
        presets[pname] = Preset(pname, name, MappingProxyType(values), str(pv.get("help", "")))
    return dataclasses.replace(w, presets=MappingProxyType(presets))


def tool_of(workload: WorkloadDef) -> Any:
    """The workload's tool (workloads/<name>/__init__.py: TOOL, an orchestrator.workloads.guest.Tool):
    what runs, and parses, one repetition in a guest."""
    return importlib.import_module(f"workloads.{workload.name}").TOOL


def load_all(root: Path = DEFINITIONS_DIR) -> dict[str, WorkloadDef]:
    return {w.name: w for w in (load_workload(p) for p in sorted(root.glob("*/workload.yaml")))}


def names(workloads: Mapping[str, WorkloadDef]) -> list[str]:
    """Every name `--workload` accepts: workloads and their presets."""
    return list(dict.fromkeys(n for w in workloads.values() for n in (w.name, *w.presets)))


def resolve(workloads: Mapping[str, WorkloadDef], name: str, overrides: list[str]) -> RunPlan:
    """Defaults, then the preset's parameters, then `key=value` overrides (`key=a,b,c` sweeps).

    A preset named like its workload (`dbench`) wins over the bare workload."""
    preset = next((w.presets[name] for w in workloads.values() if name in w.presets), None)
    workload = workloads[preset.workload] if preset else workloads.get(name)
    if workload is None:
        raise choices_error("workload", name, names(workloads))
    values: dict[str, ParamValue | tuple[ParamValue, ...]] = {k: p.default for k, p in workload.params.items()}
    values.update(preset.params if preset else {})
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep:
            raise UserError(f"param: expected key=value, got {item!r}")
        values[key] = _parse_value(workload, key, text.split(",") if "," in text else text, "param")
    swept = _one_sweep(values, "param")
    points = tuple(
        MappingProxyType({**values, swept: v}) for v in values[swept]  # type: ignore[union-attr]
    ) if swept else (MappingProxyType(dict(values)),)
    return RunPlan(workload, name, points, swept)  # type: ignore[arg-type]


def _parse_value(w: WorkloadDef, key: str, value: Any, where: str) -> ParamValue | tuple[ParamValue, ...]:
    if key not in w.params:
        raise choices_error(f"{where}: {w.name} parameter", key, w.params)
    label = f"{where}: {w.name} {key}"
    if isinstance(value, (list, tuple)):
        return tuple(w.params[key].parse(v, label) for v in value)
    return w.params[key].parse(value, label)


def _one_sweep(values: Mapping[str, Any], where: str) -> str | None:
    swept = [k for k, v in values.items() if isinstance(v, tuple)]
    if len(swept) > 1:
        raise UserError(f"{where}: only one parameter may take a list of values, got {', '.join(swept)}")
    return swept[0] if swept else None
