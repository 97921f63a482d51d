"""GuestImageBuilder against the real host (ldd, busybox, cpio), with small stand-ins.

Most tests use a stand-in agent (a shell script) and a small tool set in which /usr/bin/env
takes fio's slot, so that each build packs a few megabytes instead of fio's 80 MB of libraries.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from orchestrator.errors import InfraError, UserError
from orchestrator.image import (
    DEFAULT_TOOLS,
    MODULE_LIST_PATH,
    GuestImageBuilder,
    ImageTool,
    default_cache_root,
    format_member,
    list_image,
)
from orchestrator.image.cpio import EntryType
from orchestrator.image.modules import split_compression
from tests.integration.imagefiles import extract_image

MODULE_DATA = Path(__file__).resolve().parent.parent / "data" / "image" / "modules"
RELEASE = "6.99.0-test"

SMALL_TOOLS: Mapping[str, ImageTool] = {
    "busybox": DEFAULT_TOOLS["busybox"],
    "fio": ImageTool(("/usr/bin/env",), "coreutils"),
}

pytestmark = pytest.mark.skipif(
    not os.path.isfile(DEFAULT_TOOLS["busybox"].candidates[0]) or shutil.which("cpio") is None,
    reason="needs busybox-static and cpio installed (make setup)",
)


def _agent(tmp_path: Path, text: str = "#!/bin/sh\necho stand-in agent\n") -> Path:
    agent = tmp_path / "standin-agent"
    agent.write_text(text)
    agent.chmod(0o755)
    return agent


def _builder(tmp_path: Path, agent: Path, **kwargs: object) -> GuestImageBuilder:
    kwargs.setdefault("tools", SMALL_TOOLS)
    return GuestImageBuilder(tmp_path / "cache", agent, **kwargs)  # type: ignore[arg-type]


def test_standin_agent_becomes_init_next_to_busybox_applets_libraries_and_console(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    image = _builder(tmp_path, agent).build()
    root = extract_image(image.path, tmp_path / "root")

    assert (root / "init").read_bytes() == agent.read_bytes()
    assert stat.S_IMODE((root / "init").stat().st_mode) == 0o755
    assert os.readlink(root / "bin" / "sh") == "busybox"
    assert (root / "bin" / "busybox").read_bytes() == Path("/bin/busybox").read_bytes()
    assert (root / "usr/bin/env").is_file()
    assert (root / "lib64/ld-linux-x86-64.so.2").resolve().is_file()
    assert (root / "lib/x86_64-linux-gnu/libc.so.6").is_file()
    members = {m.path: m for m in list_image(image.path)}
    assert members["/dev/console"].kind is EntryType.CHAR
    assert members["/dev/console"].rdev == (5, 1)
    assert members["/etc/mtab"].target == "../proc/self/mounts"
    assert image.modules == () and image.kernel_release is None
    assert not (root / MODULE_LIST_PATH.lstrip("/")).exists()


def test_symlinked_host_directories_are_mirrored_as_symlinks(tmp_path: Path) -> None:
    image = _builder(tmp_path, _agent(tmp_path)).build()
    members = {m.path: m for m in list_image(image.path)}
    for directory in ("/lib", "/lib64", "/bin"):
        if os.path.islink(directory):
            assert members[directory].target == os.readlink(directory)
        else:
            assert members[directory].kind is EntryType.DIR


def test_same_inputs_give_byte_identical_images_in_different_caches(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    first = GuestImageBuilder(tmp_path / "one", agent, tools=SMALL_TOOLS).build()
    second = GuestImageBuilder(tmp_path / "two", agent, tools=SMALL_TOOLS).build()
    assert not second.from_cache
    assert first.inputs_digest == second.inputs_digest
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == second.sha256


def test_changed_standin_agent_content_gives_a_new_digest_and_a_rebuild(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    builder = _builder(tmp_path, agent)
    before = builder.build()
    agent.write_text("#!/bin/sh\necho changed\n")
    after = builder.build()
    assert after.inputs_digest != before.inputs_digest
    assert not after.from_cache
    assert after.path != before.path and after.sha256 != before.sha256


def test_cache_hit_returns_the_same_file_unrewritten_in_under_a_second(tmp_path: Path) -> None:
    builder = _builder(tmp_path, _agent(tmp_path))
    built = builder.build()
    written = built.path.stat()
    started = time.monotonic()
    hit = builder.build()
    elapsed = time.monotonic() - started
    assert hit.from_cache
    assert elapsed < 1.0
    assert (hit.path, hit.sha256, hit.inputs_digest) == (built.path, built.sha256, built.inputs_digest)
    again = hit.path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert [p.name for p in built.path.parent.iterdir() if p.name.startswith(".tmp-")] == []


def test_damaged_cached_image_is_rebuilt(tmp_path: Path) -> None:
    builder = _builder(tmp_path, _agent(tmp_path))
    built = builder.build()
    good = built.path.read_bytes()
    built.path.write_bytes(good[: len(good) // 2])
    rebuilt = builder.build()
    assert not rebuilt.from_cache
    assert rebuilt.path.read_bytes() == good


def test_manifest_records_every_input_with_sha256_and_the_output(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    image = _builder(tmp_path, agent).build()
    manifest = json.loads(image.manifest_path.read_text())
    assert manifest["inputs_digest"] == image.inputs_digest
    assert (manifest["sha256"], manifest["size"]) == (image.sha256, image.size)
    assert image.size == image.path.stat().st_size
    inputs = {entry["image_path"]: entry for entry in manifest["inputs"]}
    assert inputs["/init"]["host_path"] == str(agent)
    assert len(inputs["/init"]["sha256"]) == 64
    assert any(path.endswith("/libc.so.6") for path in inputs)
    assert image.manifest_path.parent == image.path.parent


def test_missing_mandatory_tool_is_an_infra_error_naming_the_package(tmp_path: Path) -> None:
    tools = {**SMALL_TOOLS, "netperf": ImageTool(("/nonexistent/netperf",), "netperf", hint="non-free")}
    expected = r"netperf not found .*install the Debian package netperf \(non-free\)"
    with pytest.raises(InfraError, match=expected):
        _builder(tmp_path, _agent(tmp_path), tools=tools).build()


def test_missing_optional_tool_is_left_out_with_a_note(tmp_path: Path) -> None:
    tools = {**SMALL_TOOLS, "netperf": ImageTool(("/nonexistent/netperf",), "netperf")}
    image = _builder(tmp_path, _agent(tmp_path), tools=tools, optional={"netperf"}).build()
    assert len(image.notes) == 1 and "netperf not found" in image.notes[0]
    assert "/nonexistent/netperf" not in {m.path for m in list_image(image.path)}


def test_missing_data_file_counts_as_a_missing_tool(tmp_path: Path) -> None:
    tools = {**SMALL_TOOLS, "dbench": ImageTool(("/usr/bin/env",), "dbench", data=("/nonexistent/client.txt",))}
    with pytest.raises(InfraError, match="dbench needs /nonexistent/client.txt"):
        _builder(tmp_path, _agent(tmp_path), tools=tools).build()


def test_busybox_and_fio_are_mandatory(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    with pytest.raises(UserError, match="fio cannot be optional"):
        _builder(tmp_path, agent, optional={"fio"})
    with pytest.raises(UserError, match="tools must include busybox"):
        _builder(tmp_path, agent, tools={"fio": SMALL_TOOLS["fio"]})
    with pytest.raises(UserError, match="optional tool: invalid value 'nope'"):
        _builder(tmp_path, agent, optional={"nope"})


def test_missing_agent_is_an_infra_error_pointing_at_make_agent(tmp_path: Path) -> None:
    with pytest.raises(InfraError, match="guest agent not found at .*make agent"):
        _builder(tmp_path, tmp_path / "no-agent").build()


def test_default_cache_root_is_images_below_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VMBISECT_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("VMBISECT_AGENT", str(tmp_path / "agent"))
    builder = GuestImageBuilder()
    assert default_cache_root() == tmp_path / "c" / "images" == builder.cache_root
    assert builder.agent == tmp_path / "agent"


def test_applets_named_like_copied_tools_are_not_linked(tmp_path: Path) -> None:
    if not os.path.isfile("/sbin/mke2fs"):
        pytest.skip("needs e2fsprogs")
    tools = {**SMALL_TOOLS, "mkfs.ext4": DEFAULT_TOOLS["mkfs.ext4"]}
    image = _builder(tmp_path, _agent(tmp_path), tools=tools).build()
    root = extract_image(image.path, tmp_path / "root")
    assert not (root / "bin" / "mke2fs").is_symlink()
    assert (root / "sbin" / "mke2fs").read_bytes() == Path("/sbin/mke2fs").read_bytes()
    assert os.readlink(root / "sbin" / "mkfs.ext4") == os.readlink("/sbin/mkfs.ext4")
    assert (root / "etc" / "mke2fs.conf").read_bytes() == Path("/etc/mke2fs.conf").read_bytes()
    assert os.readlink(root / "bin" / "mkdir") == "busybox"


def test_extra_files_are_placed_and_clashes_are_user_errors(tmp_path: Path) -> None:
    extra = tmp_path / "job.fio"
    extra.write_text("[job]\n")
    agent = _agent(tmp_path)
    image = _builder(tmp_path, agent).build(extra_files={"/etc/vmbisect/job.fio": extra})
    root = extract_image(image.path, tmp_path / "root")
    assert (root / "etc/vmbisect/job.fio").read_text() == "[job]\n"
    with pytest.raises(UserError, match="/init is claimed twice"):
        _builder(tmp_path, agent).build(extra_files={"/init": extra})
    with pytest.raises(UserError, match="extra file"):
        _builder(tmp_path, agent).build(extra_files={"relative/path": extra})


def _fake_release(root: Path) -> Path:
    """A copy of the handmade release with module files whose content is their own name."""
    release = root / RELEASE
    shutil.copytree(MODULE_DATA / RELEASE, release)
    for line in (release / "modules.dep").read_text().splitlines():
        relpath = line.partition(":")[0]
        content = f"module {relpath}\n".encode()
        target = release / relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        if relpath.endswith(".xz"):
            target.write_bytes(lzma.compress(content))
        elif relpath.endswith(".gz"):
            target.write_bytes(gzip.compress(content, mtime=0))
        elif relpath.endswith(".zst"):
            zstd = subprocess.run(["zstd", "-q", "-c"], input=content, capture_output=True, check=True)
            target.write_bytes(zstd.stdout)
        else:
            target.write_bytes(content)
    return root


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs the zstd command (Debian package zstd)")
def test_modules_are_decompressed_to_plain_paths_and_listed_dependencies_first(tmp_path: Path) -> None:
    modules_root = _fake_release(tmp_path / "modules")
    builder = _builder(tmp_path, _agent(tmp_path), modules_root=modules_root)
    image = builder.build(kernel_release=RELEASE, modules=["virtio-blk", "ext4", "xfs", "sd_mod"])
    root = extract_image(image.path, tmp_path / "root")

    listed = (root / MODULE_LIST_PATH.lstrip("/")).read_text().splitlines()
    assert listed == [
        f"/lib/modules/{RELEASE}/kernel/{rel}"
        for rel in (
            "lib/crc16.ko",
            "crypto/crc32c_generic.ko",
            "arch/x86/crypto/crc32c-intel.ko",
            "fs/jbd2/jbd2.ko",
            "lib/libcrc32c.ko",
            "fs/mbcache.ko",
            "fs/ext4/ext4.ko",
            "drivers/virtio/virtio.ko",
            "drivers/virtio/virtio_ring.ko",
            "drivers/block/virtio_blk.ko",
            "fs/xfs/xfs.ko",
        )
    ]
    dep_lines = (modules_root / RELEASE / "modules.dep").read_text().splitlines()
    compressed_of = {split_compression(p)[0]: p for p in (line.partition(":")[0] for line in dep_lines)}
    for path in listed:
        plain = path.removeprefix(f"/lib/modules/{RELEASE}/")
        assert (root / path.lstrip("/")).read_text() == f"module {compressed_of[plain]}\n"
    assert image.modules[-1] == "xfs" and image.builtin_modules == ("sd_mod",)
    assert not list((root / "lib/modules").rglob("*.xz"))


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs the zstd command (Debian package zstd)")
def test_module_change_gives_a_new_digest(tmp_path: Path) -> None:
    modules_root = _fake_release(tmp_path / "modules")
    builder = _builder(tmp_path, _agent(tmp_path), modules_root=modules_root)
    before = builder.build(kernel_release=RELEASE, modules=["ipmi_devintf"])
    (modules_root / RELEASE / "kernel/drivers/char/ipmi/ipmi_msghandler.ko").write_bytes(b"new\n")
    after = builder.build(kernel_release=RELEASE, modules=["ipmi_devintf"])
    assert after.inputs_digest != before.inputs_digest and not after.from_cache


@pytest.mark.skipif(shutil.which("zstd") is None, reason="needs the zstd command (Debian package zstd)")
def test_unknown_module_and_modules_without_release_are_user_errors(tmp_path: Path) -> None:
    modules_root = _fake_release(tmp_path / "modules")
    builder = _builder(tmp_path, _agent(tmp_path), modules_root=modules_root)
    with pytest.raises(UserError, match=f"kernel module nosuch is neither .* {RELEASE}"):
        builder.build(kernel_release=RELEASE, modules=["nosuch"])
    with pytest.raises(UserError, match="without a kernel release"):
        builder.build(modules=["ext4"])


def test_listing_shows_types_modes_sizes_and_link_targets(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    image = _builder(tmp_path, agent).build()
    lines = {m.path: format_member(m) for m in list_image(image.path)}
    assert lines["/init"] == f"-0755 {agent.stat().st_size:>10} /init"
    assert lines["/dev/console"] == "c0600        5,1 /dev/console"
    assert lines["/etc/mtab"].endswith("/etc/mtab -> ../proc/self/mounts")


def test_listing_a_file_that_is_not_an_image_is_an_infra_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.cpio.gz"
    bogus.write_bytes(gzip.compress(b"not a cpio archive at all, but long enough for a header" * 3))
    with pytest.raises(InfraError, match="not a newc cpio archive"):
        list_image(bogus)


def test_gzip_image_holds_the_same_archive_as_the_default_uncompressed_one(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    plain = _builder(tmp_path, agent).build()
    packed = GuestImageBuilder(tmp_path / "cache", agent, tools=SMALL_TOOLS, compression="gzip").build()
    assert plain.path.suffix == ".cpio" and packed.path.name.endswith(".cpio.gz")
    assert gzip.decompress(packed.path.read_bytes()) == plain.path.read_bytes()
    assert packed.size < plain.size and list_image(packed.path) == list_image(plain.path)


def test_unknown_compression_is_a_user_error_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="compression: invalid value 'xz'; valid choices: none, gzip"):
        GuestImageBuilder(tmp_path / "cache", _agent(tmp_path), compression="xz")
