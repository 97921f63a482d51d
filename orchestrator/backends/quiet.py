"""A quiet host before a boot: wait until the host has written back what the kernel builds left.

Measured on the project's machines (docs/campaign.md): right after kernel builds, the first boots
of a disk workload read at 0.4-0.65x of later boots of the same image, most likely the host
writing back the builds' dirty pages under the guest. Before every boot the host is synced and
its Dirty + Writeback (/proc/meminfo) polled until they are under a bound, with a timeout; the
state found is stored with the boot. A boot that starts on a host that did not settle is marked
busy (`HostState.quiet` False): it is kept and shown, and the rule of docs/campaign.md ("Quiet
host") says what the decisions do with it.

For the whole boot (from the guest's start to its end, its runs included) `CpuWatch` measures
the CPU time the host spent on the guest's CPUs outside this guest's QEMU process: the busy time
of those CPUs (/proc/stat, per CPU) less the QEMU process's own (/proc/<pid>/stat utime +
stime). What of it niced processes took is kept apart: on a host that is never idle, niced
work soaks up what the guest leaves and yields to it (measured: the share did not tell a boot
with two busy loops beside it from one without, its not-niced part did). `BootLoad.taken` is
the not-niced part as a share of what those CPUs could give. A compile, a simulation or
git's background gc beside the guest shows there, however quiet the host was when the guest
started. What the decisions do with it: docs/campaign.md "Quiet host" (orchestrator/stats.py
`stray_boots`).

The parsers are pure; `settle` and `CpuWatch` take the host's sync and file reader, so the same
code runs on this machine and on a lab host over SSH (orchestrator/hosts/remote.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

# Dirty + Writeback under this many KiB counts as quiet: a few seconds of writeback at most on
# any disk, far below the gigabytes a kernel build leaves.
QUIET_KIB = 64 * 1024
# How long a boot waits for the host to settle before it starts anyway, marked busy.
SETTLE_TIMEOUT_S = 120.0
POLL_S = 0.5
# /proc/stat and /proc/<pid>/stat count in USER_HZ ticks, 100 a second on every Linux.
USER_HZ = 100


@dataclass(frozen=True)
class HostState:
    """What the host had still to write back when the guest started, its 1-minute load, how
    long the boot waited for it, and whether it was under the bound (`quiet`)."""

    dirty_kib: int
    writeback_kib: int
    load1: float
    waited_s: float
    quiet: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HostState":
        return cls(int(d["dirty_kib"]), int(d["writeback_kib"]), float(d["load1"]), float(d["waited_s"]),
                   bool(d["quiet"]))

    def describe(self) -> str:
        state = "quiet" if self.quiet else "busy"
        return (f"{state}: {(self.dirty_kib + self.writeback_kib) / 1024:.0f} MiB to write back, "
                f"load {self.load1:.2f}, waited {self.waited_s:.1f} s")


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {field: KiB}; lines that are not `Name: <n> [kB]` are left out."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[name.strip()] = int(fields[0])
    return out


def parse_loadavg(text: str) -> float:
    """/proc/loadavg -> the 1-minute load average (0.0 when unreadable)."""
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return 0.0


def settle(sync: Callable[[], None], read: Callable[[str], str], bound_kib: int = QUIET_KIB,
           timeout_s: float = SETTLE_TIMEOUT_S, clock: Callable[[], float] = time.monotonic,
           sleep: Callable[[float], None] = time.sleep) -> HostState:
    """Sync the host, then wait until Dirty + Writeback are under `bound_kib` or `timeout_s`
    passed; the state at the end."""
    start = clock()
    sync()
    while True:
        mem = parse_meminfo(read("/proc/meminfo"))
        dirty, writeback = mem.get("Dirty", 0), mem.get("Writeback", 0)
        waited = clock() - start
        quiet = dirty + writeback <= bound_kib
        if quiet or waited >= timeout_s:
            return HostState(dirty, writeback, parse_loadavg(read("/proc/loadavg")), round(waited, 3), quiet)
        sleep(POLL_S)


@dataclass(frozen=True)
class BootLoad:
    """The whole boot on its host CPUs: how long it was watched, on how many CPUs, the CPU
    seconds its QEMU process used, those the host spent on those CPUs outside it, and of those
    the user time of niced processes (`niced_s`: work that yields to the guest's QEMU)."""

    seconds: float
    cpus: int
    qemu_s: float
    outside_s: float
    niced_s: float = 0.0

    @property
    def taken(self) -> float:
        """The share of the guest's CPUs' time other work at the guest's priority (not niced)
        took during the boot (0..1)."""
        capacity = self.seconds * self.cpus
        return min(max((self.outside_s - self.niced_s) / capacity, 0.0), 1.0) if capacity > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "taken": round(self.taken, 4)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BootLoad":
        return cls(float(d["seconds"]), int(d["cpus"]), float(d["qemu_s"]), float(d["outside_s"]),
                   float(d.get("niced_s", 0.0)))


def parse_cpu_busy(text: str) -> dict[int, tuple[int, int]]:
    """/proc/stat -> {cpu: (busy ticks, niced user ticks)}. Busy: user, nice, system, irq,
    softirq and steal (a guest's time is inside user and nice); idle and iowait are not busy.
    Niced: the `nice` column alone (a niced process's system time counts as not niced)."""
    out: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        m = re.match(r"cpu(\d+)\s+(.*)", line)
        if m is None:
            continue
        fields = [int(f) for f in m[2].split()]
        fields += [0] * (8 - len(fields))
        out[int(m[1])] = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7], fields[1])
    return out


