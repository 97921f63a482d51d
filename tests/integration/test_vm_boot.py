"""Real guests under libvirt (TCG on hosts without a usable KVM): boot, agent, disks, faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from orchestrator.errors import BootFailed
from orchestrator.vm.spec import DiskSpec, VmSpec
from tests.integration.vmhost import our_domains

pytestmark = pytest.mark.vm
BOOT_TIMEOUT = 120.0


def boot(launcher, distro, spec, append="", timeout_s=BOOT_TIMEOUT):
    return launcher.boot(spec, distro.image, "tcg", distro.release, append=append, timeout_s=timeout_s)


def fio_on_every_disk(names: list[str]) -> list[str]:
    argv = ["fio", "--output-format=json", "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=libaio",
            "--iodepth=4", "--runtime=1", "--time_based"]
    for name in names:
        argv += [f"--name={name}", f"--filename=/dev/{name}"]
    return argv


@pytest.mark.parametrize(
    "controller, count, host_driver",
    [("lsisas1078", 8, "megaraid_sas"), ("lsisas1068", 9, "mptsas"), ("virtio-scsi", 16, "virtio_scsi"),
     ("virtio-blk", 4, ""), ("lsilogic", 2, "sym53c8xx")],
)
def test_every_disk_behind_each_controller_is_seen_and_serves_fio(launcher, distro, controller, count, host_driver):
    spec = VmSpec(vcpus=4, disks=DiskSpec(count=count, size_mib=64, controller=controller))
    with boot(launcher, distro, spec) as guest:
        listed = guest.exec(["ls", "/sys/block"]).stdout.decode().split()
        disks = sorted(d["name"] for d in guest.hello["block_devices"] if d["size_bytes"] == 64 << 20)
        drivers = {d["host_driver"] for d in guest.hello["block_devices"] if d["name"] in disks}
        fio = guest.exec(fio_on_every_disk(disks), timeout_s=300)
    prefix = "vd" if controller == "virtio-blk" else "sd"
    assert len([n for n in listed if n.startswith(prefix)]) == count
    assert len(disks) == count and drivers == {host_driver}
    assert guest.hello["cpus_online"] == 4 and guest.hello["kernel_release"] == distro.release
    assert fio.exit_code == 0, fio.stderr.decode()
    jobs = json.loads(fio.stdout)["jobs"]
    assert sorted(j["jobname"] for j in jobs) == disks and all(j["read"]["iops"] > 0 for j in jobs)
    assert our_domains(launcher) == []


def test_panicking_kernel_is_a_boot_failure_with_console_tail(launcher, distro):
    start = time.monotonic()
    with pytest.raises(BootFailed) as failure:
        with boot(launcher, distro, VmSpec(), append="rdinit=/no-such-init"):
            pass
    assert "Kernel panic" in str(failure.value) and "Kernel panic" in failure.value.detail
    assert time.monotonic() - start < BOOT_TIMEOUT and our_domains(launcher) == []


@pytest.mark.long
@pytest.mark.timeout(600)
def test_a_guest_silent_for_longer_than_its_agent_channel_holds_still_ends_at_the_boot_timeout(launcher, distro):
    # rdinit=/bin/sh: a shell as PID 1, no agent, the port never opened, so QEMU reads nothing
    # from the channel's socket; greeted twice a second, the socket was full after about 140 s
    # and the controller blocked on its next write for good (a TCG guest hung in its boot did
    # that to a test run). 240 s is past that point; the boot must still end at its timeout.
    start = time.monotonic()
    with pytest.raises(BootFailed, match="no answer from the guest agent within 240 s") as failure:
        with boot(launcher, distro, VmSpec(), append="rdinit=/bin/sh", timeout_s=240):
            pass
    assert "Run /bin/sh as init process" in failure.value.detail
    assert 240 <= time.monotonic() - start < 270 and our_domains(launcher) == []


BOOT_AND_WAIT = """
import sys, time
from pathlib import Path
from orchestrator.backends.factory import real_launcher
from orchestrator.vm.spec import VmSpec
launcher = real_launcher()
with launcher.boot(VmSpec(), Path(sys.argv[1]), "tcg", sys.argv[2], timeout_s=120) as guest:
    print(guest.name, flush=True)
    time.sleep(600)
