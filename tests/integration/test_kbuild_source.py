"""The tarball-to-git helper on a small tarball shaped like Debian's linux-source (a `/*` .gitignore)."""

import subprocess
import tarfile
from pathlib import Path

import pytest

from orchestrator.errors import UserError
from orchestrator.kbuild.source import ensure_linux_source_repo


def make_tarball(tmp_path: Path) -> Path:
    top = tmp_path / "linux-source-9.9"
    (top / "kernel").mkdir(parents=True)
    (top / ".gitignore").write_text("/*\n!/kernel\n")
    (top / "Makefile").write_text("all:\n")
    (top / "kernel/fork.c").write_text("int fork;\n")
    (top / "scripts").mkdir()
    (top / "scripts/run.sh").write_text("#!/bin/sh\n")
    (top / "scripts/run.sh").chmod(0o755)
    tarball = tmp_path / "linux-source-9.9.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        tar.add(top, arcname="linux-source-9.9")
    return tarball


def files_in(repo: Path, commit: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={repo}", "ls-tree", "-r", commit], capture_output=True, text=True,
                         check=True).stdout
    return sorted(line.split(None, 3)[0] + " " + line.split("\t")[1] for line in out.splitlines())


def test_every_file_is_committed_despite_the_ignore_everything_gitignore_with_modes(tmp_path):
    repo = ensure_linux_source_repo(make_tarball(tmp_path), tmp_path / "repo.git")
    assert files_in(repo.path, repo.commit) == ["100644 .gitignore", "100644 Makefile", "100644 kernel/fork.c",
                                                 "100755 scripts/run.sh"]


def test_commit_hash_is_the_same_on_every_run_and_a_second_call_reuses_the_repository(tmp_path):
    tarball = make_tarball(tmp_path)
    first = ensure_linux_source_repo(tarball, tmp_path / "one.git")
    second = ensure_linux_source_repo(tarball, tmp_path / "two.git")
    assert first.commit == second.commit
    mtime = (first.path / "HEAD").stat().st_mtime_ns
    assert ensure_linux_source_repo(tarball, tmp_path / "one.git") == first
    assert (first.path / "HEAD").stat().st_mtime_ns == mtime


def test_missing_tarball_is_a_user_error_naming_the_setup_step(tmp_path):
    with pytest.raises(UserError, match="make setup installs linux-source-6.1"):
        ensure_linux_source_repo(tmp_path / "none.tar.xz", tmp_path / "r.git")


def test_the_repository_is_packed_when_made_and_never_starts_gc_or_maintenance_itself(tmp_path):
    repo = ensure_linux_source_repo(make_tarball(tmp_path), tmp_path / "repo.git")
    config = {key: subprocess.run(["git", "--git-dir", str(repo.path), "config", key], capture_output=True,
                                  text=True).stdout.strip() for key in ("gc.auto", "maintenance.auto")}
    assert config == {"gc.auto": "0", "maintenance.auto": "false"}
    assert not list((repo.path / "objects").glob("??/*")), "loose objects left to a background gc"
