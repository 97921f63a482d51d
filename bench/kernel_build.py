"""Kernel build times on linux-source-6.1 with the guest base recipe: `make bench-build`.

Prints, for one sequence of builds in a private state directory (its own store, build
directories and an emptied ccache, so "cold" is really cold):
  cold            first build: clone checkout, configure, compile everything
  no-op           a commit touching only Documentation/: make finds nothing to do
  one driver .c   a commit changing drivers/virtio/virtio.c
  wide header     a commit adding a declaration to include/linux/kernel.h (most files recompile)
  cache hit       the first commit again, in-process and as a `vmbisect build` process
  fresh dir       the first commit in a new build directory, ccache warm from the cold build
Figures only; nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.kbuild.builder import default_builder
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kbuild.source import (
    DEBIAN_TARBALL,
    default_repo_path,
    ensure_linux_source_repo,
)
from orchestrator.wiring import machine_build_lease

STATE = Path(os.environ.get("VMBISECT_BENCH_DIR", Path.home() / ".cache" / "vmbisect-bench" / "kbuild"))

BENCH_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
             "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
             "GIT_AUTHOR_DATE": "2023-01-02T00:00:00+0000", "GIT_COMMITTER_DATE": "2023-01-02T00:00:00+0000"}


def git(repo: Path, *args: str, stdin: str | None = None, index: Path | None = None) -> str:
    env = {**os.environ, **BENCH_ENV, **({"GIT_INDEX_FILE": str(index)} if index else {})}
    return subprocess.run(["git", f"--git-dir={repo}", *args], input=stdin, capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def commit_change(repo: Path, parent: str, path: str, append: str, message: str) -> str:
    """A commit on `parent` with `append` added to `path`, made without a working tree."""
    blob = git(repo, "hash-object", "-w", "--stdin", stdin=git(repo, "show", f"{parent}:{path}") + "\n" + append)
    index = STATE / "bench.index"
    git(repo, "read-tree", parent, index=index)
    git(repo, "update-index", "--cacheinfo", f"100644,{blob},{path}", index=index)
    tree = git(repo, "write-tree", index=index)
    return git(repo, "commit-tree", tree, "-p", parent, "-m", message)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--recipe", action="append", default=[], help="--config items (default guest-base)")
    a = p.parse_args()
    source = ensure_linux_source_repo(DEBIAN_TARBALL, default_repo_path(DEBIAN_TARBALL))
    # From here on everything vmbisect keeps goes under STATE, for this process and its children.
    os.environ["VMBISECT_CACHE_DIR"] = str(STATE / "cache")
    os.environ["VMBISECT_DATA_DIR"] = str(STATE / "data")
    for sub in ("cache", "data"):
        shutil.rmtree(STATE / sub, ignore_errors=True)
    STATE.mkdir(parents=True, exist_ok=True)
    repo = STATE / "linux.git"
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", "--bare", "--shared", str(source.path), str(repo)], check=True)
    base = source.commit
    doc = commit_change(repo, base, "Documentation/process/howto.rst", "bench\n", "docs only")
    driver = commit_change(repo, doc, "drivers/virtio/virtio.c",
                           "static const int vmbisect_bench_marker __used = 1;\n", "one driver file")
    header = commit_change(repo, driver, "include/linux/kernel.h",
                           "extern int vmbisect_bench_marker_decl;\n", "widely included header")
    recipe = parse_recipe(a.recipe)
    builder = default_builder(machine_build_lease())
    print(f"linux-source-6.1 ({base[:12]}), recipe {' + '.join(recipe.describe())}, -j{builder.jobs}, "
          f"ccache {'on' if builder.ccache_dir else 'off'} (emptied first), state in {STATE}", flush=True)
    rows: list[tuple[str, float, str]] = []

    def timed(label: str, rev: str) -> float:
        started = time.monotonic()
        image = builder.build(repo, rev, recipe)
        took = time.monotonic() - started
        rows.append((label, took, "cache hit" if image.from_cache else "built"))
        print(f"{label:<28} {took:8.2f} s  {rows[-1][2]}", flush=True)
        return took

    cold = timed("cold", base)
    timed("no-op (docs-only commit)", doc)
    timed("one driver .c changed", driver)
    timed("wide header changed", header)
    timed("cache hit (in process)", base)
    started = time.monotonic()
    subprocess.run([str(Path(sys.executable).parent / "vmbisect"), "build", "--repo", str(repo), "--commit", base],
                   check=True, capture_output=True)
    print(f"{'cache hit (vmbisect build)':<28} {time.monotonic() - started:8.2f} s  whole command", flush=True)
    for build_dir in (STATE / "data" / "kbuild").glob("*/build/*"):
        shutil.rmtree(build_dir)
    shutil.rmtree(builder.store.root)
    fresh = timed("fresh dir, warm ccache", base)
    print(f"fresh dir / cold = {fresh / cold:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