"""


def test_killed_controller_takes_its_guest_with_it(launcher, distro):
    proc = subprocess.Popen([sys.executable, "-c", BOOT_AND_WAIT, str(distro.image), distro.release],
                            stdout=subprocess.PIPE, text=True, env={**os.environ})
    name = proc.stdout.readline().strip()
    assert name.startswith("vmbisect-") and name in our_domains(launcher, proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while our_domains(launcher, proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert our_domains(launcher, proc.pid) == []


def test_agent_ops_work_over_the_real_virtio_serial_channel(launcher, distro):
    # the timed-out command also brings the guest as it stalled (the agent's `stall`): its
    # process group's sleeping tasks and the kernel log's last records, read from the real guest
    blob = os.urandom(3 << 20)
    with boot(launcher, distro, VmSpec(vcpus=2)) as guest:
        big = guest.exec(["head", "-c", str(8 << 20), "/dev/zero"], timeout_s=300)
        guest.agent.put("/tmp/blob", blob)
        back = guest.agent.get("/tmp/blob")
        snap = guest.agent.snapshot()
        timed = guest.exec(["sh", "-c", "sleep 100 & sleep 100"], timeout_s=2)
        left = guest.exec(["sh", "-c", "ps | grep -c '[s]leep 100'"])
    assert big.exit_code == 0 and big.stdout == bytes(8 << 20)
    assert back == blob
    assert snap["files"]["/proc/stat"].startswith("cpu ") and "/proc/diskstats" in snap["files"]
    assert timed.timed_out and left.stdout.strip() == b"0"
    stall = list(timed.stall)
    assert stall[0].startswith("load average: ") and stall[1].startswith("clocksource: ") and "not read" not in stall[1]
    group = stall.index(next(line for line in stall if line.startswith("tasks of the command's process group ")))
    others = stall.index(next(line for line in stall if line.startswith("other tasks in state D")))
    sleeping = [line for line in stall[group + 1:others] if line.endswith(" sleep")]
    assert len(sleeping) == 2 and all(line.split()[1] == "S" for line in sleeping), stall
    log = stall.index(next(line for line in stall if line.startswith("kernel log, its last ")))
    assert stall[log] != "kernel log, its last 0 records:" and all(line.startswith("  [") for line in stall[log + 1:])


def test_the_guests_crng_is_ready_from_virtio_rng_before_the_agent_serves(launcher, distro):
    # without an entropy source a qemu64 guest readies its CRNG from disk interrupts during the
    # first workload run (docs/architecture.md)
    with boot(launcher, distro, VmSpec()) as guest:
        source = guest.agent.get("/sys/class/misc/hw_random/rng_current").decode().strip()
        console = guest.console()
    assert source.startswith("virtio_rng")
    assert console.index("random: crng init done") < console.index("vmbisect-agent: serving on")


def test_cleanup_removes_domains_whose_controller_died(launcher, distro, tmp_path):
    from pathlib import Path

    from orchestrator.vm.console import kernel_cmdline
    from orchestrator.vm.domain_xml import BootFiles, domain_xml

    gone = subprocess.Popen(["true"])
    gone.wait()
    name = f"vmbisect-{gone.pid}-deadbeef"
    files = BootFiles(name=name, kernel=distro.image, initrd=launcher.initrd_for(None),
                      cmdline=kernel_cmdline("rdinit=/bin/sh"), console_log=tmp_path / "console.log",
                      agent_socket=Path(tmp_path / "agent.sock"), run_as_root=os.geteuid() == 0)
    launcher.provider.conn.createXML(domain_xml(VmSpec(), files), 0)
    assert name in our_domains(launcher, gone.pid)
    removed = launcher.provider.cleanup_leftovers()
    assert name in removed and our_domains(launcher, gone.pid) == []


def test_a_busy_loop_on_the_guests_cpu_is_measured_as_work_outside_its_qemu_for_the_whole_boot(launcher, distro):
    loop = subprocess.Popen(["taskset", "--cpu-list", "0", "sh", "-c", "while :; do :; done"])
    try:
        with boot(launcher, distro, VmSpec(vcpus=1, pinning=("0",))) as guest:
            guest.exec(["sleep", "2"])
        ticks = open(f"/proc/{loop.pid}/stat").read().rpartition(")")[2].split()
    finally:
        loop.kill()
        loop.wait()
    load = guest.load
    looped_s = (int(ticks[11]) + int(ticks[12])) / 100  # the loop's whole life, a little longer than the boot
    assert load is not None and load.cpus == 1 and load.qemu_s > 0
    assert load.outside_s >= 0.5 * min(looped_s, load.seconds), "the loop beside the guest was not seen"
    assert load.taken >= 0.25 and load.niced_s <= load.outside_s
