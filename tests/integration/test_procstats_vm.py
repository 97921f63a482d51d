"""One real run in a real guest (Debian's kernel under TCG, two vCPUs, a 3 s fio random read)
stores the kernel's own counters (orchestrator/workloads/procstats.py) with plausible values:
the one real test of that path."""

from __future__ import annotations

import pytest

from orchestrator.store import Store
from orchestrator.vm.spec import DiskSpec, VmSpec
from orchestrator.workloads import runner
from orchestrator.workloads.definition import load_all, resolve

pytestmark = pytest.mark.vm

MEMORY_MIB = 1024


def test_a_real_run_stores_softirqs_vmstat_schedstat_and_per_vcpu_busy_with_plausible_values(launcher, distro,
                                                                                             tmp_path):
    workloads = load_all()
    plan = resolve(workloads, "fio", ["runtime=3", "ramp_time=0"])
    spec = VmSpec(vcpus=2, memory_mib=MEMORY_MIB, disks=DiskSpec(count=1, size_mib=128))
    with launcher.boot(spec, distro.image, "tcg", distro.release, timeout_s=180) as guest:
        runner.prepare(guest, workloads["fio"])
        result = runner.run(guest, plan.workload, plan.points[0], "tcg")
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("t", {})
    boot = store.start_boot(cid, "k")
    store.add_run(cid, boot, "k", result.values(), result.to_json())

    def stored(metric: str) -> float:
        return store.samples(cid, metric)["k"][0]

    # the guest's timer ticks and the scheduler runs on every vCPU in a 3 s window
    assert stored("softirq_timer_per_s") > 10 and stored("softirq_sched_per_s") > 0
    assert stored("sched_slices_per_s") > 10 and stored("sched_run_delay_ms_per_s") >= 0
    assert stored("sched_cpu_slices_per_s.0") > 0 and stored("sched_cpu_slices_per_s.1") > 0
    # fio maps its buffers: page faults and allocations; what it read is what the disk read
    assert stored("vmstat_pgfault_per_s") > 0 and stored("vmstat_pgalloc_per_s") > 0
    assert stored("vmstat_pgpgin_per_s") == pytest.approx(stored("iostat_rkb_s.sda"), rel=0.05)
    assert 0 < stored("vmstat_nr_free_pages") < MEMORY_MIB * 256
    busy = [stored(f"guest_vcpu_busy_pct.{i}") for i in (0, 1)]
    assert all(0 <= b <= 100 for b in busy) and max(busy) > 0
    assert sum(busy) / 2 == pytest.approx(stored("guest_cpu_busy_pct"), abs=1.0)
