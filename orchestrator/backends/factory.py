"""Wires the real parts of one host together: libvirt provider, guest image builder,
accelerator choice. A lab host's launcher is made by orchestrator/hosts/launchers.py, which
hands in its SSH connection and how its accelerator is chosen; tests build their own.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol

from orchestrator import paths
from orchestrator.accel import AccelChoice, choose_accel
from orchestrator.backends import host
from orchestrator.backends.libvirt_vm import DEFAULT_URI, Guest, LibvirtProvider
from orchestrator.errors import BootFailed, InfraError, UserError, choices_error
from orchestrator.image import DEFAULT_MODULES, modfiles
from orchestrator.image.initramfs import GuestImageBuilder
from orchestrator.vm.spec import ACCELS, VmSpec

ACCEL_CHOICES = ("auto",) + ACCELS
PROBE_TIMEOUT_S = 25.0


class Connection(Protocol):
    def close(self) -> None: ...


# How a lab host reached over SSH chooses its accelerator: (probe, reprobe) -> the choice.
RemoteAccel = Callable[[Callable[[], tuple[bool, str]], bool], AccelChoice]


@dataclass
class GuestLauncher:
    """Boots guests on one host. For a lab host reached over SSH, `ssh` is its connection
    (closed with the launcher) and `remote_accel` chooses the accelerator there; the guest image
    (built here) is pushed there by the provider."""

    provider: LibvirtProvider
    images: GuestImageBuilder
    ssh: Connection | None = None
    remote_accel: RemoteAccel | None = None

    def initrd_for(self, modules_release: str | None, modules_root: Path | None = None) -> Path:
        if modules_release is None:
            return self.images.build().path
        images = self.images
        if modules_root is not None and modules_root != images.modules_root:
            images = GuestImageBuilder(images.cache_root, images.agent, tools=images.tools,
                                       optional=images.optional, modules_root=modules_root,
                                       compression=images.compression)
        if not (images.modules_root / modules_release).is_dir():
            raise UserError(f"initrd-modules-from: no {images.modules_root / modules_release} on this machine")
        wanted = DEFAULT_MODULES
        if modules_root is not None:  # a kernel vmbisect built: the drivers its recipe made modules
            index = modfiles.load_index(images.modules_root, modules_release)
            wanted = tuple(m for m in DEFAULT_MODULES if index.offers(m))
        return images.build(kernel_release=modules_release, modules=wanted).path

    def close(self) -> None:
        self.provider.close()
        if self.ssh is not None:
            self.ssh.close()

    @contextmanager
    def boot(
        self,
        spec: VmSpec,
        kernel: Path,
        accel: str,
        modules_release: str | None = None,
        append: str = "",
        timeout_s: float = 60.0,
        modules_root: Path | None = None,
    ) -> Iterator[Guest]:
        initrd = self.initrd_for(modules_release, modules_root)
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
        if self.remote_accel is not None:
            return self.remote_accel(self.probe_kvm, reprobe)
        return choose_accel(self.probe_kvm, host.qemu_version() or "unknown",
                            paths.cache_dir() / "accel.json", reprobe=reprobe)


def guest_images() -> GuestImageBuilder:
    agent = paths.agent_binary()
    if not agent.is_file():
        raise InfraError(f"guest agent not built at {agent} (run: make agent)")
    return GuestImageBuilder(paths.cache_dir() / "images", agent)


def real_launcher(uri: str = DEFAULT_URI) -> GuestLauncher:
    return GuestLauncher(LibvirtProvider(uri), guest_images())
