"""A full file system under the store, the kernel build directory and the guest image cache
(a size-limited tmpfs this test mounts; needs root): a one-line infrastructure error, the store
not corrupt, and the work continues once space is back."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.campaign.file import parse_campaign
from orchestrator.errors import InfraError
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.kernelstore import KernelStore
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kinds.run import paused_on_infra_error
from orchestrator.store import Store
from tests.conftest import require
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.fakekernel import make_tree
from tests.integration.gitrepo import linear


@pytest.fixture
def small_fs(tmp_path: Path):
    """A 16 MiB tmpfs; `fill(keep)` leaves `keep` bytes free, `free()` gives the space back."""
    # Not something `make setup` can provide, so a skip even under CI=true.
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    ballast = mnt / "ballast"

    class Fs:
        path = mnt

        def fill(self, keep: int) -> None:
            st = os.statvfs(mnt)
            with ballast.open("ab") as f:
                f.write(b"\0" * max(st.f_bavail * st.f_frsize - keep, 0))

        def free(self) -> None:
            ballast.unlink(missing_ok=True)

    yield Fs()
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_store_write_on_a_full_disk_pauses_and_resume_finds_the_culprit(tmp_path, small_fs):
    repo = linear(tmp_path / "u", 24)
    bad = {repo.names[f"c{i}"] for i in range(13, 24)}
    c = parse_campaign({"name": "full", "repository": str(repo.path), "good": repo.names["c0"],
                        "bad": repo.names["c23"], "workload": "fake",
                        "metric": {"name": "iops", "direction": "higher", "threshold": "-5%"},
                        "runs_per_boot": 3})
    db = small_fs.path / "v.db"
    store = Store(f"sqlite:///{db}")
    cid = store.new_campaign("full", {})

    class FillsTheDisk(FakeMeasurer):
        """The disk fills up at the fourth boot, between stored runs."""

        @contextmanager
        def boot(self, kernel, append=None):  # type: ignore[no-untyped-def]
            if self.boots == 3:
                small_fs.fill(keep=0)
            with super().boot(kernel, append) as session:
                yield session

    def engine(measurer_class: type[FakeMeasurer] = FakeMeasurer) -> Engine:
        measurer = measurer_class(lambda commit: 90.0 if commit in bad else 100.0, noise=0.01)
        return Engine(c, "higher", GitBisect(repo.path, tmp_path / "work"), FakeBuilder(), measurer, store)

    with pytest.raises(InfraError, match=rf"^store: database or disk is full; campaign {cid} paused"):
        with paused_on_infra_error(store, cid, store.campaign(cid).state):
            engine(FillsTheDisk).run(cid)
    assert sqlite3.connect(db).execute("pragma integrity_check").fetchall() == [("ok",)]
    stored = [r.id for r in store.runs(cid)]
    assert stored, "the disk filled up before the first run: the test proves nothing"

    small_fs.free()
    outcome = engine().run(cid)
    assert repo.name_of(outcome.culprit) == "c13"
    runs = [r.id for r in store.runs(cid)]
    assert runs[:len(stored)] == stored and max(Counter(runs).values()) == 1
    assert store.sample_count(cid) == len(runs)


def test_kernel_build_on_a_full_disk_is_an_infra_error_and_builds_once_space_is_back(tmp_path, small_fs):
    src = tmp_path / "linux"
    src.mkdir()
    make_tree(src)
    (src / "drivers" / "big.c").write_bytes(b"/* padding */\n" * 40000)  # an object larger than what is left
    subprocess.run(["git", "-C", str(src), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(src), "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "big"],
                   check=True)
    builder = KernelBuilder(KernelStore(tmp_path / "kernels"), small_fs.path / "kbuild", ccache_dir=None, jobs=1)
    small_fs.fill(keep=400 * 1024)
    with pytest.raises(InfraError, match="No space left on device|Out of diskspace"):
        builder.build(src, "HEAD", parse_recipe(["CONFIG_PRINTK=y"]))
    assert builder.store.entries() == []
    small_fs.free()
    image = builder.build(src, "HEAD", parse_recipe(["CONFIG_PRINTK=y"]))
    assert image.path.is_file() and not image.from_cache


def test_guest_image_on_a_full_cache_is_an_infra_error_and_nothing_half_written_is_published(tmp_path, small_fs):
    from orchestrator.image import DEFAULT_TOOLS, GuestImageBuilder, ImageTool

    require(os.path.isfile(DEFAULT_TOOLS["busybox"].candidates[0]), "busybox-static missing (make setup)")
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\necho stand-in agent\n")
    agent.chmod(0o755)
    tools = {"busybox": DEFAULT_TOOLS["busybox"], "fio": ImageTool(("/usr/bin/env",), "coreutils")}
    builder = GuestImageBuilder(small_fs.path / "images", agent, tools=tools)
    small_fs.fill(keep=64 * 1024)
    with pytest.raises(InfraError, match="cannot write guest image in .*No space left on device"):
        builder.build()
    assert [p.name for p in (small_fs.path / "images").iterdir() if not p.name.startswith(".")] == []
    small_fs.free()
    image = builder.build()
    assert image.path.is_file() and not image.from_cache
