"""`vmbisect doctor`: probe each part of the host for real and say what is missing."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from orchestrator import paths
from orchestrator.backends import host
from orchestrator.backends.factory import GuestLauncher
from orchestrator.errors import VmbisectError
from orchestrator.vm.spec import DiskSpec, VmSpec

MIN_FREE_GIB = 20.0


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
