"""Throwaway git repositories with named commits, for bisection tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "T",
       "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
       "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.names: dict[str, str] = {}

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True, text=True,
                              env=ENV).stdout.strip()

    def commit(self, name: str, path: str = "") -> str:
        """A commit named `name` that writes its own file (so any one of them reverts cleanly),
        or appends its name to `path` (commits sharing a file conflict when one is reverted)."""
        target = self.path / (path or name)
        with target.open("a") as f:
            f.write(name + "\n")
        self.git("add", path or name)
        self.git("commit", "-q", "-m", name)
        self.names[name] = self.git("rev-parse", "HEAD")
        return self.names[name]

    def branch(self, name: str, at: str) -> None:
        self.git("checkout", "-q", "-b", name, at)

    def checkout(self, name: str) -> None:
        self.git("checkout", "-q", name)

    def merge(self, branch: str, name: str) -> str:
        self.git("merge", "-q", "--no-ff", "-X", "theirs", "-m", name, branch)
        self.names[name] = self.git("rev-parse", "HEAD")
        return self.names[name]

    def name_of(self, sha: str) -> str:
        return next(n for n, s in self.names.items() if s == sha)


def linear(path: Path, count: int) -> Repo:
    repo = Repo(path)
    for i in range(count):
        repo.commit(f"c{i}")
    return repo


def merge_heavy(path: Path) -> Repo:
    """main: m0..m3, topic branches t1 (3 commits) and t2 (2 commits) merged in between."""
    repo = Repo(path)
    for i in range(3):
        repo.commit(f"m{i}")
    repo.branch("t1", "main")
    for i in range(3):
        repo.commit(f"t1-{i}")
    repo.checkout("main")
    repo.commit("m3")
    repo.merge("t1", "merge-t1")
    repo.branch("t2", "main")
    for i in range(2):
        repo.commit(f"t2-{i}")
    repo.checkout("main")
    repo.commit("m4")
    repo.merge("t2", "merge-t2")
    repo.commit("m5")
    return repo
