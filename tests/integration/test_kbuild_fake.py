"""The kernel builder, cache and failure paths against a fake kernel tree (seconds)."""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

import pytest

from orchestrator.errors import BuildFailed, InfraError, UserError
from orchestrator.kbuild.builder import ConfigNotApplied, KernelBuilder
from orchestrator.kbuild.kernelstore import KernelStore
from orchestrator.kbuild.recipe import parse_recipe
from tests.integration.fakekernel import RELEASE, commit_all, git, make_tree
from tests.integration.treesnap import snapshot


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "linux"
    path.mkdir()
    make_tree(path)
    return path


@pytest.fixture
def builder(tmp_path: Path) -> KernelBuilder:
    return KernelBuilder(KernelStore(tmp_path / "kernels"), tmp_path / "kbuild", ccache_dir=None, jobs=2)


def fragment(tmp_path: Path, text: str) -> str:
    path = tmp_path / f"frag-{hashlib.sha256(text.encode()).hexdigest()[:8]}.config"
    path.write_text(text)
    return str(path)


def test_build_publishes_image_and_manifest_and_the_same_build_again_is_a_fast_alias_hit(repo, builder, tmp_path):
    recipe = parse_recipe([fragment(tmp_path, "CONFIG_PRINTK=y\n")])
    first = builder.build(repo, "main", recipe)
    assert not first.from_cache and first.path.is_file() and first.release == RELEASE
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()
    manifest = first.manifest
    assert manifest["kind"] == "built" and manifest["inputs"]["tree"] == git(repo, "rev-parse", "main^{tree}")
    assert manifest["outputs"]["bzimage_size"] == first.path.stat().st_size
    assert (first.path.parent / "build.log").is_file() and Path(manifest["build_log"]).is_file()
    started = time.monotonic()
    again = builder.build(repo, "main", recipe)
    assert again.from_cache and again.path == first.path and time.monotonic() - started < 1.0


def test_tinyconfig_base_gets_the_trees_kvm_guest_fragment_and_the_recipe_fragments(repo, builder, tmp_path):
    image = builder.build(repo, "main", parse_recipe(["tinyconfig", fragment(tmp_path, "CONFIG_VIRTIO=y\n")]))
    config = (image.path.parent / "config").read_text()
    assert "CONFIG_KVM_GUEST=y" in config and "CONFIG_VIRTIO=y" in config and image.modules_dir is None


def test_same_inputs_give_the_same_bzimage_bytes_after_wiping_build_dirs_and_store(repo, tmp_path):
    recipe = parse_recipe(["CONFIG_PRINTK=y"])
    first = KernelBuilder(KernelStore(tmp_path / "k1"), tmp_path / "w1", None).build(repo, "main", recipe)
    second = KernelBuilder(KernelStore(tmp_path / "k2"), tmp_path / "w2", None).build(repo, "main", recipe)
    assert not second.from_cache and first.sha256 == second.sha256


def test_users_checkout_and_git_dir_are_byte_for_byte_unchanged_by_builds(repo, builder, tmp_path):
    first = git(repo, "rev-parse", "HEAD")
    (repo / "drivers/a.c").write_text("int a = 2;\n")
    second = commit_all(repo, "change a")
    (repo / "drivers/b.c").write_text("int b = 3; /* uncommitted work */\n")
    (repo / "staged-work.txt").write_text("mine\n")
    git(repo, "add", "staged-work.txt")
    before = snapshot(repo)
    for rev in (first, second, first, "main"):
        builder.build(repo, rev, parse_recipe(["CONFIG_PRINTK=y"]))
    assert snapshot(repo) == before


def test_one_changed_file_rebuilds_only_its_object_and_keeps_the_config(repo, builder, tmp_path):
    recipe = parse_recipe(["CONFIG_PRINTK=y"])
    first = builder.build(repo, "main", recipe)
    build_dir = builder.build_dir(next(p.name for p in (tmp_path / "kbuild").iterdir()), recipe)
    config_mtime = (build_dir / ".config").stat().st_mtime_ns
    (repo / "drivers/b.c").write_text("int b = 1;\n")
    commit_all(repo, "change b")
    second = builder.build(repo, "main", recipe)
    log = Path(second.manifest["build_log"]).read_text()
    assert [line.split()[-1].rsplit("/", 1)[-1] for line in log.splitlines() if line.startswith("  CC ")] == ["b.o"]
    assert "configuration inputs unchanged" in log
    assert (build_dir / ".config").stat().st_mtime_ns == config_mtime and second.sha256 != first.sha256


