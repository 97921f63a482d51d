"""A quiet host before a boot: wait until the host has written back what the kernel builds left.

Measured on the project's machines (docs/campaign.md): right after kernel builds, the first boots
of a disk workload read at 0.4-0.65x of later boots of the same image, most likely the host
writing back the builds' dirty pages under the guest. Before every boot the host is synced and
its Dirty + Writeback (/proc/meminfo) polled until they are under a bound, with a timeout; the
state found is stored with the boot. A boot that starts on a host that did not settle is marked
busy (`HostState.quiet` False): it is kept and shown, and the rule of docs/campaign.md ("Quiet
host") says what the decisions do with it.

The parsers are pure; `settle` takes the host's sync and file reader, so the same loop runs on
this machine and on a lab host over SSH (orchestrator/hosts/remote.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

# Dirty + Writeback under this many KiB counts as quiet: a few seconds of writeback at most on
# any disk, far below the gigabytes a kernel build leaves.
QUIET_KIB = 64 * 1024
# How long a boot waits for the host to settle before it starts anyway, marked busy.
SETTLE_TIMEOUT_S = 120.0
POLL_S = 0.5


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
