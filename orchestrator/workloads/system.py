"""System metrics of one run, as pure functions over raw texts and numbers: guest CPU time by
mode, context switches and interrupts (/proc/stat), iostat-style figures per disk
(/proc/diskstats), the host CPU time of the guest (libvirt), and the cost per operation and
per byte derived from them.

Guest CPU time three ways (docs/metrics.md, "CPU time"): `guest_cpu_busy` from /proc/stat's
user, system, irq, softirq ... ticks, each tick charged whole to what it interrupted;
`guest_run`, the nanoseconds tasks other than the idle task ran (/proc/schedstat's
rq_cpu_time); `guest_nonidle`, the window less the idle and iowait time the tickless idle code
accounts to the microsecond (/proc/stat's idle and iowait with NO_HZ). Host CPU time two ways:
the whole QEMU process (`host_cpu`) and its vCPU threads alone (`host_vcpu`), without QEMU's
main loop and I/O threads.

Costs divide CPU utilisation by the workload's own rate (like netperf's service demand):
CPU seconds per second of the window / operations per second. The /proc and libvirt windows
include a tool's ramp time, which its own rates exclude; the ratio stays right as long as the
rate during the ramp is the steady one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.workloads import procstats
from orchestrator.workloads.definition import MetricDef
from orchestrator.workloads.result import ToolRun

USER_HZ = 100  # /proc/stat ticks per second on every Linux architecture we boot
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY_MODES = ("user", "nice", "system", "irq", "softirq", "steal")
SECTOR = 512

# what a figure measures under TCG (MetricDef.tcg), said in a report whose runs ran there
HOST_TCG = ("the host's CPU time includes the emulation of every guest instruction, so a change can be the "
            "emulator's cost; guest_cpu_us_per_op tracks the guest's own cost best")
GUEST_TCG = ("guest CPU time is the emulated clock's; of the CPU figures it tracks the guest's own cost best")
GUEST_NS_TCG = ("guest time read from the emulated clock (the HPET unless the guest's clocksource is the TSC); a "
                "vCPU thread the host preempted counts as guest time, TCG having no steal time")
VCPU_TCG = ("the vCPU threads' host CPU time is the emulation of the guest's instructions, without QEMU's main "
            "loop and I/O threads; a change can be the emulator's cost")
RQ_CPU_TIME = 6  # the 7th number of a cpuN line of /proc/schedstat (procstats.schedstat's fields)

METRICS: dict[str, MetricDef] = {m.name: m for m in (
    *(MetricDef(f"guest_cpu_{mode}", "s", "lower", f"guest CPU time in {mode} mode, all vCPUs")
      for mode in CPU_MODES if mode != "idle"),
    MetricDef("guest_cpu_busy", "s", "lower", "guest CPU time not idle or iowait, all vCPUs"),
    MetricDef("guest_cpu_busy_pct", "%", "lower", "guest busy time / (window x vCPUs)"),
    MetricDef("guest_vcpu_busy", "s", "lower", "guest busy time of one vCPU (/proc/stat cpuN)", per="vcpu"),
    MetricDef("guest_cpu_busiest_share", "%", "lower",
              "share of the guest's busy time spent on its busiest vCPU: 100 with all work on one vCPU, "
              "100/vCPUs when spread evenly; lower is a more even spread (docs/metrics.md)", min_vcpus=2),
    MetricDef("guest_cpu_us_per_op", "CPU-us/op", "lower", "guest busy CPU per workload operation", tcg=GUEST_TCG),
    MetricDef("guest_cpu_ns_per_byte", "CPU-ns/B", "lower", "guest busy CPU per byte moved", tcg=GUEST_TCG),
    MetricDef("guest_run", "s", "lower",
              "time tasks other than the idle task ran, all vCPUs, in ns (/proc/schedstat rq_cpu_time)",
              tcg=GUEST_NS_TCG),
    MetricDef("guest_run_us_per_op", "CPU-us/op", "lower", "guest run time (schedstat, ns) per workload operation",
              tcg=GUEST_NS_TCG),
    MetricDef("guest_run_ns_per_byte", "CPU-ns/B", "lower", "guest run time (schedstat, ns) per byte moved",
              tcg=GUEST_NS_TCG),
    MetricDef("guest_nonidle", "s", "lower",
              "window x vCPUs less the guest's idle, iowait and steal time (/proc/stat, tickless idle accounting)",
              tcg=GUEST_NS_TCG),
    MetricDef("guest_nonidle_us_per_op", "CPU-us/op", "lower", "guest non-idle time per workload operation",
              tcg=GUEST_NS_TCG),
    MetricDef("guest_nonidle_ns_per_byte", "CPU-ns/B", "lower", "guest non-idle time per byte moved",
              tcg=GUEST_NS_TCG),
    MetricDef("ctxt_per_s", "1/s", "lower", "context switches per second (/proc/stat ctxt)"),
    MetricDef("intr_per_s", "1/s", "lower", "interrupts per second (/proc/stat intr)"),
    MetricDef("ctxt_per_op", "1/op", "lower", "context switches per workload operation"),
    MetricDef("intr_per_op", "1/op", "lower", "interrupts per workload operation"),
    MetricDef("host_cpu", "s", "lower", "host CPU time of the whole QEMU process (libvirt cpu_time)", tcg=HOST_TCG),
    MetricDef("host_cpu_user", "s", "lower", "host user-mode CPU time of the QEMU process", tcg=HOST_TCG),
    MetricDef("host_cpu_system", "s", "lower", "host kernel-mode CPU time of the QEMU process", tcg=HOST_TCG),
    MetricDef("host_cpus_used", "CPUs", "lower", "host CPU time / window: host CPUs kept busy", tcg=HOST_TCG),
    MetricDef("host_vcpu_used", "CPUs", "none", "host CPU time of one vCPU thread / window", per="vcpu"),
    MetricDef("host_vcpu", "s", "lower", "host CPU time of the guest's vCPU threads, all of them (libvirt vcpus)",
              tcg=VCPU_TCG),
    MetricDef("host_vcpus_used", "CPUs", "lower", "host CPU time of the vCPU threads / window", tcg=VCPU_TCG),
    MetricDef("host_vcpu_us_per_op", "CPU-us/op", "lower", "host CPU of the vCPU threads per workload operation",
              tcg=VCPU_TCG),
    MetricDef("host_vcpu_ns_per_byte", "CPU-ns/B", "lower", "host CPU of the vCPU threads per byte moved",
              tcg=VCPU_TCG),
    MetricDef("host_cpu_us_per_op", "CPU-us/op", "lower", "host CPU of the guest per workload operation",
              tcg=HOST_TCG),
    MetricDef("host_cpu_ns_per_byte", "CPU-ns/B", "lower", "host CPU of the guest per byte moved", tcg=HOST_TCG),
    MetricDef("host_cycles_per_op", "cycles/op", "lower", "host CPU x nominal clock per operation (KVM only)",
              accel="kvm"),
    MetricDef("iostat_r_s", "1/s", "none", "reads completed per second", per="disk"),
    MetricDef("iostat_w_s", "1/s", "none", "writes completed per second", per="disk"),
    MetricDef("iostat_rrqm_s", "1/s", "none", "read merges per second", per="disk"),
    MetricDef("iostat_wrqm_s", "1/s", "none", "write merges per second", per="disk"),
    MetricDef("iostat_rkb_s", "KiB/s", "none", "KiB read per second", per="disk"),
    MetricDef("iostat_wkb_s", "KiB/s", "none", "KiB written per second", per="disk"),
    MetricDef("iostat_avgrq_sz", "sectors", "none", "average request size", per="disk"),
    MetricDef("iostat_avgqu_sz", "requests", "none", "average queue size (weighted ms / window)", per="disk"),
    MetricDef("iostat_await", "ms", "lower", "average time per request, queue + service", per="disk"),
    MetricDef("iostat_util_pct", "%", "none", "share of the window the disk was busy", per="disk"),
)}


def cpu_busy_ticks(text: str) -> dict[str, float]:
    """Busy ticks (not idle or iowait) of each CPU by its number, from /proc/stat's cpuN lines."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            ticks = dict(zip(CPU_MODES, (float(x) for x in fields[1:])))
            out[fields[0][3:]] = sum(ticks.get(m, 0.0) for m in BUSY_MODES)
    return out