def parse_pid_ticks(text: str) -> int:
    """/proc/<pid>/stat -> the process's utime + stime ticks (its threads included)."""
    fields = text.rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat(5), after pid and comm


def parse_cpu_list(entries: Sequence[str]) -> tuple[int, ...]:
    """Host CPU sets as libvirt's pinning gives them ("0", "2,3", "4-7") -> the CPUs, sorted."""
    cpus: set[int] = set()
    for entry in entries:
        for part in entry.split(","):
            low, _, high = part.strip().partition("-")
            if low:
                cpus.update(range(int(low), int(high or low) + 1))
    return tuple(sorted(cpus))


def boot_load(seconds: float, cpus: Sequence[int], before: tuple[dict[int, tuple[int, int]], int],
              after: tuple[dict[int, tuple[int, int]], int]) -> BootLoad:
    """The load between two readings (per-CPU busy and niced ticks, QEMU's ticks) of the guest's
    CPUs. QEMU runs at the default priority: none of its time is niced."""
    busy = sum(after[0].get(c, (0, 0))[0] - before[0].get(c, (0, 0))[0] for c in cpus)
    niced = sum(after[0].get(c, (0, 0))[1] - before[0].get(c, (0, 0))[1] for c in cpus)
    qemu = after[1] - before[1]
    outside = max(busy - qemu, 0)
    return BootLoad(round(seconds, 3), len(cpus), qemu / USER_HZ, outside / USER_HZ, min(niced, outside) / USER_HZ)


class CpuWatch:
    """The load of one guest's boot: `start()` when its QEMU process runs, `stop()` before it
    ends. `cpus` empty: every CPU of the host (an unpinned guest)."""

    def __init__(self, read: Callable[[str], str], pid: int, cpus: Sequence[int],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.read, self.pid, self.clock = read, pid, clock
        self.cpus = tuple(cpus)
        self._start: tuple[float, tuple[dict[int, tuple[int, int]], int]] | None = None

    def _reading(self) -> tuple[dict[int, tuple[int, int]], int]:
        busy = parse_cpu_busy(self.read("/proc/stat"))
        return busy, parse_pid_ticks(self.read(f"/proc/{self.pid}/stat"))

    def start(self) -> None:
        at = self.clock()
        self._start = (at, self._reading())

    def stop(self) -> BootLoad:
        assert self._start is not None
        reading, at = self._reading(), self.clock()
        cpus = self.cpus or tuple(sorted(reading[0]))
        return boot_load(at - self._start[0], cpus, self._start[1], reading)
