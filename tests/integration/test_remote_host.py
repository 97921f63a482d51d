"""Guests on a second host over SSH: sshd on 127.0.0.1 (tests/integration/sshhost.py), libvirt's
remote driver over qemu+libssh, kernel and guest image pushed content-addressed, the agent
through libvirt's channel stream. A measure run, the host cut mid-run, orphans of a killed
controller swept at the next start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import libvirt
import pytest

from orchestrator.backends.libvirt_vm import owner_pid
from orchestrator.cli import main
from orchestrator.errors import HostFailed
from orchestrator.hosts.launchers import host_launcher
from orchestrator.hosts.pool import GuestPool
from orchestrator.hosts.push import file_sha256
from orchestrator.ports import KernelArtifact
from orchestrator.vm.spec import VmSpec

pytestmark = pytest.mark.vm


def local_domains(pid: int) -> list[str]:
    """Domains of controller `pid` on this machine's libvirtd (which the SSH host's libvirt is)."""
    conn = libvirt.open("qemu:///system")
    try:
        return [d.name() for d in conn.listAllDomains() if owner_pid(d.name()) == pid]
    finally:
        conn.close()


def wait_until(check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.fixture
def lab_file(live_ssh_server, tmp_path):
    import yaml

    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump({"hosts": [live_ssh_server.lab_dict(slots=[{"cpus": "0-1"}])]}))
    return path


def test_measure_runs_on_the_ssh_host_with_pushed_files_and_host_cpu_per_vcpu(
        launcher, distro, live_ssh_server, lab_file, capsys):
    argv = ["measure", "--lab", str(lab_file), "--host", "sshhost", "--kernel", str(distro.image),
            "--initrd-modules-from", distro.release, "--accel", "tcg", "--reps", "2", "--json",
            "--workload", "fio", "--disks", "1", "--disk-size", "64", "--param", "runtime=2"]
    assert main(argv) == 0, capsys.readouterr().err
    doc = json.loads(capsys.readouterr().out)
    assert doc["boots"][0]["host"] == "sshhost" and doc["boots"][0]["hello"]["kernel_release"] == distro.release
    for sample in doc["samples"]:
        m = {k: v["value"] for k, v in sample["metrics"].items()}
        assert m["read_iops"] > 0 and m["host_cpus_used"] > 0
        assert "host_vcpu_used.0" in m and "host_vcpu_used.1" in m
    work = live_ssh_server.directory / "work"
    images = sorted(p.name for p in (work / "images").iterdir())
    assert f"{file_sha256(distro.image)}.kernel" in images and len(images) == 2  # kernel + guest image, no .part
    assert list((work / "run").iterdir()) == []  # the run's console, socket and disk removed from the host
    assert local_domains(os.getpid()) == []


def test_host_cut_mid_run_is_host_failed_naming_the_host_and_leaves_no_guest(
        launcher, distro, live_ssh_server, tmp_path):
    pool = GuestPool(live_ssh_server.lab(slots=[{"cpus": "0-1"}]),
                     lambda h: host_launcher(h, log_root=tmp_path / "console"))
    kernel = KernelArtifact(distro.image, file_sha256(distro.image), distro.release)
    started = None
    with pytest.raises(HostFailed) as err:
        with pool.guest(VmSpec(vcpus=2), kernel, accel="tcg") as guest:
            pinned = [list(cpus) for cpus in guest.domain.vcpus()[1]]
            threading.Timer(2.0, live_ssh_server.cut).start()
            started = time.monotonic()
            guest.exec(["sleep", "120"], timeout_s=150)
    assert err.value.host == "sshhost" and str(err.value).startswith("host sshhost: ")
    assert time.monotonic() - started < 40  # noticed long before the command's own timeout
    assert pinned[0][:2] == [True, False] and pinned[1][:2] == [False, True]  # vCPU i on slot CPU i
    status = pool.status()[0]
    assert not status.up and status.busy == 0 and status.reason
    assert wait_until(lambda: local_domains(os.getpid()) == [], 30)  # autodestroy took the guest


CONTROLLER = """
import sys, time
from pathlib import Path
from orchestrator.hosts.launchers import host_launcher
from orchestrator.hosts.labfile import load_lab
from orchestrator.hosts.pool import GuestPool
from orchestrator.ports import KernelArtifact
from orchestrator.vm.spec import VmSpec, DiskSpec
pool = GuestPool(load_lab(Path(sys.argv[1])), host_launcher)
kernel = KernelArtifact(Path(sys.argv[2]), "unused", sys.argv[3])
with pool.guest(VmSpec(disks=DiskSpec(count=1, size_mib=16)), kernel, accel="tcg") as guest:
    print(guest.name, flush=True)
    time.sleep(600)
