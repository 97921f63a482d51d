"""The real thing: linux-source-6.1 (as a git repository) built with the guest base recipe,
built again from a wiped build directory to the same bytes, and booted under the VM runner.

Builds use vmbisect's ccache (~/.cache/vmbisect/ccache) and a stable work directory, so a
rerun is a warm rebuild; a cold run compiles the kernel once (about 10 minutes on 2 cores).
The "user's repository" is the test's own full copy of the linux-source repository: other
users of that repository (the demo) clone it with --shared, and git refreshes the mtime of
shared objects they write again, which would make a byte-for-byte check of it flaky.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import paths
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.kernelstore import KernelStore
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kbuild.source import DEBIAN_TARBALL, ensure_linux_source_repo
from orchestrator.vm.spec import DiskSpec, VmSpec
from tests.conftest import require
from tests.integration.treesnap import snapshot

pytestmark = [pytest.mark.slow, pytest.mark.vm]


@pytest.mark.long  # two builds of the tree (3.5 min after the demo's): the demo e2e builds and boots in make test
def test_linux_6_1_guest_base_builds_reproducibly_leaves_the_repo_alone_and_boots(launcher, tmp_path):
    require(DEBIAN_TARBALL.is_file(), f"{DEBIAN_TARBALL} missing (make setup installs linux-source-6.1)")
    source = ensure_linux_source_repo()
    work_root = paths.cache_dir() / "test-kbuild"
    user_repo = work_root / "user-linux.git"
    if not user_repo.is_dir():
        partial = work_root / "user-linux.git.partial"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["git", "clone", "--quiet", "--bare", "--no-hardlinks", str(source.path), str(partial)],
                       check=True)
        partial.rename(user_repo)
    before = snapshot(user_repo)
    recipe = parse_recipe(["guest-base"])
    builder = KernelBuilder(KernelStore(tmp_path / "store1"), work_root, paths.cache_dir() / "ccache")
    image = builder.build(user_repo, source.commit, recipe)
    assert not image.from_cache and image.release and image.release.startswith("6.1.")

    build_dir = next((work_root).glob(f"*/build/{recipe.digest()[:16]}"))
    shutil.rmtree(build_dir)
    again = KernelBuilder(KernelStore(tmp_path / "store2"), work_root, paths.cache_dir() / "ccache")
    rebuilt = again.build(user_repo, source.commit, recipe)
    assert not rebuilt.from_cache and rebuilt.sha256 == image.sha256
    assert snapshot(user_repo) == before

    with launcher.boot(VmSpec(vcpus=2, memory_mib=512), image.path, "tcg", modules_release=None,
                       timeout_s=120) as guest:
        result = guest.exec(["uname", "-r"])
    assert result.exit_code == 0 and result.stdout.decode().strip() == image.release
    assert Path(image.manifest["build_log"]).is_file()


@pytest.mark.long
def test_a_driver_the_recipe_builds_as_a_module_reaches_the_guest_and_drives_its_disks(launcher, tmp_path):
    """The recipe makes the LSI MegaRAID SAS driver a module (CONFIG_MEGARAID_SAS=m): the
    kernel's own modules go into the guest image with it (orchestrator/measure/kernels.py), the guest
    loads megaraid_sas and sees the disks behind the lsisas1078 controller. A recipe that
    changes kernel config recompiles most of the kernel: about 10 minutes on 2 cores, so this
    runs in `make test-long`."""
    from orchestrator.measure.kernels import Kernels

    require(DEBIAN_TARBALL.is_file(), f"{DEBIAN_TARBALL} missing (make setup installs linux-source-6.1)")
    source = ensure_linux_source_repo()
    recipe = parse_recipe(["guest-base", "CONFIG_MODULES=y", "CONFIG_MEGARAID_SAS=m"])
    builder = KernelBuilder(KernelStore(), paths.cache_dir() / "test-kbuild", paths.cache_dir() / "ccache")
    kernel = Kernels(builder, source.path, recipe).build(source.commit).kernel
    assert kernel.release and kernel.modules_dir is not None
    assert list((kernel.modules_dir / kernel.release).rglob("megaraid_sas.ko*")), "the driver was not built as a module"
    spec = VmSpec(vcpus=2, memory_mib=512, disks=DiskSpec(count=2, size_mib=64, controller="lsisas1078"))
    with launcher.boot(spec, kernel.image, "tcg", kernel.release, timeout_s=180,
                       modules_root=kernel.modules_dir) as guest:
        modules = guest.exec(["cat", "/proc/modules"]).stdout.decode()
        disks = guest.exec(["ls", "/sys/block"]).stdout.decode().split()
    assert any(line.startswith("megaraid_sas ") for line in modules.splitlines()), modules
    assert [d for d in disks if d.startswith("sd")] == ["sda", "sdb"], disks
