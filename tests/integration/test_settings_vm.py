"""Every kind of guest setting of the vocabulary (docs/settings-bisect.md, docs/compare.md) in
one real guest of the distribution kernel (TCG): a kernel command-line word, the I/O scheduler
with one of its tunables, the block queue knobs, a sysfs write outside the block layer and a
nice value, all set the way a settings bisection sets a candidate's (the campaign file's
vocabulary, SettingsMaker, the candidate measurer over the real guest pool), a real fio run
under them, and each read back from inside the guest."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.campaign.workload import choose_workload
from orchestrator.compare.sysfs import current
from orchestrator.hosts.labfile import local_lab
from orchestrator.hosts.pool import GuestPool
from orchestrator.measure.guests import NicedGuest, PoolMeasurer
from orchestrator.setbisect.campaign import parse_settings
from orchestrator.setbisect.judged import CandidateMeasurer, Candidates
from orchestrator.setbisect.settings import RANKS, SettingsMaker
from orchestrator.wiring import settings_kernel
from orchestrator.workloads.guest import data_disks

pytestmark = pytest.mark.vm

CMDLINE_WORD = "transparent_hugepage=never"
BAD = {"cmdline": CMDLINE_WORD,
       "settings": {"scheduler": "bfq", "read_ahead_kb": 4096, "nomerges": 2, "nice": 7,
                    "sysfs": {"kernel/mm/ksm/pages_to_scan": 200, "block/{disk}/queue/iosched/slice_idle": 0}}}


def nice_of(stat: str) -> int:
    """The nice value in a /proc/PID/stat line (field 19)."""
    return int(stat.rpartition(")")[2].split()[16])


def test_every_setting_kind_takes_in_a_real_guest_and_reads_back_from_inside_it(launcher, distro, tmp_path: Path):  # type: ignore[no-untyped-def]
    campaign = parse_settings({
        "kind": "settings", "name": "every-setting", "kernel": {"file": str(distro.image), "modules": distro.release},
        "good": {}, "bad": BAD, "workload": {"name": "fio", "params": {"runtime": 2, "ramp_time": 0}},
        "metric": {"name": "iops", "threshold": "-20%"}, "accel": "tcg",
        "guest": {"memory_mib": 512, "disks": {"count": 1, "size_mib": 64, "controller": "virtio-scsi"}}})
    units = campaign.units()
    assert {u.rank for u in units} == set(RANKS.values())  # every kind of the vocabulary is here
    candidates = Candidates(SettingsMaker(settings_kernel(campaign.kernel), campaign.good, campaign.bad, units),
                            [u.name for u in units])
    key = candidates.key(frozenset(u.name for u in units))
    made = candidates.made(key)
    common = campaign.common
    choice = choose_workload(common)
    pool = GuestPool(local_lab(), lambda _host: launcher)
    inner = PoolMeasurer(pool, common.guest, choice.workload, choice.params, {}, "tcg", "", common.timeouts.boot_s,
                         common.timeouts.run_s)
    measurer = CandidateMeasurer(inner, candidates)
    with measurer.boot(candidates.build(key).kernel) as session:
        result = session.run()  # applies the settings, then one fio run at the candidate's nice
        guest = session.guest
        disk = data_disks(guest)[0]

        def read(path: str) -> str:
            return current(guest.agent.get(path).decode())

        cmdline = guest.agent.get("/proc/cmdline").decode().split()
        niced = NicedGuest(guest, 7).exec(["sh", "-c", "sleep 9 & cat /proc/$$/stat; cat /proc/$!/stat; kill $!"])
        seen = {
            "cmdline": CMDLINE_WORD in cmdline,
            "thp": read("/sys/kernel/mm/transparent_hugepage/enabled"),
            "scheduler": read(f"/sys/block/{disk}/queue/scheduler"),
            "slice_idle": read(f"/sys/block/{disk}/queue/iosched/slice_idle"),
            "read_ahead_kb": read(f"/sys/block/{disk}/queue/read_ahead_kb"),
            "nomerges": read(f"/sys/block/{disk}/queue/nomerges"),
            "pages_to_scan": read("/sys/kernel/mm/ksm/pages_to_scan"),
            "nice": [nice_of(line) for line in niced.stdout.decode().splitlines()],
        }
    assert (made.append, made.nice) == (CMDLINE_WORD, 7)
    assert seen == {"cmdline": True, "thp": "never", "scheduler": "bfq", "slice_idle": "0", "read_ahead_kb": "4096",
                    "nomerges": "2", "pages_to_scan": "200", "nice": [7, 7]}, seen
    values = result.values()
    # the workload's own processes (fio and its job) ran niced: their user time is counted as nice
    # time in the guest's /proc/stat (read by the agent's snapshots around the run), not as user
    # time (0.42-0.50 s nice against 0.02-0.03 s user in three runs here)
    assert values["iops"] > 0 and values["guest_cpu_nice"] > values["guest_cpu_user"], values
