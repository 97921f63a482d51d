"""Wires the real parts together: libvirt provider, guest image builder, accelerator choice.

This is the only place that decides which adapters a user gets; tests build their own.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from orchestrator import paths
from orchestrator.accel import AccelChoice, choose_accel
from orchestrator.backends import host
from orchestrator.backends.libvirt_vm import DEFAULT_URI, Guest, LibvirtProvider
from orchestrator.errors import BootFailed, InfraError, UserError, choices_error
from orchestrator.image import DEFAULT_MODULES
from orchestrator.image.builder import GuestImageBuilder
from orchestrator.vm.spec import ACCELS, VmSpec

ACCEL_CHOICES = ("auto",) + ACCELS
PROBE_TIMEOUT_S = 25.0


@dataclass
class GuestLauncher:
    provider: LibvirtProvider
    images: GuestImageBuilder

    def initrd_for(self, modules_release: str | None) -> Path:
        if modules_release is None:
            return self.images.build().path
        if not (Path("/lib/modules") / modules_release).is_dir():
            raise UserError(f"initrd-modules-from: no /lib/modules/{modules_release} on this host")
        return self.images.build(kernel_release=modules_release, modules=DEFAULT_MODULES).path

    @contextmanager
    def boot(
        self,
        spec: VmSpec,
        kernel: Path,
        accel: str,
        modules_release: str | None = None,
        append: str = "",
        timeout_s: float = 60.0,
    ) -> Iterator[Guest]:
        initrd = self.initrd_for(modules_release)
        with self.provider.boot(spec, kernel, initrd, accel=accel, append=append, timeout_s=timeout_s) as guest:
            yield guest

    def probe_kvm(self) -> tuple[bool, str]:
        """Boot the newest distribution kernel under KVM; True when its agent answers."""
        kernel = host.find_distro_kernel()
        if kernel is None:
            return False, "no distribution kernel in /boot to probe with (run: make setup)"
        try:
            with self.boot(VmSpec(vcpus=1, memory_mib=512), kernel.image, "kvm", kernel.release,
                           timeout_s=PROBE_TIMEOUT_S):
                return True, ""
        except BootFailed as exc:
            return False, str(exc)
        except InfraError as exc:
            return False, str(exc)

    def choose_accel(self, wanted: str, reprobe: bool = False) -> AccelChoice:
        if wanted not in ACCEL_CHOICES:
            raise choices_error("accel", wanted, ACCEL_CHOICES)
        if wanted != "auto":
            return AccelChoice(wanted, "asked for", probed=False)
        return choose_accel(self.probe_kvm, host.qemu_version() or "unknown",
                            paths.cache_dir() / "accel.json", reprobe=reprobe)


def real_launcher(uri: str = DEFAULT_URI) -> GuestLauncher:
    agent = paths.agent_binary()
    if not agent.is_file():
        raise InfraError(f"guest agent not built at {agent} (run: make agent)")
    return GuestLauncher(LibvirtProvider(uri), GuestImageBuilder(paths.cache_dir() / "images", agent))
