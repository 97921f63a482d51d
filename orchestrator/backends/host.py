"""Facts about the host read from real tools: QEMU version, distribution kernels."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

QEMU = "qemu-system-x86_64"


def qemu_version() -> str | None:
    exe = shutil.which(QEMU)
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    return parse_qemu_version(out)


def parse_qemu_version(text: str) -> str | None:
    m = re.search(r"QEMU emulator version (\S+)", text)
    return m.group(1) if m else None


@dataclass(frozen=True)
class DistroKernel:
    release: str
    image: Path
    modules: Path


def distro_kernels(boot: Path = Path("/boot"), lib_modules: Path = Path("/lib/modules")) -> list[DistroKernel]:
    """Installed kernels with their modules, newest release last."""
    found = []
    for image in boot.glob("vmlinuz-*"):
        release = image.name[len("vmlinuz-"):]
        if (lib_modules / release / "modules.dep").is_file():
            found.append(DistroKernel(release, image, lib_modules / release))
    return sorted(found, key=lambda k: _release_key(k.release))


def _release_key(release: str) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in re.split(r"[.-]", release)]


def find_distro_kernel(release: str | None = None) -> DistroKernel | None:
    kernels = distro_kernels()
    if release is not None:
        return next((k for k in kernels if k.release == release), None)
    return kernels[-1] if kernels else None


def cpuinfo_model(text: str) -> str:
    """/proc/cpuinfo's first `model name` ("" when it has none)."""
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return " ".join(m.group(1).split()) if m else ""


def capabilities_cpu(xml: str) -> str:
    """The host CPU of libvirt's capabilities XML: vendor, libvirt's model and the CPUID
    family/model ("" when the XML names none)."""
    import xml.etree.ElementTree as ET

    try:
        cpu = ET.fromstring(xml).find("host/cpu")
    except ET.ParseError:
        return ""
    if cpu is None:
        return ""
    sig = cpu.find("signature")
    words = [cpu.findtext("vendor", ""), cpu.findtext("model", "")]
    if sig is not None:
        words.append(f"(family {sig.get('family')} model {sig.get('model')} stepping {sig.get('stepping')})")
    return " ".join(w for w in words if w)


def host_cpu(domain: object) -> str:
    """The CPU model of the host a libvirt domain runs on: /proc/cpuinfo when its connection is
    this machine's, libvirt's capabilities for a lab host over SSH; "" when neither says."""
    try:
        conn = domain.connect()  # type: ignore[attr-defined]
        here = str(conn.getURI()).partition("://")[2].startswith("/")  # qemu:///system: no host part
        return (cpuinfo_model(Path("/proc/cpuinfo").read_text()) if here else "") or capabilities_cpu(
            conn.getCapabilities())
    except Exception:  # noqa: BLE001 - the model is a fact for the report; a host that cannot say leaves it out
        return ""
