"""What one run of a workload produces: named metrics with unit and direction, plus every raw
output they came from, so a fixed parser can be re-run over old data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MeasuredMetric:
    name: str
    value: float
    unit: str
    direction: str  # higher, lower or none (descriptive)


@dataclass(frozen=True)
class ToolRun:
    """A tool's parsed figures: its metrics and the rates cost-per-operation divides by."""

    metrics: Mapping[str, float]
    op_rate: float  # operations per second (I/Os, dbench ops, messages, transactions)
    byte_rate: float  # bytes per second moved by the workload


@dataclass(frozen=True)
class RunResult:
    """One repetition: metrics by name and the raw material (tool output, /proc snapshots
    before/after, libvirt CPU statistics before/after)."""

    workload: str
    params: Mapping[str, Any]
    metrics: Mapping[str, MeasuredMetric]
    raw: Mapping[str, str]
    snapshots: tuple[Mapping[str, Any], Mapping[str, Any]]
    host: tuple[Mapping[str, Any], Mapping[str, Any]]
    duration_s: float
    disks: tuple[str, ...] = field(default=())  # the guest disks iostat figures were taken for
    notes: tuple[str, ...] = field(default=())
    lab_host: str = ""  # the lab host whose guest ran it ("" when not known)
    accel: str = ""  # the accelerator the guest ran under (kvm, tcg; "" when not known)

    def values(self) -> dict[str, float]:
        return {k: m.value for k, m in self.metrics.items()}

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = dict(self.params)
        d["metrics"] = {k: asdict(m) for k, m in self.metrics.items()}
        return d
