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
