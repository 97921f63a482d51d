"""The wait for a quiet host before a boot (orchestrator/backends/quiet.py): parsers on a real
/proc/meminfo layout, the settle loop with a fake clock."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.quiet import HostState, parse_loadavg, parse_meminfo, settle

BUSY = (Path(__file__).parents[1] / "data" / "proc" / "meminfo-busy.txt").read_text()


def test_meminfo_is_read_in_kib_by_field_name():
    mem = parse_meminfo(BUSY)
    assert mem["Dirty"] == 1843200 and mem["Writeback"] == 20480 and mem["MemTotal"] > 0


def test_loadavg_gives_the_one_minute_load_and_zero_when_unreadable():
    assert parse_loadavg("1.52 0.80 0.33 2/345 6789\n") == 1.52
    assert parse_loadavg("") == 0.0


class Host:
    """Dirty pages that drain by `drain_kib` per poll, on a clock that the sleeps move."""

    def __init__(self, dirty_kib: int, drain_kib: int) -> None:
        self.dirty, self.drain, self.now, self.synced = dirty_kib, drain_kib, 0.0, 0

    def sync(self) -> None:
        self.synced += 1

    def read(self, path: str) -> str:
        if path == "/proc/loadavg":
            return "0.50 0.40 0.30 1/100 1\n"
        return f"MemTotal: 1000000 kB\nDirty: {self.dirty} kB\nWriteback: 0 kB\n"

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.dirty = max(0, self.dirty - self.drain)


def test_a_host_that_writes_back_in_time_is_waited_for_and_called_quiet():
    host = Host(dirty_kib=1_000_000, drain_kib=200_000)
    state = settle(host.sync, host.read, bound_kib=65536, timeout_s=60, clock=lambda: host.now, sleep=host.sleep)
    assert host.synced == 1
    assert state.quiet and state.dirty_kib <= 65536 and state.waited_s == 2.5 and state.load1 == 0.5


def test_a_host_that_stays_busy_is_waited_for_until_the_timeout_then_called_busy():
    host = Host(dirty_kib=10_000_000, drain_kib=1)
    state = settle(host.sync, host.read, bound_kib=65536, timeout_s=5, clock=lambda: host.now, sleep=host.sleep)
    assert not state.quiet and state.waited_s == 5.0 and state.dirty_kib > 65536
    assert state.describe().startswith("busy: 9766 MiB to write back")


def test_a_quiet_host_is_not_waited_for():
    host = Host(dirty_kib=100, drain_kib=0)
    state = settle(host.sync, host.read, clock=lambda: host.now, sleep=host.sleep)
    assert state.quiet and state.waited_s == 0.0


def test_host_state_survives_the_store_round_trip():
    state = HostState(12, 3, 0.25, 1.5, True)
    assert HostState.from_dict(state.to_dict()) == state