def test_a_commit_with_the_same_tree_is_a_cache_hit_without_building(repo, builder):
    first = builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]))
    commit_all(repo, "empty", allow_empty=True)
    again = builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]))
    assert again.from_cache and again.key == first.key


def test_a_recipe_that_yields_the_same_config_is_a_hit_on_the_config_hash(repo, builder, tmp_path):
    first = builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]))
    again = builder.build(repo, "main", parse_recipe([fragment(tmp_path, "CONFIG_PRINTK=y\n")]))
    assert again.from_cache and again.key == first.key


def test_config_with_modules_builds_and_installs_them_into_the_store(repo, builder):
    image = builder.build(repo, "main", parse_recipe(["defconfig"]))
    assert image.modules_dir is not None and (image.modules_dir / "kernel/foo.ko").is_file()
    assert image.modules_dir.name == RELEASE and not (image.modules_dir / "build").exists()


def test_compile_error_is_build_failed_with_the_compiler_line_and_nothing_is_cached(repo, builder):
    (repo / "drivers/b.c").write_text("int b;\n#error broken\n")
    commit_all(repo, "break b")
    with pytest.raises(BuildFailed) as caught:
        builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]))
    assert "drivers/b.c:3:2: error: #error this commit does not compile" in str(caught.value)
    assert "Error 1" in caught.value.detail and builder.store.entries() == []


def test_missing_host_tool_is_an_infra_error_naming_it(repo, builder):
    (repo / "needs-tool").write_text("vmbisect-no-such-tool\n")
    commit_all(repo, "needs a tool")
    with pytest.raises(InfraError, match="vmbisect-no-such-tool: not found"):
        builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]))


def test_option_that_does_not_stick_is_an_error_naming_it_and_what_it_became(repo, builder, tmp_path):
    with pytest.raises(ConfigNotApplied, match=r"CONFIG_NOT_IN_THIS_KERNEL=y is absent"):
        builder.build(repo, "main", parse_recipe(["CONFIG_NOT_IN_THIS_KERNEL=y", "CONFIG_PRINTK=y"]))


def test_unknown_commit_and_non_repository_are_user_errors(repo, builder, tmp_path):
    with pytest.raises(UserError, match="commit: 'nope' is not a commit"):
        builder.build(repo, "nope", parse_recipe([]))
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="is not a git repository"):
        builder.build(tmp_path / "plain", "main", parse_recipe([]))


def test_a_wiped_build_directory_is_rebuilt_to_the_same_bytes(repo, builder):
    recipe = parse_recipe(["CONFIG_PRINTK=y"])
    first = builder.build(repo, "main", recipe)
    shutil.rmtree(builder.store.root)
    for build_dir in (builder.work_root).glob("*/build"):
        shutil.rmtree(build_dir)
    again = builder.build(repo, "main", recipe)
    assert not again.from_cache and again.sha256 == first.sha256


def test_a_build_past_its_timeout_is_build_failed_and_leaves_no_process_running(repo, builder, tmp_path):
    marker = tmp_path / "hang-started"
    (repo / "hang.sh").write_text(f"touch {marker}\nsleep 311 &\necho $! > {tmp_path / 'sleeper'}\nwait\n")
    (repo / "needs-tool").write_text("sh hang.sh\n")
    commit_all(repo, "hangs in bzImage")
    started = time.monotonic()
    with pytest.raises(BuildFailed, match=r"took longer than timeouts.build_s \(3 s\)"):
        builder.build(repo, "main", parse_recipe(["CONFIG_PRINTK=y"]), timeout_s=3)
    assert marker.exists() and time.monotonic() - started < 30
    sleeper = Path(f"/proc/{int((tmp_path / 'sleeper').read_text())}/stat")
    assert _gone_within(sleeper, 5.0), "the build's grandchild (sleep 311) outlived the timeout"
    assert builder.store.entries() == []


def _gone_within(stat: Path, seconds: float) -> bool:
    """SIGKILL is delivered asynchronously: the process is gone, or a zombie, within `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


def test_the_builders_clone_has_gc_and_maintenance_off(repo, builder, tmp_path):
    builder.build(repo, "main", parse_recipe([fragment(tmp_path, "CONFIG_PRINTK=y\n")]))
    (clone,) = (tmp_path / "kbuild").glob("*/src")
    assert git(clone, "config", "gc.auto") == "0" and git(clone, "config", "maintenance.auto") == "false"
