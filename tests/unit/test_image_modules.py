from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import pytest

from orchestrator.errors import InfraError, UserError
from orchestrator.image.modfiles import decompress, load_index, require_codec
from orchestrator.image.modules import (
    ModuleIndex,
    Resolution,
    module_name,
    parse_modules_dep,
    parse_modules_softdep,
    resolve,
    split_compression,
)

MODULES_ROOT = Path(__file__).resolve().parent.parent / "data" / "image" / "modules"
RELEASE = "6.99.0-test"


@pytest.fixture(scope="module")
def index() -> ModuleIndex:
    return load_index(MODULES_ROOT, RELEASE)


def test_handmade_modules_dep_parses_into_names_paths_and_dependencies(index: ModuleIndex) -> None:
    assert index.files["virtio_blk"] == "kernel/drivers/block/virtio_blk.ko.xz"
    assert index.files["crc32c_intel"] == "kernel/arch/x86/crypto/crc32c-intel.ko"
    assert index.deps["ext4"] == ("crc16", "mbcache", "jbd2")
    assert index.deps["virtio"] == ()
    assert index.builtin == frozenset({"virtio_pci", "sd_mod"})


def test_golden_load_order_puts_hard_and_soft_dependencies_first(index: ModuleIndex) -> None:
    resolution = resolve(["virtio-blk", "ext4", "xfs", "sd_mod"], index, RELEASE)
    assert resolution.order == (
        "crc16",
        "crc32c_generic",
        "crc32c_intel",
        "jbd2",
        "libcrc32c",
        "mbcache",
        "ext4",
        "virtio",
        "virtio_ring",
        "virtio_blk",
        "xfs",
    )
    assert resolution.builtin == ("sd_mod",)


def test_post_soft_dependency_is_loaded_after_the_module(index: ModuleIndex) -> None:
    assert resolve(["ipmi_msghandler"], index, RELEASE).order == ("ipmi_msghandler", "ipmi_devintf")


def test_wanted_builtin_module_is_absent_without_error(index: ModuleIndex) -> None:
    assert resolve(["virtio_pci"], index, RELEASE) == Resolution(order=(), builtin=("virtio_pci",))


def test_unknown_module_is_a_user_error_naming_module_and_release(index: ModuleIndex) -> None:
    with pytest.raises(UserError, match="kernel module nosuch_mod is neither .* 6.99.0-test"):
        resolve(["nosuch_mod"], index, RELEASE)


def test_soft_dependency_names_resolve_through_exact_and_wildcard_aliases(index: ModuleIndex) -> None:
    assert index.lookup("crypto-crc32c") == ("crc32c_generic", "crc32c_intel")
    assert index.lookup("pci:v00001AF4d00001001sv00001AF4sd00000002bc01sc00i00") == ("virtio_blk",)
    assert index.lookup("sd-mod") == ()
    assert index.lookup("no-such-alias") == ()


def test_softdep_words_before_pre_or_post_are_ignored_like_kmod_does() -> None:
    softdeps = parse_modules_softdep("softdep cifs gcm\nsoftdep a pre: b c post: d\n")
    assert "cifs" not in softdeps
    assert (softdeps["a"].pre, softdeps["a"].post) == (("b", "c"), ("d",))


def test_dependency_cycle_is_an_infra_error_naming_the_modules() -> None:
    files, deps = parse_modules_dep("a.ko: b.ko\nb.ko: a.ko\nc.ko:\n")
    with pytest.raises(InfraError, match="cycle among: a, b"):
        resolve(["a", "c"], ModuleIndex(files, deps), "r")


def test_malformed_modules_dep_line_is_reported_with_its_number() -> None:
    with pytest.raises(InfraError, match="modules.dep line 2"):
        parse_modules_dep("a.ko:\nb.ko\n")


def test_dependency_without_its_own_entry_is_reported() -> None:
    with pytest.raises(InfraError, match="a.ko depends on gone.ko, which has no entry"):
        parse_modules_dep("a.ko: gone.ko\n")


def test_module_names_and_paths_drop_compression_suffixes() -> None:
    assert module_name("kernel/arch/x86/crypto/crc32c-intel.ko.zst") == "crc32c_intel"
    assert split_compression("kernel/fs/xfs/xfs.ko.xz") == ("kernel/fs/xfs/xfs.ko", "xz")
    assert split_compression("kernel/fs/xfs/xfs.ko.gz") == ("kernel/fs/xfs/xfs.ko", "gz")
    assert split_compression("kernel/fs/xfs/xfs.ko") == ("kernel/fs/xfs/xfs.ko", "")


def test_release_without_module_directory_is_a_user_error() -> None:
    with pytest.raises(UserError, match="kernel release 0.0-none has no modules"):
        load_index(MODULES_ROOT, "0.0-none")


def test_xz_and_gz_modules_are_decompressed_in_python(tmp_path: Path) -> None:
    (tmp_path / "a.ko.xz").write_bytes(lzma.compress(b"xz module"))
    (tmp_path / "b.ko.gz").write_bytes(gzip.compress(b"gz module"))
    assert decompress(tmp_path / "a.ko.xz", "xz") == b"xz module"
    assert decompress(tmp_path / "b.ko.gz", "gz") == b"gz module"


def test_corrupt_compressed_module_is_an_infra_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "bad.ko.xz").write_bytes(b"not xz")
    with pytest.raises(InfraError, match="cannot decompress .*bad.ko.xz"):
        decompress(tmp_path / "bad.ko.xz", "xz")


def test_zstd_modules_without_the_zstd_command_name_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InfraError, match="install the Debian package zstd"):
        require_codec("zst")
    require_codec("xz")


def test_a_release_offers_its_modules_and_built_in_drivers_and_nothing_else() -> None:
    files, deps = parse_modules_dep("kernel/drivers/scsi/virtio_scsi.ko:\n")
    index = ModuleIndex(files, deps, builtin=frozenset({"sd_mod"}))
    assert [m for m in ("virtio_scsi", "virtio-scsi", "sd_mod", "xfs") if index.offers(m)] == [
        "virtio_scsi", "virtio-scsi", "sd_mod"]
