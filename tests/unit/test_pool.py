"""The guest pool's slot bookkeeping and host-failure rules, with a fake launcher (the real one
is driven over SSH in tests/integration/test_remote_host.py)."""

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator.errors import BootFailed, HostFailed, InfraError, UserError
from orchestrator.hosts.labfile import parse_lab
from orchestrator.hosts.pool import GuestPool, fit_spec
from orchestrator.ports import KernelArtifact
from orchestrator.vm.spec import DiskSpec, VmSpec

LAB = parse_lab({"hosts": [
    {"name": "a", "slots": [{"cpus": "0-1"}, {"cpus": "2-3"}], "disk_dir": "/fast"},
    {"name": "b", "ssh": "root@b", "key": "/k", "slots": [{"cpus": [0, 1]}]},
]})
KERNEL = KernelArtifact(Path("/k/bzImage"), "ab" * 32, "6.1.0")


class FakeLauncher:
    def __init__(self, host, fail_with=None):
        self.host = host
        self.fail_with = fail_with
        self.booted = []
        self.closed = False
        self.provider = SimpleNamespace(cleanup_leftovers=lambda: [])

    def choose_accel(self, wanted):
        return SimpleNamespace(accel="tcg")

    @contextmanager
    def boot(self, spec, image, accel, release, append, timeout_s, modules_root=None):
        if self.fail_with is not None:
            raise self.fail_with
        self.booted.append(spec)
        yield SimpleNamespace(host=self.host.name, spec=spec, boot_seconds=0.0, host_state=None, phases={}, accel="tcg",
                              domain=None)

    def close(self):
        self.closed = True


def pool_with(failures=None):
    launchers = {}

    def make(host):
        launchers[host.name] = FakeLauncher(host, (failures or {}).get(host.name))
        return launchers[host.name]

    return GuestPool(LAB, make), launchers


def test_slots_are_handed_out_once_until_released():
    pool, _ = pool_with()
    leases = [pool.acquire() for _ in range(3)]
    assert [(lease.host.name, lease.slot.index) for lease in leases] == [("a", 0), ("a", 1), ("b", 0)]
    with pytest.raises(InfraError, match="no free slot within 0.05 s"):
        pool.acquire(timeout_s=0.05)
    pool.release(leases[1])
    assert (pool.acquire().host.name, leases[1].slot.index) == ("a", 1)


def test_acquire_waits_for_a_release():
    pool, _ = pool_with()
    held = [pool.acquire(host="b")]
    threading.Timer(0.1, pool.release, held).start()
    assert pool.acquire(host="b", timeout_s=5).host.name == "b"


def test_guest_is_pinned_to_its_slot_and_its_disks_go_to_the_hosts_disk_dir():
    pool, launchers = pool_with()
    with pool.guest(VmSpec(vcpus=2, disks=DiskSpec(count=1)), KERNEL, host="a") as guest:
        assert guest.host == "a"
    spec = launchers["a"].booted[0]
    assert spec.pinning == ("0", "1") and spec.disks.directory == Path("/fast")
    assert [s.busy for s in pool.status()] == [0, 0]


def test_host_failure_marks_the_host_down_and_names_it():
    pool, launchers = pool_with({"b": HostFailed("b", "ssh connection lost")})
    with pytest.raises(HostFailed, match="^host b: ssh connection lost$") as err:
        with pool.guest(VmSpec(), KERNEL, host="b"):
            pass
    assert err.value.host == "b"
    status = {s.name: s for s in pool.status()}
    assert not status["b"].up and status["b"].reason == "ssh connection lost" and status["b"].busy == 0
    assert launchers["b"].closed
    with pytest.raises(InfraError, match="^no host is up: b: ssh connection lost$"):
        pool.acquire(host="b")
    assert pool.acquire().host.name == "a"


def test_failure_inside_the_guest_body_marks_the_host_down():
    pool, _ = pool_with()
    with pytest.raises(HostFailed):
        with pool.guest(VmSpec(), KERNEL, host="a"):
            raise HostFailed("a", "libvirt connection lost")
    assert [s.up for s in pool.status()] == [False, True]


def test_any_infra_error_of_a_host_becomes_host_failed():
    pool, _ = pool_with({"a": InfraError("libvirt could not start the guest: no space")})
    with pytest.raises(HostFailed, match="^host a: libvirt could not start the guest: no space$"):
        with pool.guest(VmSpec(), KERNEL, host="a"):
            pass


@pytest.mark.parametrize("fault", [BootFailed("panic"), UserError("cache: bad")])
def test_kernel_faults_and_user_errors_leave_the_host_up(fault):
    pool, _ = pool_with({"a": fault})
    with pytest.raises(type(fault)):
        with pool.guest(VmSpec(), KERNEL, host="a"):
            pass
    assert all(s.up for s in pool.status())


