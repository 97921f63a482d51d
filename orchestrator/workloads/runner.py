"""Runs one workload repetition in a guest and returns its RunResult: the thin adapter between
the pure parts (job files, argument lists, parsers, system metrics) and a Guest.

    prepare(guest, workload)               once per boot (netserver, helper script)
    run(guest, workload, params, accel)    one repetition -> RunResult
    reparse(result)                         the tool metrics again from the kept raw output
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from orchestrator.agent.protocol import ExecResult
from orchestrator.errors import WorkloadFailed
from orchestrator.workloads import dbench, fio, kneeds, netperf, system
from orchestrator.workloads.definition import MetricDef, WorkloadDef
from orchestrator.workloads.params import ParamValue
from orchestrator.workloads.result import Metric, RunResult, ToolRun

Params = Mapping[str, ParamValue]
TCG_NOTE = ("tcg: guest CPU times are emulated time and host CPU includes the emulation; "
            "costs are CPU-microseconds, no cycles")


class Guestlike(Protocol):
    hello: dict[str, Any]
    agent: Any
    domain: Any

    def exec(self, argv: list[str], **kwargs: Any) -> ExecResult: ...


def data_disks(guest: Guestlike) -> list[str]:
    return sorted(d["name"] for d in guest.hello.get("block_devices") or [] if not d["name"].startswith("sr"))


def _check(result: ExecResult, argv: list[str]) -> ExecResult:
    if not result.succeeded:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        output = (result.stderr or result.stdout).decode(errors="replace").strip()
        lines = output.splitlines()
        raise WorkloadFailed(f"{argv[0]} {why}" + (f": {lines[-1]}" if lines else ""),
                             "\n".join(lines[-20:]), f"{argv[0]} output")
    return result


def _exec(guest: Guestlike, argv: list[str], timeout_s: float = 120.0) -> ExecResult:
    return _check(guest.exec(argv, timeout_s=timeout_s), argv)


def budget(params: Params, limit_s: float | None = None) -> float:
    """Seconds a run may take: its own time twice over (TCG is slow to start) plus a margin,
    never more than `limit_s` (a campaign's timeouts.run_s). Past it the agent kills the tool
    and the run fails as `<tool> timed out`."""
    own = 2.0 * (int(params["runtime"]) + int(params.get("ramp_time", 0))) + 120.0
    return own if limit_s is None else min(own, limit_s)


class Tool(Protocol):
    def prepare(self, guest: Guestlike) -> None: ...
    def before(self, guest: Guestlike, params: Params) -> None: ...
    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]: ...
    def after(self, guest: Guestlike, params: Params) -> None: ...
    def disks(self, guest: Guestlike, params: Params) -> list[str]: ...
    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun: ...


class Fio:
    def prepare(self, guest: Guestlike) -> None:
        pass

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        return fio.select_disks(data_disks(guest), params["disks"])

    def before(self, guest: Guestlike, params: Params) -> None:
        guest.agent.put(fio.JOB_PATH, fio.render_job(params, self.disks(guest, params)).encode())

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        job = guest.agent.get(fio.JOB_PATH).decode()
        out = _exec(guest, fio.argv(), budget_s)
        return {"fio.job": job, "fio.json": out.stdout.decode(errors="replace")}

    def after(self, guest: Guestlike, params: Params) -> None:
        pass

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return fio.parse(raw["fio.json"])


class Dbench:
    def prepare(self, guest: Guestlike) -> None:
        pass

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        names = data_disks(guest)
        if int(params["disk"]) >= len(names):
            raise WorkloadFailed(f"dbench: disk={params['disk']} but the guest has {len(names)} data disk(s)")
        return [names[int(params["disk"])]]

    def before(self, guest: Guestlike, params: Params) -> None:
        for argv in dbench.setup_argvs(params, "/dev/" + self.disks(guest, params)[0]):
            _exec(guest, argv)

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        out = _exec(guest, dbench.argv(params), budget_s)
        return {"dbench.txt": out.stdout.decode(errors="replace"),
                "loadfile_ops": str(dbench.loadfile_ops(guest.agent.get(str(params["loadfile"])).decode()))}

    def after(self, guest: Guestlike, params: Params) -> None:
        _exec(guest, dbench.teardown_argv())

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return dbench.parse(raw["dbench.txt"], float(params["runtime"]), int(raw["loadfile_ops"]))


class Netperf:
    def prepare(self, guest: Guestlike) -> None:
        guest.agent.put(netperf.PARALLEL_PATH, netperf.PARALLEL_SCRIPT.encode(), mode=0o755)
        for argv in netperf.setup_argvs():
            _exec(guest, argv)

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        return []

    def before(self, guest: Guestlike, params: Params) -> None:
        pass

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        _exec(guest, netperf.run_argv(params), budget_s)
        return {f"netperf.{i}": guest.agent.get(p).decode(errors="replace")
                for i, p in enumerate(netperf.output_paths(params))}

    def after(self, guest: Guestlike, params: Params) -> None:
        pass

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return netperf.parse([raw[f"netperf.{i}"] for i in range(int(params["streams"]))], params)


TOOLS: dict[str, Tool] = {"fio": Fio(), "dbench": Dbench(), "netperf": Netperf()}


def prepare(guest: Guestlike, workload: WorkloadDef) -> None:
    try:
        TOOLS[workload.name].prepare(guest)
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
    tool = TOOLS[workload.name]
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
    return RunResult(workload.name, dict(params), label(workload, values), raw, (snap0, snap1), (host0, host1),
                     duration, tuple(disks), (TCG_NOTE,) if accel == "tcg" else ())


def metric_values(tool: ToolRun, snap0: Mapping[str, Any], snap1: Mapping[str, Any], host0: Mapping[str, Any],
                  host1: Mapping[str, Any], disks: list[str], cpus: int, mhz: float | None) -> dict[str, float]:
    """Tool metrics, then system metrics and costs over the snapshot window."""
    window = (snap1["monotonic_ns"] - snap0["monotonic_ns"]) / 1e9
    stat0, stat1 = snap0["files"]["/proc/stat"], snap1["files"]["/proc/stat"]
    guest = system.guest_cpu(stat0, stat1, window, cpus)
    host = system.host_cpu(host0, host1)
    io = system.iostat(snap0["files"]["/proc/diskstats"], snap1["files"]["/proc/diskstats"], window, disks)
    return {**tool.metrics, **system.costs(tool, guest, window, host, mhz), **guest, **host, **io}


def metric_def(workload: WorkloadDef, name: str) -> MetricDef:
    """The definition of a metric by its name, or by its name without an instance suffix
    (`read_iops.sda` is read_iops of disk sda, `host_vcpu_used.0` vCPU 0's)."""
    defs = {**workload.metrics, **system.METRICS}
    base = name if name in defs else name.rpartition(".")[0]
    if base not in defs:
        raise WorkloadFailed(f"{workload.name}: metric {name!r} has no definition")
    return defs[base]


def label(workload: WorkloadDef, values: Mapping[str, float]) -> dict[str, Metric]:
    out = {}
    for name, value in values.items():
        d = metric_def(workload, name)
        out[name] = Metric(name, value, d.unit, d.direction)
    return out


def reparse(workload: WorkloadDef, result: RunResult, accel: str) -> RunResult:
    """The result again from its kept raw output and snapshots: a fixed parser over old data."""
    tool = TOOLS[workload.name]
    mhz = system.host_mhz(Path("/proc/cpuinfo").read_text()) if accel == "kvm" else None
    cpus = len([ln for ln in result.snapshots[0]["files"]["/proc/stat"].splitlines() if ln[:3] == "cpu"]) - 1
    values = metric_values(tool.parse(result.raw, result.params), result.snapshots[0], result.snapshots[1],
                           result.host[0], result.host[1], list(result.disks), cpus, mhz)
    return RunResult(result.workload, result.params, label(workload, values), result.raw, result.snapshots,
                     result.host, result.duration_s, result.disks, result.notes, result.lab_host)
