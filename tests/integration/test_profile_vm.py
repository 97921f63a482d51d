"""A real kernel profile diff in libvirt guests (TCG): the distribution kernel booted twice from
an image that carries perf, the disk's scheduler `none` in one guest and `bfq` in the other, fio
run once in each under `perf record -a -g` with the software clock (TCG has no PMU), the
`perf script` output folded on the host, stored as a profile row (no boot, no run), and the
reports' profile section drawn from it."""

from __future__ import annotations

import time

import pytest

from orchestrator.explain import profile_render, profile_stored
from orchestrator.explain.perfscript import KERNEL, parse_folded
from orchestrator.explain.profile_boots import CULPRIT, PARENT, profile_pair, with_perf
from orchestrator.hosts.labfile import local_lab
from orchestrator.hosts.pool import GuestPool
from orchestrator.measure.guests import PoolMeasurer
from orchestrator.measure.kernels import Kernels
from orchestrator.store import Store
from orchestrator.vm.spec import DiskSpec, VmSpec
from orchestrator.workloads.definition import load_all, resolve

pytestmark = pytest.mark.vm


def _scheduler(name: str):
    def setup(guest) -> None:
        done = guest.exec(["sh", "-c", f"echo {name} > /sys/block/sda/queue/scheduler"], timeout_s=30)
        assert done.succeeded, done.stderr

    return setup


def test_profile_boots_of_two_disk_schedulers_name_kernel_symbols_and_the_bfq_functions_only_with_bfq(
        launcher, distro, tmp_path):
    plan = resolve(load_all(), "fio", ["runtime=3", "ramp_time=0"])
    pool = GuestPool(local_lab(), lambda _host: with_perf(launcher))
    spec = VmSpec(disks=DiskSpec(count=1, size_mib=256)).validate()
    measurer = PoolMeasurer(pool, spec, plan.workload, plan.points[0], {}, "tcg", boot_timeout_s=300)
    kernel = Kernels().file(distro.image, distro.release)
    started = time.monotonic()
    # The pool is not closed: closing it closes its launchers, and this one shares the session's
    # libvirt connection with every later guest test.
    stacks, event = profile_pair(measurer, {PARENT: kernel, CULPRIT: kernel}, boots=1,
                                 setup={PARENT: _scheduler("none"), CULPRIT: _scheduler("bfq")})
    print(f"two profile boots in {time.monotonic() - started:.0f} s")
    assert event == "cpu-clock"
    none, bfq = (parse_folded(stacks[side][0]) for side in (PARENT, CULPRIT))
    kernel_frames = {f for s in none for f in s if f.endswith(KERNEL)}
    assert {"do_syscall_64" + KERNEL, "submit_bio_noacct_nocheck" + KERNEL} <= kernel_frames
    assert any(f.startswith("bfq_") for s in bfq for f in s)
    assert not any(f.startswith("bfq_") for s in none for f in s)

    store = Store(f"sqlite:///{tmp_path / 'p.db'}")
    cid = store.new_campaign("profile", {})
    store.add_profile(cid, "none", "bfq", event, stacks)
    assert list(store.runs(cid)) == [] and store.boots(cid) == []
    profiled = profile_stored.collect(store, cid, "none", "bfq")
    assert profiled is not None and profiled.diff is not None
    text = "\n".join(profile_render.markdown(profiled))
    assert "perf-profile.children.cpu-clock." in text and max(len(line) for line in text.splitlines()) <= 78
    page = profile_render.html(profiled)
    assert page.count("<svg") == 2 and "bfq_" in page
