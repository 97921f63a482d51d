"""Runs one workload repetition in a guest and returns its RunResult: the thin adapter between
each workload's tool (workloads/<name>/: job files, argument lists, parser) plus the system
metrics, and a Guest.

    prepare(guest, workload)               once per boot (netserver, helper script)
    run(guest, workload, params, accel)    one repetition -> RunResult
    reparse(result)                         the tool metrics again from the kept raw output
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.errors import WorkloadFailed
from orchestrator.workloads import clock, kneeds, procstats, system
from orchestrator.workloads.definition import MetricDef, WorkloadDef, tool_of
from orchestrator.workloads.guest import Guestlike, Params, budget, data_disks
from orchestrator.workloads.result import MeasuredMetric, RunResult, ToolRun

__all__ = ["data_disks", "prepare", "reparse", "run"]
TCG_NOTE = ("tcg: guest CPU times are emulated time and host CPU includes the emulation; "
            "costs are CPU-microseconds, no cycles")


def prepare(guest: Guestlike, workload: WorkloadDef) -> None:
    try:
        tool_of(workload).prepare(guest)
    except WorkloadFailed as exc:
        raise kneeds.with_hint(exc) from None


def host_stats(domain: Any) -> dict[str, Any]:
    """libvirt's CPU figures of the guest now: whole QEMU process and each vCPU thread, in ns."""
    total = domain.getCPUStats(True)[0]
    vcpus = domain.vcpus()[0]
    return {"cpu_time": total["cpu_time"], "user_time": total.get("user_time", 0),
            "system_time": total.get("system_time", 0), "vcpu_time": [v[2] for v in vcpus],
            "monotonic_s": time.monotonic()}


def run(guest: Guestlike, workload: WorkloadDef, params: Params, accel: str,
        limit_s: float | None = None) -> RunResult:
    """One repetition: setup, snapshots around the tool, teardown, metrics. The tool may run
    `budget(params, limit_s)` seconds. A failure whose output a kernel config explains names
    the likely option (workloads/kneeds.py)."""
    try:
        return _run(guest, workload, params, accel, limit_s)
    except WorkloadFailed as exc:
        raise kneeds.with_hint(exc) from None


def _run(guest: Guestlike, workload: WorkloadDef, params: Params, accel: str, limit_s: float | None) -> RunResult:
    tool = tool_of(workload)
    tool.before(guest, params)
    disks = tool.disks(guest, params)
    started = time.monotonic()
    snap0, host0 = guest.agent.snapshot(), host_stats(guest.domain)
    raw = tool.run(guest, params, budget(params, limit_s))
    snap1, host1 = guest.agent.snapshot(), host_stats(guest.domain)
    duration = time.monotonic() - started
    tool.after(guest, params)
    mhz = system.host_mhz(Path("/proc/cpuinfo").read_text()) if accel == "kvm" else None
    values = metric_values(tool.parse(raw, params), snap0, snap1, host0, host1, disks,
                           int(guest.hello.get("cpus_online") or 1), mhz)
    notes = ((TCG_NOTE,) if accel == "tcg" else ()) + clock.run_notes(clock.of_run((snap0, snap1)))
    return RunResult(workload.name, dict(params), label(workload, values), raw, (snap0, snap1), (host0, host1),
                     duration, tuple(disks), notes, accel=accel)


def metric_values(tool: ToolRun, snap0: Mapping[str, Any], snap1: Mapping[str, Any], host0: Mapping[str, Any],
                  host1: Mapping[str, Any], disks: list[str], cpus: int, mhz: float | None) -> dict[str, float]:
    """Tool metrics, then system metrics and costs over the snapshot window."""
    window = (snap1["monotonic_ns"] - snap0["monotonic_ns"]) / 1e9
    stat0, stat1 = snap0["files"]["/proc/stat"], snap1["files"]["/proc/stat"]
    guest = {**system.guest_cpu(stat0, stat1, window, cpus), **system.guest_nonidle(stat0, stat1, window),
             **system.guest_run(snap0["files"].get("/proc/schedstat", ""), snap1["files"].get("/proc/schedstat", ""))}
    host = system.host_cpu(host0, host1)
    io = system.iostat(snap0["files"]["/proc/diskstats"], snap1["files"]["/proc/diskstats"], window, disks)
    kernel = procstats.metrics(snap0["files"], snap1["files"], window)
    return {**tool.metrics, **system.costs(tool, guest, window, host, mhz), **guest, **host, **io, **kernel}


def metric_def(workload: WorkloadDef, name: str) -> MetricDef:
    """The definition of a metric by its name, or by its name without an instance suffix
    (`read_iops.sda` is read_iops of disk sda, `host_vcpu_used.0` vCPU 0's). The kernel's
    counters are defined in procstats.METRICS, apart from system.METRICS: the tables of compare
    and measure show them only with --all-metrics, as they show the instances."""
    defs = {**workload.metrics, **system.METRICS, **procstats.METRICS}
    base = name if name in defs else name.rpartition(".")[0]
    if base not in defs:
        raise WorkloadFailed(f"{workload.name}: metric {name!r} has no definition")
    return defs[base]


def label(workload: WorkloadDef, values: Mapping[str, float]) -> dict[str, MeasuredMetric]:
    out = {}
    for name, value in values.items():
        d = metric_def(workload, name)
        out[name] = MeasuredMetric(name, value, d.unit, d.direction)
    return out


def reparse(workload: WorkloadDef, result: RunResult, accel: str) -> RunResult:
    """The result again from its kept raw output and snapshots: a fixed parser over old data."""
    tool = tool_of(workload)
    mhz = system.host_mhz(Path("/proc/cpuinfo").read_text()) if accel == "kvm" else None
    cpus = len([ln for ln in result.snapshots[0]["files"]["/proc/stat"].splitlines() if ln[:3] == "cpu"]) - 1
    values = metric_values(tool.parse(result.raw, result.params), result.snapshots[0], result.snapshots[1],
                           result.host[0], result.host[1], list(result.disks), cpus, mhz)
    return RunResult(result.workload, result.params, label(workload, values), result.raw, result.snapshots,
                     result.host, result.duration_s, result.disks, result.notes, result.lab_host, result.accel)
