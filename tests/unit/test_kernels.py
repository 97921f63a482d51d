"""The one kernel source's artifacts: a built kernel brings its own modules into the guest, a
file or stored kernel the host release the caller names."""

import hashlib
from pathlib import Path

import pytest

from orchestrator.errors import UserError
from orchestrator.kbuild.kernelstore import KernelImage
from orchestrator.measure.kernels import Kernels, artifact


def image(modules_dir: Path | None, release: str | None = "6.1.0-vmbisect") -> KernelImage:
    return KernelImage("k" * 64, Path("/store/k/bzImage"), "ab" * 32, 1, release, modules_dir, {}, True, 0.0)


def test_a_built_kernel_with_modules_brings_its_release_and_modules_tree():
    a = artifact(image(Path("/store/k/modules/lib/modules/6.1.0-vmbisect")), "commit c1", "c1", modules="6.1.0-host")
    assert (a.release, a.modules_dir, a.commit) == ("6.1.0-vmbisect", Path("/store/k/modules/lib/modules"), "c1")


def test_a_built_kernel_without_modules_takes_the_release_the_caller_names():
    a = artifact(image(None), "commit c1", "c1", modules="6.1.0-host")
    assert (a.release, a.modules_dir, a.image, a.sha256) == ("6.1.0-host", None, Path("/store/k/bzImage"), "ab" * 32)
    assert artifact(image(None), "commit c1", "c1").release is None


def test_a_kernel_file_is_addressed_by_its_content(tmp_path):
    path = tmp_path / "bzImage"
    path.write_bytes(b"kernel")
    a = Kernels().file(path, "6.1.0-host")
    assert a.sha256 == hashlib.sha256(b"kernel").hexdigest()
    assert a.release == "6.1.0-host" and a.description == f"kernel {path}"
    with pytest.raises(UserError, match="kernel: .* is not a file"):
        Kernels().file(tmp_path / "none")
