"""A stored bisection for the dashboard's tests, and a controller that runs it in a process of
its own (as tests/faultcontroller.py does): the real engine, real git and the real store, with
the fake build and measurement ports of tests/fakes.py, each run slowed so a browser can watch
the campaign move. At the end its reports are written by the one function that writes them
(kinds.ended), as after any run.

The history's last commit, the bisection's bad end, has a subject that is markup:
`XSS_SUBJECT`."""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.campaign import parse_campaign
from orchestrator.ports import KernelArtifact, RunResult
from orchestrator.specs import BisectSpec, record
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer, FakeSession
from tests.integration.gitrepo import Repo

XSS_SUBJECT = "net: <script>alert(1)</script> & <b>bold</b> speedup"
COMMITS = 12


def history(path: Path) -> tuple[Repo, str]:
    """COMMITS commits, c0 (good) .. the XSS_SUBJECT one (bad); the culprit is c7."""
    repo = Repo(path)
    for i in range(COMMITS - 1):
        repo.commit(f"c{i}")
    repo.commit(XSS_SUBJECT, path="xss.txt")
    return repo, repo.names["c7"]


def stored_campaign(store: Store, repo: Repo, name: str = "nightly <i>fio</i>") -> int:
    raw = {"name": "nightly-fio", "repository": str(repo.path), "good": repo.names["c0"], "bad": repo.names[XSS_SUBJECT],
           "workload": "fio", "metric": {"name": "iops", "direction": "higher", "threshold": "-5%"},
           "runs_per_boot": 2}
    return record(store, name, BisectSpec.of(raw, parse_campaign(raw)))


class SlowSession:
    def __init__(self, inner: FakeSession, seconds: float) -> None:
        self.inner, self.seconds = inner, seconds
        self.boot_seconds, self.host, self.guest = inner.boot_seconds, inner.host, inner.guest

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        time.sleep(self.seconds)
        return self.inner.run(params, nice)


class SlowMeasurer(FakeMeasurer):
    def __init__(self, run_seconds: float, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run_seconds = run_seconds

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[SlowSession]:  # type: ignore[override]
        with super().boot(kernel, append) as session:
            yield SlowSession(session, self.run_seconds)


def controller(url: str, culprit: str, campaign_id: int, run_seconds: float) -> None:
    """Run the stored campaign to its end, its clone where `vmbisect bisect` keeps it (the
    target of a forked process)."""
    from orchestrator.bisect.workdir import campaign_workdir
    from orchestrator.commands.kinds import ended
    from orchestrator.specs import stored

    store = Store(url)
    campaign = stored(store.campaign(campaign_id)).campaign
    repo = str(campaign.repository)
    order = GitBisect(campaign.repository, campaign_workdir(store, campaign_id))
    measurer = SlowMeasurer(run_seconds, lambda c: 90.0 if _after(repo, culprit, c) else 100.0, noise=0.01, seed=7)
    with store.lock(campaign_id):
        Engine(campaign, "higher", order, FakeBuilder(), measurer, store).run(campaign_id)
    ended(store, campaign_id)


def _after(repo: str, culprit: str, commit: str) -> bool:
    """Whether `commit` has the culprit (a revert made in vmbisect's clone is not in `repo`)."""
    return subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", culprit, commit],
                          capture_output=True).returncode == 0
