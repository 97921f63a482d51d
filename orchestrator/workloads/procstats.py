"""The kernel's own counters over one run, as pure functions over the /proc texts the agent's
snapshot copies before and after the tool (guest-agent/sysinfo.go): softirqs by type
(/proc/softirqs), memory management counters (/proc/vmstat), the scheduler's run queue
statistics (/proc/schedstat) and each vCPU's busy share (/proc/stat's cpuN lines).

These are what the kernel test robot lists under a regression (its softirqs, vmstat, schedstat
and mpstat monitors): a counter's change per second of the window, a gauge's value after the
run. A text that is missing (an old stored run, a kernel without CONFIG_SCHEDSTATS) gives no
metrics rather than zeros. Rates depend on the workload's own throughput, so most directions
are `none`; waiting to run is worse whatever the workload (`lower`).
"""

from __future__ import annotations

from collections.abc import Mapping

from orchestrator.workloads.definition import MetricDef

USER_HZ = 100  # /proc/stat ticks per second (as orchestrator/workloads/system.py)
IDLE_MODES = (3, 4)  # idle and iowait, the 4th and 5th tick fields of a cpuN line

SOFTIRQS = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")

# /proc/vmstat counters (events since boot) -> their rate; the sums fold the per-zone and
# per-reclaimer counters (pgalloc_dma32 + pgalloc_normal + ...), each zone also given alone
VMSTAT_COUNTERS: dict[str, tuple[str, str]] = {
    "pgfault": ("faults/s", "page faults"),
    "pgmajfault": ("faults/s", "major page faults (read from disk)"),
    "pgalloc": ("pages/s", "pages allocated, all zones (pgalloc_*)"),
    "pgfree": ("pages/s", "pages freed"),
    "pgpgin": ("KiB/s", "KiB paged in from block devices"),
    "pgpgout": ("KiB/s", "KiB paged out to block devices"),
    "pswpin": ("pages/s", "pages swapped in"),
    "pswpout": ("pages/s", "pages swapped out"),
    "pgscan": ("pages/s", "pages scanned by reclaim, kswapd and direct (pgscan_kswapd + pgscan_direct)"),
    "pgscan_direct": ("pages/s", "pages scanned by direct reclaim (an allocating task waited)"),
    "pgsteal": ("pages/s", "pages reclaimed, kswapd and direct (pgsteal_kswapd + pgsteal_direct)"),
    "allocstall": ("stalls/s", "allocations that entered direct reclaim, all zones (allocstall_*)"),
    "compact_stall": ("stalls/s", "allocations that waited for compaction"),
    "thp_fault_alloc": ("1/s", "transparent huge pages allocated at a fault"),
    "workingset_refault": ("pages/s", "evicted pages faulted back in (workingset_refault_anon + _file)"),
}
VMSTAT_SUMS = {"pgalloc": ("pgalloc_",), "allocstall": ("allocstall_",),
               "pgscan": ("pgscan_kswapd", "pgscan_direct"), "pgsteal": ("pgsteal_kswapd", "pgsteal_direct"),
               "workingset_refault": ("workingset_refault_anon", "workingset_refault_file", "workingset_refault")}
# gauges: the value after the run
VMSTAT_GAUGES: dict[str, str] = {
    "nr_dirty": "dirty pages waiting for writeback, after the run",
    "nr_writeback": "pages under writeback, after the run",
    "nr_free_pages": "free pages, after the run",
}

METRICS: dict[str, MetricDef] = {m.name: m for m in (
    *(MetricDef(f"softirq_{t.lower()}_per_s", "1/s", "none", f"{t} softirqs per second, all vCPUs (/proc/softirqs)")
      for t in SOFTIRQS),
    *(MetricDef(f"vmstat_{name}_per_s", unit, "none", f"{text} per second (/proc/vmstat)")
      for name, (unit, text) in VMSTAT_COUNTERS.items()),
    MetricDef("vmstat_pgalloc_zone_per_s", "pages/s", "none", "pages allocated in one zone per second (pgalloc_ZONE)"),
    *(MetricDef(f"vmstat_{name}", "pages", "none", f"{text} (/proc/vmstat)") for name, text in VMSTAT_GAUGES.items()),
    MetricDef("sched_run_delay_ms_per_s", "ms/s", "lower",
              "time runnable tasks waited on a run queue per second, all vCPUs (/proc/schedstat run_delay)"),
    MetricDef("sched_run_delay_us_per_slice", "us", "lower", "average wait on a run queue before a timeslice"),
    MetricDef("sched_slices_per_s", "1/s", "none", "timeslices run per second, all vCPUs (/proc/schedstat pcount)"),
    MetricDef("sched_cpu_run_delay_ms_per_s", "ms/s", "lower", "run queue wait per second on one vCPU"),
    MetricDef("sched_cpu_slices_per_s", "1/s", "none", "timeslices per second on one vCPU"),
    MetricDef("sched_wakeups_per_s", "1/s", "none", "task wakeups per second (schedstat ttwu_count; schedstats on)"),
    MetricDef("sched_wakeups_remote_pct", "%", "none",
              "share of wakeups onto another vCPU than the waker's (1 - ttwu_local / ttwu_count; schedstats on)"),
    MetricDef("guest_vcpu_busy_pct", "%", "none", "one vCPU's busy share of the window, from inside the guest"),
)}


