"""Real-guest fixtures: the user's launcher (libvirt, image builder, distribution kernel)."""

from __future__ import annotations

import os

import pytest

from orchestrator import paths
from orchestrator.backends import host
from orchestrator.backends.factory import GuestLauncher
from orchestrator.backends.libvirt_vm import LibvirtProvider, owner_pid
from orchestrator.image.initramfs import GuestImageBuilder
from tests.conftest import require


@pytest.fixture(scope="session")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> GuestLauncher:
    require(paths.agent_binary().is_file(), f"guest agent not built at {paths.agent_binary()}")
    require(host.find_distro_kernel() is not None, "no distribution kernel with modules in /boot")
    try:
        import libvirt

        libvirt.registerErrorHandler(lambda _c, _e: None, None)
        libvirt.open("qemu:///system").close()
        reachable = True
    except Exception:
        reachable = False
    require(reachable, "libvirt qemu:///system not reachable")
    state = tmp_path_factory.mktemp("vmstate")
    provider = LibvirtProvider(run_root=state / "run", log_root=state / "console")
    return GuestLauncher(provider, GuestImageBuilder(paths.cache_dir() / "images", paths.agent_binary()))


@pytest.fixture(scope="session")
def distro() -> host.DistroKernel:
    kernel = host.find_distro_kernel()
    assert kernel is not None
    return kernel


def our_domains(launcher: GuestLauncher, pid: int | None = None) -> list[str]:
    """Domains owned by this test process (or by `pid`); other vmbisect runs may share the host."""
    owner = pid or os.getpid()
    return [d.name() for d in launcher.provider.conn.listAllDomains() if owner_pid(d.name()) == owner]
