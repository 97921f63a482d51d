"""Test-only controller for fault injection (tests/faultharness.py forks it and kills it at
random moments): the real engine, real git and the real store, with the fake build and VM
ports of tests/fakes.py. Never what a user runs. `main` is the one entry point; it runs in a
forked child process (a fresh interpreter would spend seconds importing per controller), or
by hand:

    python -m tests.faultcontroller STORE_URL REPO CULPRIT CAMPAIGN_ID WORKDIR GUESTS

Each "guest" is a file GUESTS/<pid>@<pid start>-<n> while it runs; at start, files of dead
controllers are removed, as LibvirtProvider.cleanup_leftovers destroys a dead controller's
domains. Every run carries a unique token, so a run stored twice shows. The culprit is
written to WORKDIR/culprit at the end.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.campaign.file import parse_campaign
from orchestrator.ports import KernelArtifact, RunResult
from orchestrator.store import Store, process_start
from tests.fakes import FakeBuilder, FakeMeasurer, FakeSession


class TokenSession:
    """A fake session whose every run carries a unique token."""

    def __init__(self, inner: FakeSession) -> None:
        self.inner, self.boot_seconds, self.host, self.guest = inner, inner.boot_seconds, inner.host, inner.guest

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        time.sleep(0.004)
        result = self.inner.run(params, nice)
        return dataclasses.replace(result, raw={"token": uuid.uuid4().hex})


class GuestFiles(FakeMeasurer):
    def __init__(self, guests: Path, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.guest_files = guests
        guests.mkdir(parents=True, exist_ok=True)
        for leftover in guests.iterdir():
            pid, _, started = leftover.name.partition("@")
            if process_start(int(pid)) != started.split("-")[0]:
                leftover.unlink()

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[TokenSession]:
        me = f"{os.getpid()}@{process_start(os.getpid())}-{self.boots}"
        (self.guest_files / me).touch()
        try:
            with super().boot(kernel, append) as session:
                yield TokenSession(session)
        finally:
            (self.guest_files / me).unlink()


def main(url: str, repo: str, culprit: str, campaign_id: int, workdir: str, guests: str) -> None:
    bad = set(subprocess.run(["git", "-C", repo, "rev-list", f"{culprit}..HEAD", "--ancestry-path"],
                             capture_output=True, text=True, check=True).stdout.split()) | {culprit}
    head = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    root = subprocess.run(["git", "-C", repo, "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    campaign = parse_campaign({"name": "fault", "repository": repo, "good": root, "bad": head, "workload": "fake",
                               "metric": {"name": "iops", "direction": "higher", "threshold": "-5%"},
                               "runs_per_boot": 3})
    store = Store(url)
    measurer = GuestFiles(Path(guests), lambda c: 90.0 if c in bad else 100.0, noise=0.01,
                          seed=int.from_bytes(os.urandom(4), "little"))
    with store.lock(campaign_id):
        outcome = Engine(campaign, "higher", GitBisect(Path(repo), Path(workdir)), FakeBuilder(), measurer,
                         store).run(campaign_id)
    (Path(workdir) / "culprit").write_text(outcome.culprit)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