def softirqs(text: str) -> dict[str, float]:
    """Each softirq type's count, summed over the CPUs (/proc/softirqs)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        name, sep, counts = line.partition(":")
        if sep and name.strip() in SOFTIRQS:
            out[name.strip()] = float(sum(int(x) for x in counts.split()))
    return out


def vmstat(text: str) -> dict[str, float]:
    """Every `name value` line of /proc/vmstat."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].lstrip("-").isdigit():
            out[fields[0]] = float(fields[1])
    return out


def schedstat(text: str) -> dict[int, list[float]]:
    """Per CPU, the counters of its `cpuN` line of /proc/schedstat (version 15: yld_count, 0,
    sched_count, sched_goidle, ttwu_count, ttwu_local, rq_cpu_time ns, run_delay ns, pcount)."""
    out: dict[int, list[float]] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 10 and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            out[int(fields[0][3:])] = [float(x) for x in fields[1:10]]
    return out


def cpu_ticks(text: str) -> dict[int, list[float]]:
    """Per CPU, the ticks of its `cpuN` line of /proc/stat (user, nice, system, idle, iowait, ...)."""
    out: dict[int, list[float]] = {}
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            out[int(fields[0][3:])] = [float(x) for x in fields[1:9]]
    return out


def softirq_rates(before: str, after: str, window_s: float) -> dict[str, float]:
    a, b = softirqs(before), softirqs(after)
    return {f"softirq_{t.lower()}_per_s": (b[t] - a[t]) / window_s for t in SOFTIRQS if t in a and t in b}


def _summed(counters: Mapping[str, float], name: str) -> float | None:
    parts = VMSTAT_SUMS.get(name)
    if parts is None:
        return counters.get(name)
    found = [v for k, v in counters.items() if any(k == p or (p.endswith("_") and k.startswith(p)) for p in parts)]
    return sum(found) if found else None


def vmstat_rates(before: str, after: str, window_s: float) -> dict[str, float]:
    a, b = vmstat(before), vmstat(after)
    if not a or not b:
        return {}
    out: dict[str, float] = {}
    for name in VMSTAT_COUNTERS:
        x, y = _summed(a, name), _summed(b, name)
        if x is not None and y is not None:
            out[f"vmstat_{name}_per_s"] = (y - x) / window_s
    for key in sorted(k for k in b if k.startswith("pgalloc_") and k in a and b[k] != a[k]):
        out[f"vmstat_pgalloc_zone_per_s.{key.removeprefix('pgalloc_')}"] = (b[key] - a[key]) / window_s
    out |= {f"vmstat_{name}": b[name] for name in VMSTAT_GAUGES if name in b}
    return out


def sched_rates(before: str, after: str, window_s: float) -> dict[str, float]:
    """Run queue waits and timeslices, all vCPUs and each; wakeups only where the kernel counts
    them (schedstats enabled: otherwise ttwu_count stays 0)."""
    a, b = schedstat(before), schedstat(after)
    cpus = sorted(set(a) & set(b))
    if not cpus:
        return {}
    d = {c: [y - x for x, y in zip(a[c], b[c])] for c in cpus}
    delay_ns, slices = sum(d[c][7] for c in cpus), sum(d[c][8] for c in cpus)
    wakeups, local = sum(d[c][4] for c in cpus), sum(d[c][5] for c in cpus)
    out = {"sched_run_delay_ms_per_s": delay_ns / 1e6 / window_s, "sched_slices_per_s": slices / window_s}
    if slices > 0:
        out["sched_run_delay_us_per_slice"] = delay_ns / 1e3 / slices
    if wakeups > 0:
        out["sched_wakeups_per_s"] = wakeups / window_s
        out["sched_wakeups_remote_pct"] = 100.0 * (wakeups - local) / wakeups
    for c in cpus:
        out[f"sched_cpu_run_delay_ms_per_s.{c}"] = d[c][7] / 1e6 / window_s
        out[f"sched_cpu_slices_per_s.{c}"] = d[c][8] / window_s
    return out


def vcpu_busy(before: str, after: str, window_s: float) -> dict[str, float]:
    """Each vCPU's share of the window not idle or in iowait, in percent (mpstat's view)."""
    a, b = cpu_ticks(before), cpu_ticks(after)
    out: dict[str, float] = {}
    for c in sorted(set(a) & set(b)):
        busy = sum(y - x for i, (x, y) in enumerate(zip(a[c], b[c])) if i not in IDLE_MODES)
        out[f"guest_vcpu_busy_pct.{c}"] = min(100.0, 100.0 * busy / USER_HZ / window_s)
    return out


def metrics(before: Mapping[str, str], after: Mapping[str, str], window_s: float) -> dict[str, float]:
    """Every metric above from two snapshots' files (path -> text) `window_s` seconds apart."""
    if window_s <= 0:
        return {}

    def pair(path: str) -> tuple[str, str]:
        return before.get(path, ""), after.get(path, "")

    return {**softirq_rates(*pair("/proc/softirqs"), window_s), **vmstat_rates(*pair("/proc/vmstat"), window_s),
            **sched_rates(*pair("/proc/schedstat"), window_s), **vcpu_busy(*pair("/proc/stat"), window_s)}
