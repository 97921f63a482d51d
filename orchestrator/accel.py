"""Choosing the accelerator: KVM only where a real probe boot answered, TCG otherwise.

/dev/kvm existing is not enough: on some hosts (PVM-flavoured KVM) an ordinary guest hangs.
A probe's verdict is cached per (host kernel, QEMU version) so later boots do not pay for it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

KVM_DEVICE = Path("/dev/kvm")


@dataclass(frozen=True)
class AccelChoice:
    accel: str
    reason: str
    probed: bool


def cache_key(qemu_version: str) -> str:
    return f"{os.uname().release}|{qemu_version}"


def choose_accel(
    probe_kvm: Callable[[], tuple[bool, str]],
    qemu_version: str,
    cache_file: Path,
    kvm_device: Path = KVM_DEVICE,
    reprobe: bool = False,
) -> AccelChoice:
    """`probe_kvm` boots a guest under KVM and says whether its agent answered, and why not."""
    if not kvm_device.exists():
        return AccelChoice("tcg", f"{kvm_device} does not exist", probed=False)
    if not os.access(kvm_device, os.R_OK | os.W_OK):
        return AccelChoice("tcg", f"{kvm_device} is not readable and writable by this user", probed=False)
    key = cache_key(qemu_version)
    cached = _load(cache_file)
    if key in cached and not reprobe:
        return AccelChoice(str(cached[key]["accel"]), str(cached[key]["reason"]), probed=False)
    ok, detail = probe_kvm()
    detail = one_line(detail)
    choice = AccelChoice(
        "kvm" if ok else "tcg",
        "a probe guest booted under KVM" if ok else f"{kvm_device} exists but a probe guest under KVM failed: {detail}",
        probed=True,
    )
    cached[key] = {"accel": choice.accel, "reason": choice.reason}
    _save(cache_file, cached)
    return choice


def one_line(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _load(path: Path) -> dict[str, dict[str, str]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _save(path: Path, data: dict[str, dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{time.monotonic_ns()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)

