"""`vmbisect doctor`: probe each part of the host for real and say what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from orchestrator import paths
from orchestrator.backends import host
from orchestrator.backends.factory import GuestLauncher
from orchestrator.errors import VmbisectError
from orchestrator.hosts.labfile import Host
from orchestrator.vm.spec import DiskSpec, VmSpec

if TYPE_CHECKING:
    from orchestrator.hosts.ssh import SshHost

MIN_FREE_GIB = 20.0

# Where a tool is on a remote host; the tool name arrives as $1, never as script text.
FIND_TOOL = 'command -v "$1"'


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    essential: bool = True


def check_qemu() -> Check:
    version = host.qemu_version()
    if version is None:
        return Check("QEMU", False, f"{host.QEMU} not found", "make setup")
    return Check("QEMU", True, version)


def check_libvirt(uri: str) -> Check:
    try:
        import libvirt

        libvirt.registerErrorHandler(lambda _c, _e: None, None)
        conn = libvirt.open(uri)
    except Exception as exc:  # libvirt missing or daemon down: both are the same fix
        return Check("libvirt", False, f"{uri}: {exc}", "make setup (starts virtlogd and libvirtd)")
    try:
        return Check("libvirt", True, f"{uri}, libvirt {_dotted(conn.getLibVersion())}")
    finally:
        conn.close()


def _dotted(v: int) -> str:
    return f"{v // 1000000}.{v // 1000 % 1000}.{v % 1000}"


def check_tool(name: str, package: str, essential: bool = True) -> Check:
    exe = shutil.which(name)
    return Check(name, exe is not None, exe or "not found", f"apt-get install {package} (or make setup)", essential)


def check_agent() -> Check:
    agent = paths.agent_binary()
    if not agent.is_file():
        return Check("guest agent", False, f"{agent} missing", "make agent")
    out = subprocess.run([str(agent), "-version"], capture_output=True, text=True, check=False)
    return Check("guest agent", out.returncode == 0, f"{agent} {out.stdout.strip()}", "make agent")


def check_distro_kernel() -> Check:
    k = host.find_distro_kernel()
    if k is None:
        return Check("distribution kernel", False, "none in /boot with modules", "apt-get install linux-image-amd64")
    return Check("distribution kernel", True, f"{k.release} ({k.image})")


def check_free_disk(where: Path) -> Check:
    probe = where
    while not probe.exists():
        probe = probe.parent
    free_gib = shutil.disk_usage(probe).free / 2**30
    return Check("free disk", free_gib >= MIN_FREE_GIB, f"{free_gib:.1f} GiB free at {probe}",
                 f"free space: kernel builds need about {MIN_FREE_GIB:g} GiB", essential=False)


def check_ccache() -> Check:
    return check_tool("ccache", "ccache", essential=False)


def boot_check(launcher: GuestLauncher, accel: str) -> Check:
    """Boot the distribution kernel with its modules and the agent, as a bisection step would."""
    kernel = host.find_distro_kernel()
    if kernel is None:
        return Check("guest boot", False, "no distribution kernel", "apt-get install linux-image-amd64")
    try:
        with launcher.boot(VmSpec(vcpus=2, disks=DiskSpec(count=1, size_mib=64)), kernel.image, accel,
                           kernel.release, timeout_s=180) as guest:
            disks = len(guest.hello["block_devices"])
            return Check("guest boot", True, f"{kernel.release} under {accel}: agent hello after "
                         f"{guest.boot_seconds:.1f} s, {disks} disk(s) seen")
    except VmbisectError as exc:
        return Check("guest boot", False, f"{kernel.release} under {accel}: {exc}", "vmbisect boot --console ...")


def run_checks(uri: str, guest_checks: Callable[[], list[Check]]) -> list[Check]:
    checks = [
        check_qemu(),
        check_libvirt(uri),
        check_agent(),
        check_distro_kernel(),
        check_tool("fio", "fio"),
        check_tool("dbench", "dbench"),
        check_tool("netperf", "netperf (Debian non-free)"),
        check_tool("netserver", "netperf (Debian non-free)"),
        check_tool("busybox", "busybox-static"),
        check_ccache(),
        check_free_disk(paths.data_dir()),
    ]
    if all(c.ok for c in checks[:4]):
        checks.extend(guest_checks())
    else:
        checks.append(Check("accelerator", False, "not probed: QEMU, libvirt, agent or kernel missing", "make setup"))
    return checks


# -- lab hosts reached over SSH (vmbisect doctor --lab FILE) -----------------------------------
REMOTE_TOOLS = (
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("qemu-img", "qemu-utils"),
    ("sha256sum", "coreutils"),
    ("virt-ssh-helper", "libvirt-daemon (libvirt's remote driver runs it)"),
)


def remote_checks(host: Host, connect: Callable[[Host], GuestLauncher], reprobe: bool = False) -> list[Check]:
    """Probe a lab host for real: SSH, its CPUs against the slots, tools, free disk, libvirt
    over the lab's URI, the accelerator and a probe boot through the pushed files."""
    from orchestrator.hosts.ssh import SshHost

    assert host.ssh is not None and host.work_dir is not None
    ssh = SshHost(host.name, host.ssh)
    try:
        try:
            release = ssh.run(["uname", "-r"]).text.strip()
            ncpu = int(ssh.run(["nproc", "--all"]).text.strip() or 0)
        except VmbisectError as exc:
            return [Check("ssh", False, str(exc), "check ssh, key and known_hosts (docs/hosts.md)")]
        checks = [Check("ssh", True, f"{host.ssh}: Linux {release}, {ncpu} CPUs"), _slot_check(host, ncpu)]
        for tool, package in REMOTE_TOOLS:
            found = ssh.run(["sh", "-c", FIND_TOOL, "sh", tool], check=False)
            checks.append(Check(tool, found.exit_code == 0, found.text.strip() or "not found",
                                f"on {host.name}: apt-get install {package}"))
        for label, directory in (("free disk", host.work_dir), ("free disk (disks)", host.disk_dir)):
            if directory is not None:
                checks.append(_remote_free_disk(ssh, label, directory))
    finally:
        ssh.close()
    try:
        launcher = connect(host)
    except VmbisectError as exc:
        return checks + [Check("libvirt", False, str(exc), "on the host: libvirtd running; docs/hosts.md")]
    try:
        version = _dotted(launcher.provider.conn.getLibVersion())
        checks.append(Check("libvirt", True, f"{host.uri.split('?')[0]}, libvirt {version}"))
        try:
            choice = launcher.choose_accel("auto", reprobe=reprobe)
        except VmbisectError as exc:
            return checks + [Check("accelerator", False, str(exc), "docs/hosts.md")]
        checks.append(Check("accelerator", True, f"{choice.accel}: {choice.reason}"))
        checks.append(boot_check(launcher, choice.accel))
    finally:
        launcher.close()
    return checks


def _slot_check(host: Host, ncpu: int) -> Check:
    wanted = sorted({c for s in host.slots for c in s.cpus})
    missing = [c for c in wanted if c >= ncpu]
    detail = f"{len(host.slots)} slot(s), pinned to host CPUs {','.join(map(str, wanted)) or '(none)'}"
    if missing:
        return Check("slots", False, f"{detail}; CPUs {','.join(map(str, missing))} do not exist (host has {ncpu})",
                     "lab file: slots[].cpus within the host's CPUs")
    return Check("slots", True, detail)


def _remote_free_disk(ssh: "SshHost", label: str, directory: Path) -> Check:
    ssh.run(["mkdir", "-p", "--", str(directory)])
    lines = ssh.run(["df", "-Pk", "--", str(directory)]).text.splitlines()
    free_gib = int(lines[-1].split()[3]) / 2**20 if len(lines) > 1 else 0.0
    return Check(label, free_gib >= MIN_FREE_GIB, f"{free_gib:.1f} GiB free at {directory}",
                 f"free space on {ssh.name}: guest images and disks need room", essential=False)