def proc_stat(text: str) -> dict[str, float]:
    """Aggregate CPU ticks by mode, `ctxt` and total `intr` from /proc/stat."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "cpu":
            out.update({m: float(v) for m, v in zip(CPU_MODES, fields[1:])})
        elif fields[0] in ("ctxt", "intr"):
            out[fields[0]] = float(fields[1])
    return out


def diskstats(text: str) -> dict[str, list[float]]:
    """Per device name, the counters after the name (reads completed, merged, sectors, ms, ...)."""
    return {f[2]: [float(x) for x in f[3:]] for f in (line.split() for line in text.splitlines()) if len(f) >= 14}


def guest_cpu(before: str, after: str, window_s: float, cpus: int) -> dict[str, float]:
    a, b = proc_stat(before), proc_stat(after)
    delta = {m: (b.get(m, 0.0) - a.get(m, 0.0)) / USER_HZ for m in CPU_MODES}
    out = {f"guest_cpu_{m}": delta[m] for m in CPU_MODES if m != "idle"}
    busy = sum(delta[m] for m in BUSY_MODES)
    out["guest_cpu_busy"] = busy
    out["guest_cpu_busy_pct"] = 100.0 * busy / (window_s * cpus) if window_s > 0 and cpus else 0.0
    out["ctxt_per_s"] = (b["ctxt"] - a["ctxt"]) / window_s
    out["intr_per_s"] = (b["intr"] - a["intr"]) / window_s
    return out | vcpu_spread(before, after)


def vcpu_spread(before: str, after: str) -> dict[str, float]:
    """Each vCPU's busy seconds over the window and, with two vCPUs or more that did work, the
    share of the busy time on the busiest one (the guest's own view of how spread the load was)."""
    a, b = cpu_busy_ticks(before), cpu_busy_ticks(after)
    busy = {cpu: (b[cpu] - a[cpu]) / USER_HZ for cpu in b if cpu in a}
    out = {f"guest_vcpu_busy.{cpu}": s for cpu, s in busy.items()}
    total = sum(busy.values())
    if len(busy) >= 2 and total > 0:
        out["guest_cpu_busiest_share"] = 100.0 * max(busy.values()) / total
    return out


def guest_run(before: str, after: str) -> dict[str, float]:
    """The seconds tasks other than the idle task ran over the window, all vCPUs, from
    /proc/schedstat's rq_cpu_time (ns, on the run queue's clock, added when a task leaves its
    CPU); {} without the file (a run stored before it, a kernel without CONFIG_SCHED_INFO)."""
    a, b = procstats.schedstat(before), procstats.schedstat(after)
    cpus = set(a) & set(b)
    if not cpus:
        return {}
    return {"guest_run": sum(b[c][RQ_CPU_TIME] - a[c][RQ_CPU_TIME] for c in cpus) / 1e9}


def guest_nonidle(before: str, after: str, window_s: float) -> dict[str, float]:
    """The seconds the vCPUs were neither idle, in iowait nor stolen over the window, from
    /proc/stat's cpuN lines: with NO_HZ the kernel accounts idle and iowait to the microsecond
    (printed in ticks), so this is a measured span rather than a count of sampled ticks."""
    a, b = procstats.cpu_ticks(before), procstats.cpu_ticks(after)
    cpus = set(a) & set(b)
    if not cpus or window_s <= 0:
        return {}
    away = sum(b[c][i] - a[c][i] for c in cpus for i in (*procstats.IDLE_MODES, CPU_MODES.index("steal"))
               if i < min(len(a[c]), len(b[c])))
    return {"guest_nonidle": max(0.0, window_s * len(cpus) - away / USER_HZ)}


def iostat(before: str, after: str, window_s: float, disks: list[str]) -> dict[str, float]:
    """iostat -x figures per disk over the window (the names of sysstat's old columns)."""
    a, b = diskstats(before), diskstats(after)
    out: dict[str, float] = {}
    for d in disks:
        if d not in a or d not in b:
            continue
        r, rm, rs, rt, w, wm, ws, wt, _inflight, busy_ms, weighted_ms = (
            y - x for x, y in zip(a[d][:11], b[d][:11]))
        ios = r + w
        out |= {
            f"iostat_r_s.{d}": r / window_s,
            f"iostat_w_s.{d}": w / window_s,
            f"iostat_rrqm_s.{d}": rm / window_s,
            f"iostat_wrqm_s.{d}": wm / window_s,
            f"iostat_rkb_s.{d}": rs * SECTOR / 1024 / window_s,
            f"iostat_wkb_s.{d}": ws * SECTOR / 1024 / window_s,
            f"iostat_avgrq_sz.{d}": (rs + ws) / ios if ios else 0.0,
            f"iostat_avgqu_sz.{d}": weighted_ms / (window_s * 1000),
            f"iostat_await.{d}": (rt + wt) / ios if ios else 0.0,
            f"iostat_util_pct.{d}": min(100.0, busy_ms / (window_s * 10)),
        }
    return out


def host_cpu(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, float]:
    """From libvirt figures recorded as {cpu_time, user_time, system_time: ns, vcpu_time: [ns],
    monotonic_s}: the guest's host CPU time and the host CPUs each vCPU thread kept busy."""
    window = after["monotonic_s"] - before["monotonic_s"]
    out = {
        "host_cpu": (after["cpu_time"] - before["cpu_time"]) / 1e9,
        "host_cpu_user": (after["user_time"] - before["user_time"]) / 1e9,
        "host_cpu_system": (after["system_time"] - before["system_time"]) / 1e9,
    }
    out["host_cpus_used"] = out["host_cpu"] / window
    vcpus = [(y - x) / 1e9 for x, y in zip(before["vcpu_time"], after["vcpu_time"])]
    for i, seconds in enumerate(vcpus):
        out[f"host_vcpu_used.{i}"] = seconds / window
    if vcpus:
        out["host_vcpu"] = sum(vcpus)
        out["host_vcpus_used"] = out["host_vcpu"] / window
    return out


def costs(tool: ToolRun, guest: Mapping[str, float], guest_window_s: float,
          host: Mapping[str, float], host_mhz: float | None) -> dict[str, float]:
    """CPU per operation and per byte, guest and host, for each CPU time `guest` and `host`
    hold (guest_run, guest_nonidle and host_vcpu where their sources were read); host cycles
    only with a known clock (KVM: the guest runs on host cycles; under TCG cycles mean nothing,
    so none are given)."""
    out: dict[str, float] = {}
    rates = {"guest_cpu": guest["guest_cpu_busy"] / guest_window_s, "host_cpu": host["host_cpus_used"]}
    rates |= {name: guest[name] / guest_window_s for name in ("guest_run", "guest_nonidle") if name in guest}
    if "host_vcpus_used" in host:
        rates["host_vcpu"] = host["host_vcpus_used"]
    if tool.op_rate > 0:
        out |= {f"{name}_us_per_op": rate / tool.op_rate * 1e6 for name, rate in rates.items()}
        out["ctxt_per_op"] = guest["ctxt_per_s"] / tool.op_rate
        out["intr_per_op"] = guest["intr_per_s"] / tool.op_rate
        if host_mhz:
            out["host_cycles_per_op"] = rates["host_cpu"] * host_mhz * 1e6 / tool.op_rate
    if tool.byte_rate > 0:
        out |= {f"{name}_ns_per_byte": rate / tool.byte_rate * 1e9 for name, rate in rates.items()}
    return out


def host_mhz(cpuinfo: str) -> float | None:
    """The nominal clock from /proc/cpuinfo's first `cpu MHz` line."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "cpu MHz":
            return float(value)
    return None