"""


def test_files_a_killed_controller_left_on_the_host_are_removed_at_the_next_start(
        launcher, distro, live_ssh_server, lab_file, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(lab_file), str(distro.image), distro.release],
                            stdout=subprocess.PIPE, text=True, env={**os.environ})
    name = proc.stdout.readline().strip()
    assert name.startswith("vmbisect-"), "the controller did not boot its guest"
    run_dir = live_ssh_server.directory / "work" / "run" / name
    assert (run_dir / "console.log").exists() and any(run_dir.glob("*-disk0.raw"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert wait_until(lambda: local_domains(proc.pid) == [], 30)  # libvirtd's autodestroy
    assert run_dir.exists()  # ... but the files stay until someone sweeps them
    fresh = host_launcher(live_ssh_server.host(), log_root=tmp_path / "console")
    try:
        removed = fresh.provider.cleanup_leftovers()
    finally:
        fresh.close()
    assert f"sshhost:{run_dir}" in removed and not run_dir.exists()


def test_compare_on_the_ssh_host_keeps_every_run_there_and_says_so(launcher, distro, live_ssh_server, lab_file,
                                                                   tmp_path, capsys):
    from orchestrator.store import Store

    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    argv = ["compare", "--lab", str(lab_file), "--kernel", str(distro.image), "--initrd-modules-from",
            distro.release, "--accel", "tcg", "--disks", "1", "--disk-size", "64", "--workload", "fio",
            "--param", "runtime=2", "--param", "ramp_time=0", "--variant", "none=sched:none",
            "--variant", "dl=sched:mq-deadline", "--reps", "2", "--boots", "1", "--store", store]
    assert main(argv) == 0, capsys.readouterr().err
    runs = list(Store(store).runs(1))
    assert [r.raw["variant"] for r in runs] == ["none", "dl", "dl", "none"]
    assert {r.raw["result"]["lab_host"] for r in runs} == {"sshhost"} and Store(store).campaign(1).kind == "compare"
    assert all(r.raw["result"]["metrics"]["read_iops"]["value"] > 0 for r in runs)
    loads = [b.facts["load"] for b in Store(store).boots(1)]  # read over SSH for the whole boot
    assert loads and all(load["qemu_s"] > 0 and load["seconds"] > 0 for load in loads)
    assert main(["report", "1", "--format", "md", "--store", store]) == 0
    assert "measured on lab host sshhost" in capsys.readouterr().out
    assert local_domains(os.getpid()) == []


@pytest.mark.long  # a minute of guests; make test cuts a host mid-run in test_host_cut_mid_run_is_host_failed_*
def test_compare_whose_ssh_host_is_cut_mid_run_finishes_on_the_other_host(launcher, distro, live_ssh_server,
                                                                          tmp_path, capsys):
    import yaml

    from orchestrator.store import Store

    lab = tmp_path / "two.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [live_ssh_server.lab_dict(slots=[{"cpus": "0-1"}]),
                                             {"name": "local", "slots": [{"cpus": "0-1"}]}]}))
    db = tmp_path / "db.sqlite"
    store = f"sqlite:///{db}"
    cutter = live_ssh_server.cut_after_runs(db, 1, timeout_s=600)
    argv = ["compare", "--lab", str(lab), "--kernel", str(distro.image), "--initrd-modules-from", distro.release,
            "--accel", "tcg", "--disks", "1", "--disk-size", "64", "--workload", "fio", "--param", "runtime=2",
            "--param", "ramp_time=0", "--variant", "none=sched:none", "--variant", "dl=sched:mq-deadline",
            "--reps", "3", "--boots", "1", "--store", store]
    assert main(argv) == 0, capsys.readouterr().err
    cutter.join(5)
    out = capsys.readouterr()
    hosts = [r.raw["result"]["lab_host"] for r in Store(store).runs(1)]
    cut_at = hosts.index("local")
    assert cut_at >= 1 and set(hosts[:cut_at]) == {"sshhost"} and hosts[cut_at:] == ["local"] * 6
    assert "starts over on another host" in out.err
    assert main(["report", "1", "--format", "md", "--store", store]) == 0
    assert f"{cut_at} run(s) measured on host sshhost before it failed are kept but not compared" in (
        capsys.readouterr().out)
    assert wait_until(lambda: local_domains(os.getpid()) == [], 30)