def test_every_host_down_is_an_infra_error_listing_the_reasons():
    pool, _ = pool_with()
    pool.mark_down("a", "gone")
    pool.mark_down("b", "auth refused")
    with pytest.raises(InfraError, match="^no host is up: a: gone; b: auth refused$"):
        pool.acquire()


def test_a_guest_cannot_carry_its_own_pinning_or_local_disk_dir_into_a_slot():
    a, b = LAB.hosts
    with pytest.raises(UserError, match="^pin: host a slot 0 pins the guest to host CPUs 0,1; drop --pin"):
        fit_spec(VmSpec(vcpus=2, pinning=("5", "6")), a, a.slots[0])
    with pytest.raises(UserError, match="^disk-dir: /tmp is a directory of this machine; for host b set disk_dir"):
        fit_spec(VmSpec(disks=DiskSpec(count=1, directory=Path("/tmp"))), b, b.slots[0])
    assert fit_spec(VmSpec(vcpus=4), a, a.slots[1]).pinning == ("2,3",) * 4


def test_a_measurer_for_one_host_keeps_every_guest_on_the_host_its_first_got():
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.workloads.definition import load_all

    pool, launchers = pool_with()
    measurer = PoolMeasurer(pool, VmSpec(vcpus=2), load_all()["fio"], {}, {}, one_host=True)
    held = [pool.acquire(host="a"), pool.acquire(host="a")]  # host a busy: the first guest goes to b
    with measurer.boot(KERNEL) as session:
        assert session.host == "b"
    for lease in held:
        pool.release(lease)
    with measurer.boot(KERNEL) as session:  # a is free now, yet the guest stays on b
        assert session.host == "b"
    assert len(launchers["b"].booted) == 2 and "a" not in launchers


def test_a_host_failing_before_the_first_guest_sends_the_boot_to_another_host():
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.workloads.definition import load_all

    pool, launchers = pool_with({"a": InfraError("cannot connect to libvirt at qemu+ssh://a/system")})
    measurer = PoolMeasurer(pool, VmSpec(vcpus=2), load_all()["fio"], {}, {}, one_host=True)
    with measurer.boot(KERNEL) as session:
        assert session.host == "b"
    assert [(s.name, s.up) for s in pool.status()] == [("a", False), ("b", True)]


def test_a_host_failing_once_a_measurer_is_tied_to_it_is_not_hidden():
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.workloads.definition import load_all

    pool, _ = pool_with({"a": InfraError("cannot connect to libvirt at qemu+ssh://a/system")})
    measurer = PoolMeasurer(pool, VmSpec(vcpus=2), load_all()["fio"], {}, {}, host="a", one_host=True)
    with pytest.raises(HostFailed, match="^host a: "):
        with measurer.boot(KERNEL):
            pass
    assert [s.up for s in pool.status()] == [False, True]


def test_every_host_failing_ends_in_no_host_is_up_naming_each_reason():
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.workloads.definition import load_all

    pool, _ = pool_with({"a": InfraError("libvirt gone"), "b": InfraError("ssh refused")})
    measurer = PoolMeasurer(pool, VmSpec(vcpus=2), load_all()["fio"], {}, {}, one_host=True)
    with pytest.raises(InfraError, match="^no host is up: a: libvirt gone; b: ssh refused$"):
        with measurer.boot(KERNEL):
            pass


def test_a_measurer_moves_on_from_its_host_only_when_nobody_asked_for_that_host():
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.workloads.definition import load_all

    pool, _ = pool_with()
    fio = load_all()["fio"]
    assert not PoolMeasurer(pool, VmSpec(), fio, {}, {}, host="b").move_on()  # --host b
    resumed = PoolMeasurer(pool, VmSpec(), fio, {}, {}, host="b", pinned=False)  # where it measured last
    assert resumed.move_on() and resumed.host is None


def locked_pool(root, lab=LAB):
    from orchestrator.hosts.cpulocks import CpuLocks

    return GuestPool(lab, lambda host: FakeLauncher(host), CpuLocks(root))


def test_two_controllers_with_one_lab_file_never_share_a_slots_host_cpus(tmp_path):
    first, second = locked_pool(tmp_path), locked_pool(tmp_path)  # two processes' pools, one lab
    a0 = first.acquire("a")
    a1 = second.acquire("a")
    assert (a0.slot.index, a1.slot.index) == (0, 1)  # the second skips the first's slot
    with pytest.raises(InfraError, match="no free slot within 0.3 s"):
        second.acquire("a", timeout_s=0.3)
    first.release(a0)
    assert second.acquire("a", timeout_s=0.3).slot.index == 0


