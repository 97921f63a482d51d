import os
import time

import pytest

from orchestrator.errors import UserError
from orchestrator.kbuild.builder import kconfig_inputs
from orchestrator.kbuild.kernelstore import KernelStore, alias_key, cache_key
from orchestrator.kbuild.makecmd import build_env, make_argv


def publish(store, key, size, last_used):
    with store.staging() as stage:
        (stage / "bzImage").write_bytes(b"k" * size)
        image = store.publish(key, stage, {"kind": "built", "outputs": {
            "bzimage_sha256": key, "bzimage_size": size, "release": "r", "modules_dir": None}})
    os.utime(image.path.parent / "last-used", (last_used, last_used))
    return image


def test_publish_evicts_least_recently_used_entries_until_under_the_limit(tmp_path):
    store = KernelStore(tmp_path, max_bytes=2500)
    now = time.time()
    publish(store, "a" * 64, 1000, now - 30)
    publish(store, "b" * 64, 1000, now - 10)
    store.get("a" * 64)  # a used most recently now
    publish(store, "c" * 64, 1000, now)
    assert store.entries() == ["a" * 64, "c" * 64]


def test_registered_image_is_found_by_name_and_by_sha256_prefix(tmp_path):
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"prebuilt kernel")
    modules = tmp_path / "6.1.0-test"
    (modules / "kernel").mkdir(parents=True)
    (modules / "kernel/x.ko").write_bytes(b"ko")
    store = KernelStore(tmp_path / "store")
    image = store.register(kernel, modules, name="mine")
    assert image.manifest["kind"] == "registered" and image.release == "6.1.0-test"
    assert (image.modules_dir / "kernel/x.ko").read_bytes() == b"ko"
    assert store.resolve("mine").sha256 == image.sha256 == store.resolve(image.sha256[:8]).sha256


@pytest.mark.parametrize("ref, message", [
    ("nothere", "kernel: no registered name 'nothere' and not a sha256 prefix (4-64 hex digits)"),
    ("abcd", "kernel: no stored kernel match 'abcd'"),
])
def test_unknown_reference_is_a_one_line_error(tmp_path, ref, message):
    with pytest.raises(UserError) as caught:
        KernelStore(tmp_path).resolve(ref)
    assert str(caught.value) == message


def test_register_refuses_a_name_that_looks_like_a_hash(tmp_path):
    (tmp_path / "k").write_bytes(b"x")
    with pytest.raises(UserError, match="name: 'abcdef'"):
        KernelStore(tmp_path / "s").register(tmp_path / "k", name="abcdef")


def test_keys_depend_on_every_input():
    assert len({cache_key("t", "c", "gcc 12"), cache_key("t2", "c", "gcc 12"), cache_key("t", "c2", "gcc 12"),
                cache_key("t", "c", "gcc 10")}) == 4
    assert alias_key("t", "r", "gcc") != alias_key("t", "r2", "gcc")


def test_make_argv_uses_ccache_for_cc_and_the_same_compiler_for_host_tools(tmp_path):
    argv = make_argv(tmp_path / "src", tmp_path / "b", ["bzImage"], "gcc-10", ccache=True, jobs=2)
    assert argv == ["make", "-C", str(tmp_path / "src"), f"O={tmp_path / 'b'}", "-j2", "CC=ccache gcc-10",
                    "HOSTCC=gcc-10", "bzImage"]


def test_build_env_pins_build_stamps_and_drops_the_callers_kbuild_and_ccache_settings(tmp_path):
    env = build_env({"PATH": "/bin", "KBUILD_OUTPUT": "/x", "CCACHE_DISABLE": "1"}, tmp_path, tmp_path, "5G")
    assert "KBUILD_OUTPUT" not in env and "CCACHE_DISABLE" not in env
    assert env["KBUILD_BUILD_TIMESTAMP"] and env["KBUILD_BUILD_HOST"] == "vmbisect"
    assert env["CCACHE_DIR"] == str(tmp_path) and env["CCACHE_MAXSIZE"] == "5G"


def test_kconfig_inputs_keep_kconfig_files_scripts_configs_and_the_top_makefile_only():
    lines = [f"100644 blob {i}\t{p}" for i, p in enumerate([
        "Makefile", "init/Kconfig", "arch/x86/Kconfig.cpu", "scripts/kconfig/conf.c", "kernel/configs/tiny.config",
        "arch/x86/configs/x86_64_defconfig", "drivers/net/e1000.c", "include/linux/sched.h", "drivers/Makefile"])]
    assert [line.split("\t")[1] for line in kconfig_inputs(lines)] == [
        "Makefile", "init/Kconfig", "arch/x86/Kconfig.cpu", "scripts/kconfig/conf.c", "kernel/configs/tiny.config",
        "arch/x86/configs/x86_64_defconfig"]


def test_an_image_says_how_it_was_obtained_and_a_build_says_it_for_people(tmp_path):
    from pathlib import Path

    from orchestrator.ports import Build, KernelArtifact

    store = KernelStore(tmp_path)
    with store.staging() as stage:
        (stage / "bzImage").write_bytes(b"k")
        built = store.publish("d" * 64, stage, {"kind": "built", "how": "incremental", "outputs": {
            "bzimage_sha256": "d" * 64, "bzimage_size": 1, "release": "r", "modules_dir": None}})
    assert built.how == "incremental" and store.get("d" * 64).how == "cached"
    assert publish(store, "e" * 64, 1, time.time()).how == "", "an entry from before says nothing"
    k = KernelArtifact(Path("/k"), "d" * 64)
    assert Build(k, False, 492.0, "cold").words() == "built in 8.2 min (cold)"
    assert Build(k, False, 12.4, "incremental").words() == "built in 12 s (incremental)"
    assert Build(k, True, 0.1, "cached").words() == "from the build cache"


def test_a_build_starts_incremental_in_a_directory_holding_a_kernel_else_cold_or_with_ccache(tmp_path, monkeypatch):
    from orchestrator.kbuild import builder as kbuilder

    b = kbuilder.KernelBuilder(KernelStore(tmp_path / "s"), tmp_path / "w", None)
    out = tmp_path / "out"
    out.mkdir()
    assert b._how(out) == "cold"
    monkeypatch.setattr(kbuilder.shutil, "which", lambda _name: "/usr/bin/ccache")
    assert kbuilder.KernelBuilder(KernelStore(tmp_path / "s"), tmp_path / "w", tmp_path / "cc")._how(out) == "ccache"
    (out / "vmlinux").write_bytes(b"")
    assert b._how(out) == "incremental"
