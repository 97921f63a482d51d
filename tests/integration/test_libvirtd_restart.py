"""libvirtd restarted (or stopped) while a real guest runs: the host's fault, never the kernel's.

The controller is the real `vmbisect` CLI in a subprocess running a short comparison (two I/O
schedulers of the distribution kernel in one guest, fio) into a SQLite store. These tests restart
the host's libvirtd: marker `libvirtd_restart` (see tests/integration/libvirtd.py for where and
how they run)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from orchestrator import paths
from orchestrator.backends import host
from orchestrator.backends.libvirt_vm import RECONNECT_S, LibvirtProvider
from orchestrator.store import Store
from tests.conftest import require
from tests.integration import libvirtd

pytestmark = [pytest.mark.vm, pytest.mark.libvirtd_restart]

REPS = 2
VARIANTS = ("none", "deadline")


@pytest.fixture
def distro_kernel() -> host.DistroKernel:
    require(paths.agent_binary().is_file(), f"guest agent not built at {paths.agent_binary()}")
    kernel = host.find_distro_kernel()
    require(kernel is not None, "no distribution kernel with modules in /boot")
    assert kernel is not None
    return kernel


@pytest.fixture
def restartable() -> Iterator[None]:
    """libvirtd may be restarted here; whatever the test does, it answers again afterwards, and
    the guests of controllers the test killed on a failure are removed."""
    reason = libvirtd.why_not_restartable()
    require(reason is None, str(reason))
    try:
        yield
    finally:
        libvirtd.start_libvirtd()
        provider = LibvirtProvider()
        provider.cleanup_leftovers()
        provider.close()


def vmbisect(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})


def compare_argv(kernel: host.DistroKernel, store: str) -> list[str]:
    """One guest (--boots 1), 2 schedulers x 2 runs of 3 s fio, interleaved: 4 runs."""
    return ["compare", "--kernel", str(kernel.image), "--initrd-modules-from", kernel.release, "--accel", "tcg",
            "--vcpus", "1", "--memory", "512", "--disks", "1", "--disk-size", "64", "--workload", "fio",
            "--param", "runtime=3", "--param", "ramp_time=0", "--variant", "none=sched:none",
            "--variant", "deadline=sched:mq-deadline", "--reps", str(REPS), "--boots", "1", "--store", store]


def wait_for_line(proc: subprocess.Popen[str], prefix: str, timeout_s: float = 300.0) -> list[str]:
    """stderr lines up to the first starting with `prefix` (the controller's progress)."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"controller ended before {prefix!r}:\n" + "".join(seen))
        seen.append(line)
        if line.startswith(prefix):
            return seen
    raise AssertionError(f"no {prefix!r} within {timeout_s:g} s:\n" + "".join(seen))


def run_keys(store: Store) -> list[tuple[str, int, int]]:
    return [(r.raw["variant"], int(r.raw["point_index"]), int(r.raw["rep"])) for r in store.runs(1)]


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_libvirtd_restarted_while_a_guest_runs_pauses_the_campaign_and_resume_finishes_it(
        tmp_path: Path, distro_kernel: host.DistroKernel, restartable: None, how: str) -> None:
    # killed: the guest survives, its libvirt calls fail; stopped: libvirtd destroys the guest
    # and the agent falls silent with the connection gone. Both are the host's fault.
    store_url = f"sqlite:///{tmp_path / 'v.db'}"
    first = vmbisect(*compare_argv(distro_kernel, store_url))
    try:
        wait_for_line(first, "compare: run 1/4")  # one run stored, the guest runs the next one
        assert len(libvirtd.domains_of(first.pid)) == 1
        libvirtd.restart_libvirtd(how)
        _, err = first.communicate(timeout=300)
    finally:
        first.kill()
        first.wait()
    assert first.returncode == 3, err
    (message,) = [ln for ln in err.splitlines() if ln.startswith("vmbisect: ")][-1:]
    assert "libvirt connection lost (libvirtd restarted or stopped?)" in message, err
    assert message.endswith("campaign 1 paused, continue with: vmbisect resume 1"), err
    store = Store(store_url)
    assert store.campaign(1).state == "paused"
    before = {r.id: r.raw for r in store.runs(1)}
    assert [(raw["variant"], raw["rep"]) for raw in before.values()] == [("none", 0)]
    # the guest of the lost connection was destroyed through a new one before the controller exited
    assert libvirtd.domains_of(first.pid) == []

    second = vmbisect("resume", "1", "--store", store_url)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert "iops (IO/s, higher is better)" in out
    store = Store(store_url)
    after = {r.id: r.raw for r in store.runs(1)}
    assert {i: after[i] for i in before} == before  # nothing stored before the pause lost or changed
    keys = run_keys(store)
    assert len(keys) == len(set(keys)) == REPS * len(VARIANTS)  # none counted twice, none missing
    assert Counter(v for v, _, _ in keys) == {v: REPS for v in VARIANTS}
    assert store.campaign(1).state == "done"
    assert libvirtd.domains_of(first.pid) == [] and libvirtd.domains_of(second.pid) == []


STATS_UNTIL_FAILURE = """
import sys, time
from pathlib import Path
from orchestrator.backends.factory import real_launcher
from orchestrator.errors import InfraError
from orchestrator.vm.spec import VmSpec
launcher = real_launcher()
try:
    with launcher.boot(VmSpec(vcpus=1, memory_mib=512), Path(sys.argv[1]), "tcg", sys.argv[2],
                       timeout_s=180) as guest:
        print(guest.name, flush=True)
        while True:
            guest.domain.getCPUStats(True)
            time.sleep(0.2)
except InfraError as exc:
    print(f"InfraError: {exc}", flush=True)
    sys.exit(3)
"""


def test_a_guest_whose_libvirtd_stays_down_is_destroyed_by_vmbisect_cleanup_once_it_is_back(
        tmp_path: Path, distro_kernel: host.DistroKernel, restartable: None) -> None:
    proc = subprocess.Popen([sys.executable, "-c", STATS_UNTIL_FAILURE, str(distro_kernel.image),
                             distro_kernel.release], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        name = proc.stdout.readline().strip()
        assert name.startswith("vmbisect-") and libvirtd.domains_of(proc.pid) == [name]
        libvirtd.stop_libvirtd("killed")  # crashed: QEMU keeps running
        out, _ = proc.communicate(timeout=RECONNECT_S + 60)  # it waited RECONNECT_S for libvirtd, in vain
    finally:
        proc.kill()
        proc.wait()
        libvirtd.start_libvirtd()
    assert proc.returncode == 3 and out.startswith("InfraError: libvirt connection lost"), out
    # libvirtd is back: the guest still runs, its controller is dead
    assert libvirtd.domains_of(proc.pid) == [name]
    cleanup = subprocess.run([sys.executable, "-m", "orchestrator.cli", "cleanup"], capture_output=True, text=True)
    assert cleanup.returncode == 0, cleanup.stderr
    assert name in cleanup.stdout + cleanup.stderr
    assert libvirtd.domains_of(proc.pid) == []


def test_libvirtd_started_under_a_held_lock_does_not_keep_the_lock(tmp_path: Path, restartable: None) -> None:
    # `flock /work/cpu.lock make setup` starts the daemons (docs/setup.md): they must not inherit
    # the lock's descriptor, or every later flock on the machine waits for as long as they run
    lock = tmp_path / "cpu.lock"
    libvirtd.stop_libvirtd("stopped")
    done = subprocess.run(["flock", str(lock), "bash", str(libvirtd.START)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(libvirtd.libvirtd_pids()) == 1
    free = subprocess.run(["flock", "-n", str(lock), "true"])
    assert free.returncode == 0, "libvirtd, started under the lock, still holds it"
