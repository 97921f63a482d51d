"""A bisection step whose real guest hangs or never answers.

The real engine, git and SQLite store; the step commit is measured in a real libvirt guest of
the distribution kernel through the real measurer of the one layer (orchestrator/measure/guests.py:
the guest pool on this machine, image builder, agent, fio). The
endpoints' and the other steps' builds and guests are the fakes of tests/fakes.py, so each test
boots one guest and the bisection still runs to its end."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from orchestrator.campaign.workload import choose_workload
from orchestrator.hosts.labfile import local_lab
from orchestrator.hosts.pool import GuestPool
from orchestrator.measure.guests import PoolMeasurer
from orchestrator.measure.kernels import Kernels
from orchestrator.ports import KernelArtifact
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import linear
from tests.integration.test_engine_cases import bisect, make_campaign, regression_at
from tests.integration.vmhost import our_domains

pytestmark = pytest.mark.vm


class RealGuestAtFirstStep:
    """The first commit booted that is neither endpoint is measured in a real guest of the
    distribution kernel (every later boot of it too); every other commit by `fake`."""

    def __init__(self, real: PoolMeasurer, fake: FakeMeasurer, endpoints: set[str], distro: Any) -> None:
        self.real, self.fake, self.endpoints = real, fake, endpoints
        self.distro = Kernels().file(distro.image, modules=distro.release)
        self.host = fake.host
        self.target: str | None = None
        self.real_boots = 0
        self.real_seconds = 0.0  # from asking for the real guest until it was gone

    def check(self, kernel: KernelArtifact) -> None:
        self.fake.check(kernel)

    def move_on(self) -> bool:
        return self.fake.move_on()

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[Any]:
        if kernel.commit in self.endpoints or self.target not in (None, kernel.commit):
            with self.fake.boot(kernel, append) as session:
                yield session
            return
        self.target = kernel.commit
        self.real_boots += 1
        start = time.monotonic()
        try:
            with self.real.boot(replace(self.distro, commit=kernel.commit), append) as s:
                yield s
        finally:
            self.real_seconds += time.monotonic() - start


def one_real_step(tmp_path: Path, launcher: Any, distro: Any, **campaign: Any) -> tuple[Any, Any, int, Any, Any]:
    repo = linear(tmp_path / "u", 8)
    c = make_campaign(repo, "c0", "c7", workload={"name": "fio", "params": campaign.pop("params", {})},
                      guest={"vcpus": 1, "memory_mib": 512, "disks": {"count": 1, "size_mib": 64}},
                      accel="tcg", **campaign)
    choice = choose_workload(c)
    real = PoolMeasurer(GuestPool(local_lab(), lambda _host: launcher), c.guest, choice.workload, choice.params, {},
                        "tcg", c.append, c.timeouts.boot_s, c.timeouts.run_s, one_host=True)
    measurer = RealGuestAtFirstStep(real, FakeMeasurer(regression_at(repo, "c5")),
                                    {repo.names["c0"], repo.names["c7"]}, distro)
    outcome, store, cid = bisect(tmp_path, repo, c, FakeBuilder(), measurer)
    return outcome, store, cid, repo, measurer


def step_of(store: Any, cid: int, commit: str) -> Any:
    (decided,) = [d for d in store.decisions(cid) if d.commit == commit and d.role == "step"]
    return decided


def test_a_workload_that_hangs_in_a_real_guest_ends_at_run_s_and_the_step_is_skipped(tmp_path, launcher, distro):
    # fio told to run 600 s against a run_s of 20 s stands for a hung tool: neither the agent nor
    # the controller can tell them apart (the CLI's preflight refuses such a campaign; the engine
    # is built directly here).
    outcome, store, cid, repo, measurer = one_real_step(
        tmp_path, launcher, distro, params={"runtime": 600, "ramp_time": 0}, timeouts={"run_s": 20, "boot_s": 180})
    # A run that stalls may be the emulator's: the judge boots the kernel once more before it
    # blames it, and stores each stalled boot with the agent's snapshot of the guest.
    skipped = step_of(store, cid, measurer.target)
    assert skipped.verdict == "skip" and skipped.reason.startswith("workload failed: fio timed out"), skipped.reason
    assert measurer.real_boots == 2 and measurer.real_seconds < 2 * (20 + 180 + 60)  # at run_s, not fio's 600 s
    boots = [b for b in store.boots(cid) if b.commit == measurer.target]
    assert [b.status for b in boots] == ["stalled", "stalled"]  # the guests came up; a run in each stalled
    for boot in boots:
        assert boot.error.startswith("fio timed out") and "tasks of the command's process group " in boot.error
        assert any(line.endswith(" fio") for line in boot.error.splitlines()), boot.error
    assert not [r for r in store.runs(cid) if r.commit == measurer.target]
    assert outcome.culprit == repo.names["c5"]
    assert our_domains(launcher) == []


def test_a_guest_that_never_answers_ends_at_boot_s_is_booted_once_more_and_then_the_step_is_skipped(
        tmp_path, launcher, distro):
    # rdinit=/bin/sh: the kernel boots and runs a shell as PID 1, which waits on the console
    # forever; no panic to notice, so only the boot timeout ends it. A hang may be the
    # emulator's: the judge boots the kernel once more before it blames it.
    outcome, store, cid, repo, measurer = one_real_step(
        tmp_path, launcher, distro, append="rdinit=/bin/sh", timeouts={"run_s": 600, "boot_s": 20})
    skipped = step_of(store, cid, measurer.target)
    assert skipped.verdict == "skip", skipped.reason
    assert skipped.reason.startswith("boot failed: no answer from the guest agent within 20 s"), skipped.reason
    boots = [b for b in store.boots(cid) if b.commit == measurer.target]
    assert [b.status for b in boots] == ["failed", "failed"]
    assert all("Run /bin/sh as init process" in b.error for b in boots)
    assert measurer.real_boots == 2 and 40 <= measurer.real_seconds < 80
    assert outcome.culprit == repo.names["c5"]
    assert our_domains(launcher) == []