def test_a_lab_file_naming_the_same_machine_otherwise_meets_it_on_its_cpus(tmp_path):
    other = parse_lab({"hosts": [{"name": "renamed", "ssh": "perf@b:22", "key": "/k", "slots": [{"cpus": "1-2"}]}]})
    first, second = locked_pool(tmp_path), locked_pool(tmp_path, other)
    held = first.acquire("b")  # root@b, CPUs 0 and 1
    with pytest.raises(InfraError, match="no free slot"):
        second.acquire("renamed", timeout_s=0.3)  # CPU 1 overlaps
    first.release(held)
    assert second.acquire("renamed", timeout_s=0.3).host.name == "renamed"


def test_a_waiting_controller_gets_the_slot_when_the_other_releases_it(tmp_path):
    first, second = locked_pool(tmp_path), locked_pool(tmp_path)
    held = [first.acquire("b")]
    threading.Timer(0.3, lambda: first.release(held[0])).start()
    assert second.acquire("b", timeout_s=5).host.name == "b"


def test_a_killed_controller_leaves_no_lease_behind(tmp_path):
    import signal
    import subprocess
    import sys

    code = ("import sys, time; from pathlib import Path; from orchestrator.hosts.cpulocks import CpuLocks; "
            "from tests.unit.test_pool import LAB; held = CpuLocks(Path(sys.argv[1])).take(LAB.hosts[1], "
            "LAB.hosts[1].slots[0]); print('held' if held else 'busy', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        pool = locked_pool(tmp_path)
        with pytest.raises(InfraError, match="no free slot"):
            pool.acquire("b", timeout_s=0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert pool.acquire("b", timeout_s=3).host.name == "b"
    finally:
        proc.kill()


def test_cpus_given_back_go_to_the_controller_that_waited_not_back_to_the_one_that_had_them(tmp_path):
    first, second = locked_pool(tmp_path), locked_pool(tmp_path)
    held = first.acquire("b")
    with pytest.raises(InfraError, match="no free slot"):
        second.acquire("b", timeout_s=0.3)
    done: list[str] = []

    def waiter():
        lease = second.acquire("b", timeout_s=10)
        done.append("second")
        second.release(lease)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.3)  # the second controller waits, keeping the machine's turn
    first.release(held)
    again = first.acquire("b", timeout_s=10)  # asks again at once, after its boot
    done.append("first")
    first.release(again)
    thread.join(10)
    assert done == ["second", "first"]


def test_an_unpinned_slot_of_this_machine_leases_all_its_cpus_and_a_remote_one_its_slot():
    from orchestrator.hosts.cpulocks import units

    lab = parse_lab({"hosts": [{"name": "here"}, {"name": "far", "ssh": "root@far", "key": "/k"}]})
    here, far = lab.hosts
    assert units(here, here.slots[0]) == [f"cpu{c}" for c in range(os.cpu_count() or 1)]
    assert units(far, far.slots[0]) == ["slot0"]


def test_a_build_waits_for_a_guest_on_its_cpus_and_a_guest_for_a_build(tmp_path):
    from orchestrator.hosts.buildcpus import BuildCpus
    from orchestrator.hosts.cpulocks import CpuLocks

    lab = parse_lab({"hosts": [{"name": "here"}]})
    guests, builds = locked_pool(tmp_path, lab), BuildCpus(lab, CpuLocks(tmp_path))
    builds.locks.poll_s = 0.05
    lease = guests.acquire()
    waited: list[bool] = []
    released = threading.Timer(0.5, lambda: guests.release(lease))
    released.start()
    started = time.monotonic()
    with builds.hold(lambda: waited.append(True)) as cpus:
        assert time.monotonic() - started >= 0.4 and waited == [True]
        assert cpus == tuple(range(os.cpu_count() or 1))
        with pytest.raises(InfraError, match="no free slot"):
            guests.acquire(timeout_s=0.3)
    assert guests.acquire(timeout_s=0.3).host.name == "here"


def test_a_build_on_the_labs_build_cpus_never_waits_for_a_guest_of_the_labs_slots(tmp_path):
    from orchestrator.hosts.buildcpus import BuildCpus
    from orchestrator.hosts.cpulocks import CpuLocks
    from orchestrator.hosts.labfile import Host, Lab, Slot

    lab = Lab((Host("here", "qemu:///system", (Slot(0, (0,)),)),), build_cpus=(1,))
    guests, builds = locked_pool(tmp_path, lab), BuildCpus(lab, CpuLocks(tmp_path))
    guests.acquire()
    with builds.hold(lambda: pytest.fail("the build waited")) as cpus:
        assert cpus == (1,)
