"""`vmbisect build` end to end on the fake kernel tree, and `--register`."""

from __future__ import annotations

import pytest

from orchestrator.cli import main
from tests.integration.fakekernel import commit_all, make_tree


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("VMBISECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    repo = tmp_path / "linux"
    repo.mkdir()
    make_tree(repo)
    return repo


def fields(out: str) -> dict[str, str]:
    return dict(line.split(None, 1) for line in out.strip().splitlines())


def test_build_prints_path_sha256_duration_and_cache_hit_on_the_second_run(state, capsys):
    argv = ["build", "--repo", str(state), "--commit", "main", "--config", "tinyconfig", "--config", "CONFIG_PRINTK=y"]
    assert main(argv) == 0
    first = fields(capsys.readouterr().out)
    assert first["took"].endswith("(built)") and first["image"].endswith("/bzImage")
    assert main(argv) == 0
    second = fields(capsys.readouterr().out)
    assert second["took"].endswith("(cache hit)") and second["sha256"] == first["sha256"]


def test_broken_commit_exits_4_with_the_compiler_error_under_a_build_log_heading(state, capsys):
    (state / "drivers/a.c").write_text("#error nope\n")
    commit_all(state, "break")
    assert main(["build", "--repo", str(state), "--commit", "main", "--config", "CONFIG_PRINTK=y"]) == 4
    err = capsys.readouterr().err.splitlines()
    message = next(line for line in err if line.startswith("vmbisect: build of"))
    assert "failed: drivers/a.c:3:2: error: #error this commit does not compile (log: " in message
    assert err[err.index("--- build log ---") + 1] == "drivers/a.c:3:2: error: #error this commit does not compile"


def test_register_then_resolve_by_name(state, tmp_path, capsys):
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"prebuilt")
    assert main(["build", "--register", str(kernel), "--name", "mine"]) == 0
    out = fields(capsys.readouterr().out)
    from orchestrator.kbuild.kernelstore import KernelStore

    assert KernelStore().resolve("mine").sha256 == out["sha256"]


@pytest.mark.parametrize("argv, message", [
    (["build", "--commit", "x"], "vmbisect: build: --repo and --commit are required (or --register BZIMAGE)"),
    (["build", "--register", "/k", "--commit", "x"],
     "vmbisect: register: --repo, --commit and --config do not apply to a prebuilt bzImage"),
])
def test_bad_build_arguments_are_one_line(state, capsys, argv, message):
    assert main(argv) == 2
    assert capsys.readouterr().err == message + "\n"
