"""Git adapter: read the user's repository, keep a vmbisect-owned checkout of it.

The user's repository is only read (`git rev-parse`, and `git clone`/`git fetch` reading its
objects). The checkout owns every object it holds: a local clone hard-links the user's object
files (no copy on the same file system, a copy across), and commits the user makes later are
fetched into it. It never borrows the user's object store (`--shared`, objects/info/alternates):
a repository deleted and made again at the same path, or rebased and pruned (`git gc
--prune=now`), would take objects from under it (issue #21). Switching commits rewrites only the
files that differ (keeping make's rebuilds small).

A checkout an older vmbisect made with `--shared`, or one whose refs name objects it lacks, is
found before it is used (`ensure_clone`, at every campaign's first build) and made again, with a
one-line note.

Every repository vmbisect makes or clones has git's automatic maintenance off (`gc.auto` 0,
`maintenance.auto` false: `NO_BACKGROUND`, `no_background`): an automatic `gc` detaches and
packs in the background, and one that ran while the first boots of a campaign measured made
them read 0.3-0.8x of their commits' later boots. What packing is done runs in the foreground,
before anything is measured.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from orchestrator.errors import InfraError, UserError

_GIT_ENV_SAFE = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
# Configuration of every repository vmbisect makes: no automatic gc or maintenance, ever.
NO_BACKGROUND = (("gc.auto", "0"), ("maintenance.auto", "false"))


def clone_options() -> list[str]:
    """`git clone` options writing NO_BACKGROUND into the new repository's configuration."""
    return [opt for key, value in NO_BACKGROUND for opt in ("--config", f"{key}={value}")]


def no_background(git_dir: Path) -> None:
    """NO_BACKGROUND in the configuration of `git_dir` (a repository made by an older vmbisect)."""
    for key, value in NO_BACKGROUND:
        proc = _run(["git", f"--git-dir={git_dir}", "config", key, value])
        if proc.returncode != 0:
            raise InfraError(f"git config {key} in {git_dir} failed: {proc.stderr.strip()[-300:]}")


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


def stale(git_dir: Path) -> str:
    """Why a vmbisect-owned clone (its git directory) cannot be used as it is, or "": it borrows
    another repository's objects, or one of its refs names an object it does not have."""
    if (git_dir / "objects" / "info" / "alternates").is_file():
        return "it borrowed the objects of a repository that may have dropped them (a --shared clone)"
    refs = _run(["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(objectname) %(refname)"])
    if refs.returncode != 0:
        return f"git cannot read it: {refs.stderr.strip()[-200:]}"
    tips = [line.split(" ", 1) for line in refs.stdout.splitlines() if line]
    if tips:
        check = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-check"],
                               input="".join(f"{oid}\n" for oid, _ in tips), capture_output=True, text=True,
                               env={**os.environ, **_GIT_ENV_SAFE}, check=False)
        missing = [ref for (_, ref), line in zip(tips, check.stdout.splitlines()) if line.endswith(" missing")]
        if missing:
            return f"{missing[0]} names an object it does not have"
    return ""


def ensure_clone(repo: Path, src: Path, note: Callable[[str], None] = lambda _msg: None) -> None:
    """A `--no-checkout` clone of `repo` at `src` owning its objects, made once; made again
    (after `note` says why) when it is stale."""
    if (src / ".git").is_dir():
        why = stale(src / ".git")
        if not why:
            no_background(src / ".git")
            return
        note(f"made its clone of {repo} again: {why}")
        shutil.rmtree(src)
    partial = src.with_name(src.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    # --dissociate: a repository that itself borrows objects (the demo's, from the linux-source
    # cache) would hand its alternates file on to a plain local clone, which is then stale at once
    proc = _run(["git", "clone", "--quiet", "--no-checkout", "--dissociate", *clone_options(), str(repo.resolve()),
                 str(partial)])
    if proc.returncode != 0:
        raise InfraError(f"git clone of {repo} failed: {proc.stderr.strip()[-300:]}")
    partial.rename(src)


def fetch_commit(src: Path, objects: Path, commit: str) -> None:
    """Bring `commit` from `objects` (the user's repository, or vmbisect's own clone holding
    reverts under refs/vmbisect/) into the checkout `src`."""
    if _run(["git", "-C", str(src), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0:
        return
    proc = _run(["git", "-C", str(src), "fetch", "--quiet", "--no-tags", str(objects.resolve()),
                 "+refs/*:refs/vmbisect-fetched/*"])
    if proc.returncode != 0:
        raise InfraError(f"git fetch of {commit[:12]} from {objects} failed: {proc.stderr.strip()[-300:]}")
    if _run(["git", "-C", str(src), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode != 0:
        raise InfraError(f"git fetch from {objects} did not bring {commit[:12]}: no ref there leads to it")


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


KCONFIG_DEFINITION = r"^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+[[:space:]]*$"


def kconfig_definitions(repo: Path, commit: str) -> list[str]:
    """`git grep` lines "<commit>:<path>:config NAME" of every Kconfig symbol defined at `commit`
    (a resolved commit id) of `repo`, which is only read."""
    proc = _run(["git", "-C", str(repo), "grep", "-I", "-E", "-e", KCONFIG_DEFINITION, commit, "--", "*Kconfig*"])
    if proc.returncode not in (0, 1):  # 1: nothing found
        raise InfraError(f"git grep of the Kconfig files at {commit[:12]} in {repo} failed: "
                         f"{proc.stderr.strip()[-300:]}")
    return proc.stdout.splitlines()
