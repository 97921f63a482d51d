"""Turn a kernel release tarball (Debian's linux-source-6.1) into a git repository.

The release is the first and only commit, with a fixed author, committer and dates, so the
commit hash is the same on every machine. The repository is bare (no working tree to keep);
clone it to get one. Idempotent: a finished repository made from the same tarball is reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from orchestrator import paths
from orchestrator.errors import InfraError, UserError
from orchestrator.kbuild import gitrepo

DEBIAN_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "vmbisect",
    "GIT_AUTHOR_EMAIL": "vmbisect@localhost",
    "GIT_AUTHOR_DATE": "2023-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "vmbisect",
    "GIT_COMMITTER_EMAIL": "vmbisect@localhost",
    "GIT_COMMITTER_DATE": "2023-01-01T00:00:00+0000",
}
_STAMP = "vmbisect-source.json"


@dataclass(frozen=True)
class SourceRepo:
    path: Path
    commit: str


def default_repo_path(tarball: Path = DEBIAN_TARBALL) -> Path:
    name = tarball.name.removesuffix(".xz").removesuffix(".gz").removesuffix(".tar")
    return paths.cache_dir() / "sources" / f"{name}.git"


def _stamp(tarball: Path) -> dict[str, object]:
    st = tarball.stat()
    return {"tarball": str(tarball.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _git(git_dir: Path, *args: str, work_tree: Path | None = None) -> str:
    argv = ["git", f"--git-dir={git_dir}"]
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    env = {**os.environ, **_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(git_dir)}
    proc = subprocess.run(argv + list(args), capture_output=True, text=True, env=env, cwd=work_tree, check=False)
    if proc.returncode != 0:
        raise InfraError(f"git {args[0]} failed in {git_dir}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout.strip()


def _existing(dest: Path, stamp: dict[str, object]) -> SourceRepo | None:
    stamp_file = dest / _STAMP
    if not stamp_file.is_file():
        return None
    recorded = json.loads(stamp_file.read_text())
    if recorded.get("source") != stamp:
        return None
    return SourceRepo(dest, str(recorded["commit"]))


def ensure_linux_source_repo(tarball: Path = DEBIAN_TARBALL, dest: Path | None = None) -> SourceRepo:
    """The git repository holding `tarball`'s release as its one commit on branch `master`."""
    if not tarball.is_file():
        raise UserError(f"tarball: {tarball} does not exist (make setup installs linux-source-6.1)")
    dest = default_repo_path(tarball) if dest is None else dest
    stamp = _stamp(tarball)
    found = _existing(dest, stamp)
    if found is not None:
        return found
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".src-", dir=dest.parent) as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        untar = subprocess.run(["tar", "-xf", str(tarball), "-C", str(tree), "--strip-components=1"],
                               capture_output=True, text=True, check=False)
        if untar.returncode != 0:
            raise InfraError(f"tar could not extract {tarball}: {untar.stderr.strip()[:200]}")
        git_dir = Path(scratch) / "repo.git"
        _git(git_dir, "init", "--quiet", "--bare", "--initial-branch=master")
        for key, value in (("core.autocrlf", "false"), ("core.fileMode", "true"), *gitrepo.NO_BACKGROUND):
            _git(git_dir, "config", key, value)
        # The tarball's own .gitignore starts with `/*`: everything would be ignored without -f.
        _git(git_dir, "add", "--force", "--all", ".", work_tree=tree)
        _git(git_dir, "commit", "--quiet", "--no-verify", "-m", f"{tarball.name} as released", work_tree=tree)
        commit = _git(git_dir, "rev-parse", "HEAD")
        _git(git_dir, "gc", "--quiet")  # packed here, in the foreground, before anything is measured
        (git_dir / _STAMP).write_text(json.dumps({"source": stamp, "commit": commit}, indent=1) + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(git_dir, dest)
    return SourceRepo(dest, commit)
