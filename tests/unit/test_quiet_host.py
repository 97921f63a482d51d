"""The wait for a quiet host before a boot (orchestrator/backends/quiet.py): parsers on a real
/proc/meminfo layout, the settle loop with a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.quiet import (
    BootLoad,
    CpuWatch,
    HostState,
    boot_load,
    parse_cpu_busy,
    parse_cpu_list,
    parse_loadavg,
    parse_meminfo,
    parse_pid_ticks,
    settle,
)

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


STAT_BEFORE = """cpu  300 0 100 900 10 0 0 0 0 0
cpu0 100 0 50 450 5 0 0 0 0 0
cpu1 200 0 50 450 5 0 0 0 0 0
intr 12345
"""
STAT_AFTER = """cpu  ...
cpu0 700 10 90 450 5 0 3 2 0 0
cpu1 260 0 60 900 9 0 0 0 0 0
"""
QEMU_BEFORE = "4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 9 0 0 0 100 20 0 0 20 0 5 0 1 1 1\n"
QEMU_AFTER = "4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 9 0 0 0 400 80 0 0 20 0 5 0 1 1 1\n"


def test_per_cpu_busy_ticks_count_user_nice_system_irq_softirq_and_steal_not_idle_or_iowait_and_nice_apart():
    assert parse_cpu_busy(STAT_AFTER) == {0: (700 + 10 + 90 + 3 + 2, 10), 1: (260 + 60, 0)}


def test_a_process_s_ticks_are_its_utime_and_stime_whatever_its_name_holds():
    assert parse_pid_ticks(QEMU_AFTER) == 480
    assert parse_pid_ticks("7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0\n") == 33


def test_pinning_gives_the_guests_host_cpus():
    assert parse_cpu_list(("2", "3")) == (2, 3)
    assert parse_cpu_list(("0-1,4", "0-1,4")) == (0, 1, 4)
    assert parse_cpu_list(()) == ()


def test_the_boot_s_load_is_the_busy_time_of_its_cpus_outside_its_qemu_process():
    files = {"/proc/stat": STAT_BEFORE, "/proc/4242/stat": QEMU_BEFORE}
    clock = iter([10.0, 12.0])
    watch = CpuWatch(lambda path: files[path], 4242, (), clock=lambda: next(clock))
    watch.start()
    files.update({"/proc/stat": STAT_AFTER, "/proc/4242/stat": QEMU_AFTER})
    load = watch.stop()
    # busy: cpu0 +655 (10 niced), cpu1 +70 ticks = 7.25 s; QEMU +360 ticks = 3.6 s; 2 s on 2 CPUs
    assert (load.seconds, load.cpus, load.qemu_s, load.niced_s) == (2.0, 2, 3.6, 0.1)
    assert load.outside_s == pytest.approx(3.65) and load.taken == pytest.approx(3.55 / 4)
    assert BootLoad.from_dict(load.to_dict()) == load


def test_a_pinned_guest_s_load_counts_only_its_own_cpus():
    load = boot_load(1.0, (1,), (parse_cpu_busy(STAT_BEFORE), 0), (parse_cpu_busy(STAT_AFTER), 50))
    assert load.outside_s == pytest.approx(0.2) and load.taken == pytest.approx(0.2)


def test_niced_work_beside_the_guest_is_kept_apart_and_not_taken():
    before = ({0: (0, 0)}, 0)
    load = boot_load(10.0, (0,), before, ({0: (1000, 400)}, 500))  # QEMU 5 s, niced 4 s, other 1 s
    assert (load.outside_s, load.niced_s) == (5.0, 4.0) and load.taken == pytest.approx(0.1)
