"""Git adapter: read the user's repository, keep a vmbisect-owned checkout of it.

The user's repository is only read (`git rev-parse`, and `git clone --shared` reading its
objects). The checkout is a `--shared` clone: it borrows the user's object store through
objects/info/alternates, so any commit the user has is visible in it without copying, and
switching commits rewrites only the files that differ (keeping make's rebuilds small).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InfraError, UserError

_GIT_ENV_SAFE = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


@dataclass(frozen=True)
class Revision:
    repo_id: str
    commit: str
    tree: str


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **_GIT_ENV_SAFE}, check=False)


def resolve(repo: Path, rev: str, objects: Path | None = None) -> Revision:
    """Commit and tree ids of `rev` in `repo` (or in `objects`, another repository it lives in),
    and an id for `repo` itself."""
    if objects is not None:
        own = resolve(repo, "HEAD")
        found = resolve(objects, rev)
        return Revision(own.repo_id, found.commit, found.tree)
    if not repo.exists():
        raise UserError(f"repo: {repo} does not exist")
    if rev.startswith("-"):
        raise UserError(f"commit: {rev!r} is not a revision")
    proc = _run(["git", "-C", str(repo), "rev-parse", "--path-format=absolute", "--git-common-dir",
                 f"{rev}^{{commit}}", f"{rev}^{{tree}}"])
    if proc.returncode != 0:
        if "not a git repository" in proc.stderr:
            raise UserError(f"repo: {repo} is not a git repository")
        raise UserError(f"commit: {rev!r} is not a commit in {repo}")
    common_dir, commit, tree = proc.stdout.split()
    repo_id = hashlib.sha256(str(Path(common_dir).resolve()).encode()).hexdigest()[:16]
    return Revision(repo_id, commit, tree)


def ensure_clone(repo: Path, src: Path) -> None:
    """A `--shared --no-checkout` clone of `repo` at `src`, made once."""
    if (src / ".git").is_dir():
        return
    partial = src.with_name(src.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    proc = _run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo.resolve()), str(partial)])
    if proc.returncode != 0:
        raise InfraError(f"git clone of {repo} failed: {proc.stderr.strip()[-300:]}")
    partial.rename(src)


def fetch_commit(src: Path, objects: Path, commit: str) -> None:
    """Bring `commit` from `objects` into the checkout `src` (its refs under refs/vmbisect/)."""
    if _run(["git", "-C", str(src), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0:
        return
    proc = _run(["git", "-C", str(src), "fetch", "--quiet", "--no-tags", str(objects.resolve()),
                 "+refs/vmbisect/*:refs/vmbisect/*"])
    if proc.returncode != 0:
        raise InfraError(f"git fetch of {commit[:12]} from {objects} failed: {proc.stderr.strip()[-300:]}")


def checkout(src: Path, commit: str) -> None:
    """Make `src`'s files exactly `commit`'s (detached HEAD)."""
    proc = _run(["git", "-C", str(src), "checkout", "--quiet", "--detach", "--force", commit])
    if proc.returncode != 0:
        raise InfraError(f"git checkout {commit[:12]} in {src} failed: {proc.stderr.strip()[-300:]}")


def ls_tree(src: Path, commit: str) -> list[str]:
    """`git ls-tree -r` lines of `commit`: "<mode> <type> <id>\\t<path>"."""
    proc = _run(["git", "-C", str(src), "ls-tree", "-r", "--full-tree", commit])
    if proc.returncode != 0:
        raise InfraError(f"git ls-tree {commit[:12]} in {src} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout.splitlines()
