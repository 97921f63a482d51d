"""Campaigns for the dashboard's tests, and what runs them in processes of their own: the real
engine, real git and the real store with the fake build and measurement ports of tests/fakes.py.

- `controller`: the engine on one stored campaign (as tests/faultcontroller.py), its reports
  written at the end by the one function that writes them (kinds/run.py ended).
- `worker`: the real queue worker of tests/queueharness.py (slots leased in the store, a
  heartbeat), whose runs of the campaigns named in `slow` take that many seconds each, so a
  browser can watch them move.

The history follows tests/queueharness.py's convention (the culprit adds a file `slow`; a guest
of a commit that has it reads 10% lower); its last commit, the bisection's bad end, has a
subject made of markup: `XSS_SUBJECT`.
"""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.campaign.file import parse_campaign
from orchestrator.kinds.specs import BisectSpec
from orchestrator.kinds.table import record
from orchestrator.ports import KernelArtifact, RunResult
from orchestrator.store import Store
from tests import queueharness
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import Repo

XSS_SUBJECT = "net: <script>alert(1)</script> & <b>bold</b> speedup"
COMMITS = 12
CULPRIT_AT = 7


def history(path: Path) -> tuple[Repo, str]:
    """COMMITS commits, c0 (good) .. the XSS_SUBJECT one (bad); the culprit c7 adds `slow`."""
    repo = Repo(path)
    for i in range(COMMITS - 1):
        if i == CULPRIT_AT:
            (repo.path / "slow").write_text("slow\n")
            repo.git("add", "slow")
        repo.commit(f"c{i}")
    repo.commit(XSS_SUBJECT, path="xss.txt")
    return repo, repo.names[f"c{CULPRIT_AT}"]


def spec(repo: Repo, name: str = "nightly-fio") -> BisectSpec:
    """A bisection of the whole history, as tests/queueharness.py's campaign files are."""
    raw = {"name": name, "repository": str(repo.path), "good": repo.names["c0"], "bad": repo.names[XSS_SUBJECT],
           "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1}},
           "metric": {"name": "read_iops", "threshold": "-5%"}, "guest": {"disks": {"count": 1}},
           "runs_per_boot": 2}
    return BisectSpec.of(raw, parse_campaign(raw))


def stored_campaign(store: Store, repo: Repo, name: str = "nightly <i>fio</i>") -> int:
    """The bisection stored (not queued) under a row name made of markup."""
    return record(store, name, spec(repo))


def _slow(repo: Path, commit: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}:slow"],
                          capture_output=True).returncode == 0


def controller(url: str, campaign_id: int) -> None:
    """Run the stored campaign to its end, its clone where `vmbisect bisect` keeps it."""
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.kinds.run import ended
    from orchestrator.kinds.table import open_campaign, stored

    store = Store(url)
    campaign = stored(store.campaign(campaign_id)).campaign
    measurer = FakeMeasurer(lambda c: 90.0 if _slow(campaign.repository, c) else 100.0, noise=0.01, seed=7,
                            metric=campaign.metric.name)
    with store.lock(campaign_id):
        Engine(campaign, "higher", GitBisect(campaign.repository, campaign_workdir(store, campaign_id)), FakeBuilder(),
               measurer, store).run(campaign_id)
    ended(open_campaign(store, campaign_id))


class SlowSession:
    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds
        self.boot_seconds, self.host, self.guest = inner.boot_seconds, inner.host, inner.guest

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        time.sleep(self.seconds)
        return self.inner.run(params, nice)  # type: ignore[no-any-return]


class SlowLeasing(queueharness.LeasingMeasurer):
    """queueharness's measurer (a leased slot per boot) whose runs of the campaigns in `slow`
    (campaign name -> seconds a run) take that long."""

    slow: dict[str, float] = {}

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[Any]:
        with super().boot(kernel, append) as session:
            seconds = self.slow.get(self.campaign, 0.0)
            yield SlowSession(session, seconds) if seconds else session


def worker(url: str, lab: Path, watch: Path, data: Path, slow: dict[str, float]) -> None:
    """queueharness's worker (until the queue is empty), its measurer slowed (the target of a
    forked process: the module's name is rebound in this child only)."""
    SlowLeasing.slow = slow
    queueharness.LeasingMeasurer = SlowLeasing  # type: ignore[misc]
    queueharness.worker_main(url, str(lab), str(watch), str(data), timeout_s=3.0, runners=1)
