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


def kernel_shaped(path: Path, commits: int, seed: int, mechanism: str = "queue-depth") -> Repo:
    """bench.history's kernel-shaped history of `commits` commits on a small stand-in for the
    release (a few .c files over the tree, a header, a document, the files the planted build and
    boot breaks go in, and the mechanism's files as its patch's hunks need them): "release" and
    n0, n1, ... for the history's commits, the mechanism's patch as the culprit."""
    from bench.history.__main__ import MECHANISMS, write
    from bench.history.files import BOOT_FILE, BUILD_FILE
    from bench.history.shape import kernel_shape
    from orchestrator.demo import mailinfo

    repo = Repo(path)
    series = MECHANISMS[mechanism]
    patch = next(p for p in sorted(series.dir.glob("*.patch")) if mailinfo(p)[0]["Subject"] == series.culprit_subject)
    files = {f"{d}/part{k}.c": f"/* {d} part {k} */\n" + "".join(f"int {d.replace('/', '_')}_{k}_{f}(void)\n{{\n"
                                                                 f"\treturn {f};\n}}\n\n" for f in range(8))
             for d in ("kernel", "mm", "fs/ext4", "drivers/scsi", "net/core", "block") for k in range(10)}
    files |= {BUILD_FILE: "/* fork */\n", BOOT_FILE: "/* main */\n", "Documentation/index.rst": "Index\n=====\n",
              "include/linux/kernel.h": "#ifndef _LINUX_KERNEL_H\n#define _LINUX_KERNEL_H\n#endif\n"}
    files |= preimages(patch.read_text())
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "release")
    repo.names["release"] = repo.git("rev-parse", "HEAD")
    made = write(path / ".git", repo.names["release"], kernel_shape(commits, seed), seed, series)
    repo.names |= {f"n{i}": sha for i, sha in enumerate(made.ids)}
    repo.git("reset", "-q", "--hard", made.ids[-1])
    return repo


def preimages(patch: str) -> dict[str, str]:
    """For each file a patch changes, the lines its hunks expect there (context and removed
    lines), hunk after hunk: a file the patch applies to."""
    out: dict[str, list[str]] = {}
    current = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            current = out.setdefault(line.split(" b/", 1)[1], [])
        elif current is not None and line[:1] in (" ", "-") and not line.startswith("--- "):
            current.append(line[1:])
        elif current is not None and line == "":
            current.append("")
    return {name: "\n".join(lines) + "\n" for name, lines in out.items()}
