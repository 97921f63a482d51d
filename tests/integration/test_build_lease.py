"""Kernel builds lease this machine's CPUs the way guests lease their slots
(orchestrator/hosts/buildcpus.py), checked with two real processes: a fake kernel tree
(tests/integration/fakekernel.py) built by the real KernelBuilder in one, a guest pool asking for
a slot of this machine in the other, every ordering read from timestamps the build's make wrote."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.hosts.cpulocks import CpuLocks
from orchestrator.hosts.labfile import parse_lab
from orchestrator.hosts.pool import GuestPool
from tests.integration.fakekernel import commit_all, make_tree

HERE = {"hosts": [{"name": "here"}]}  # this machine, one unpinned slot: every CPU

# The fake tree's bzImage step runs the program named in `needs-tool`: this one notes when it
# ran and on which CPUs, and takes its time, as a compile would.
SLOW_TOOL = """#!/bin/sh
date +%s.%N > "{marks}/started"
grep Cpus_allowed_list /proc/self/status | cut -f2 > "{marks}/cpus"
sleep 2
date +%s.%N > "{marks}/ended"
"""

CHILD = """
import sys
from pathlib import Path
from orchestrator.hosts.buildcpus import BuildCpus
from orchestrator.hosts.cpulocks import CpuLocks
from orchestrator.hosts.labfile import parse_lab
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kbuild.kernelstore import KernelStore

root, repo, work = map(Path, sys.argv[1:4])
locks = CpuLocks(root / "cpus")
locks.poll_s = 0.1
lease = BuildCpus(parse_lab({"hosts": [{"name": "here"}]}), locks).hold
builder = KernelBuilder(KernelStore(work / "kernels"), work / "kbuild", None, lease=lease,
                        progress=lambda m: print(m, flush=True))
builder.build(repo, "main", parse_recipe(["tinyconfig"]))
print("built", flush=True)
"""


def slow_tree(tmp_path: Path) -> tuple[Path, Path]:
    repo, marks = tmp_path / "linux", tmp_path / "marks"
    repo.mkdir()
    marks.mkdir()
    make_tree(repo)
    tool = tmp_path / "slow-tool"
    tool.write_text(SLOW_TOOL.format(marks=marks))
    tool.chmod(0o755)
    (repo / "needs-tool").write_text(f"{tool}\n")
    commit_all(repo, "a tool that takes its time")
    return repo, marks


def build_in_a_process(tmp_path: Path, repo: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), str(repo), str(tmp_path / "work")],
                            stdout=subprocess.PIPE, text=True)


def guest_pool(tmp_path: Path) -> GuestPool:
    locks = CpuLocks(tmp_path / "cpus")
    locks.poll_s = 0.1
    return GuestPool(parse_lab(HERE), lambda host: None, locks)  # type: ignore[arg-type,return-value]


def mark(marks: Path, name: str, timeout_s: float = 60.0) -> float:
    path = marks / name
    deadline = time.monotonic() + timeout_s
    while not (path.is_file() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"the build never wrote {name}"
        time.sleep(0.05)
    return float(path.read_text())


def test_a_guest_slot_waits_for_a_build_of_another_process_which_ran_on_the_cpus_it_leased(tmp_path):
    repo, marks = slow_tree(tmp_path)
    build = build_in_a_process(tmp_path, repo)
    pool = guest_pool(tmp_path)
    try:
        mark(marks, "started")
        lease = pool.acquire(timeout_s=60)
        got = time.time()
        pool.release(lease)
        assert build.stdout is not None and "built" in build.stdout.read()
        assert build.wait(30) == 0
    finally:
        build.kill()
        pool.close()
    assert got >= mark(marks, "ended"), "the guest's slot was handed out while the build ran on its CPUs"
    assert lease.host.name == "here"
    count = os.cpu_count() or 1
    assert (marks / "cpus").read_text().strip() == (f"0-{count - 1}" if count > 1 else "0"), "make ran on every CPU"


def test_a_build_waits_for_a_guest_of_another_process_and_gets_the_cpus_before_that_process_again(tmp_path):
    repo, marks = slow_tree(tmp_path)
    pool = guest_pool(tmp_path)
    held = pool.acquire()
    build = build_in_a_process(tmp_path, repo)
    try:
        assert build.stdout is not None
        for line in build.stdout:  # the build says it waits for the guest's CPUs
            if line.startswith("waiting for CPUs"):
                break
        else:
            raise AssertionError("the build never waited")
        released = time.time()
        pool.release(held)
        again = pool.acquire(timeout_s=60)  # the guest's campaign asks again at once, after its boot
        got = time.time()
        pool.release(again)
        assert "built" in build.stdout.read() and build.wait(30) == 0
    finally:
        build.kill()
        pool.close()
    assert mark(marks, "started") >= released, "the build compiled beside the guest"
    assert got >= mark(marks, "ended"), "the CPUs went back to the guest's process before the waiting build"
    assert again.host.name == "here"
