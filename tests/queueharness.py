"""Queue workers in processes of their own with the fake build and VM ports (tests/fakes.py),
the real engine, real git, the real store and the real worker (orchestrator/queue/worker.py):
forked by the queue tests, SIGKILLed at random moments (tests/integration/test_queue_workers.py,
`make reliability`). Never what a user runs.

Each campaign is a throwaway repository of 8 commits whose culprit adds a file `slow`: a guest
of a commit that has it reads 10% lower. Every boot leases a slot of the worker's lab from the
worker's pool (the real GuestPool and its slot leases in the store; nothing is launched) and
claims, while it lasts, a file per host CPU of the slot and one for its campaign under WATCH:
a claim already held by a live process is a violation (two guests on one CPU, one campaign run
by two workers at once), written to WATCH/violations. A claim of a dead process is a leftover
its killed worker could not remove (a real one's domain is destroyed by the next pool's
cleanup), taken over.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Iterator

from orchestrator.hosts.pool import GuestPool
from orchestrator.ports import KernelArtifact
from orchestrator.store import Store, process_start
from tests.faultcontroller import GuestFiles
from tests.integration.gitrepo import Repo

CAMPAIGN = """name: {name}
repository: {repo}
good: {good}
bad: {bad}
workload: {{name: fio, params: {{rw: randread, disks: 1}}}}
metric: {{name: read_iops, threshold: -5%}}
guest: {{disks: {{count: 1}}}}
runs_per_boot: 3
"""


def me() -> str:
    return f"{os.getpid()}@{process_start(os.getpid())}"


def _alive(claim: str) -> bool:
    pid, _, started = claim.partition("@")
    return pid.isdigit() and process_start(int(pid)) == started != ""


def claim(watch: Path, key: str) -> None:
    """WATCH/<key> names this process while it holds it; held by another live process: a
    violation."""
    path = watch / key
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            holder = path.read_text() if path.exists() else ""
            if holder and _alive(holder) and holder != me():
                with (watch / "violations").open("a") as f:
                    f.write(f"{key}: held by {holder}, wanted by {me()}\n")
                return
            path.unlink(missing_ok=True)  # a killed worker's leftover
            continue
        os.write(fd, me().encode())
        os.close(fd)
        return


def drop(watch: Path, key: str) -> None:
    path = watch / key
    if path.exists() and path.read_text() == me():
        path.unlink()


class LeasingMeasurer(GuestFiles):
    """GuestFiles (a file per live guest, unique run tokens) whose every boot leases a slot of
    the worker's pool first, and claims the slot's CPUs and its campaign under `watch`; each boot
    lasts at least `pace_s` (a test that stops a campaign mid-way needs it to last)."""

    def __init__(self, pool: GuestPool, watch: Path, campaign: str, *args: Any, pace_s: float = 0.0,
                 **kwargs: Any) -> None:
        super().__init__(watch / "guests", *args, **kwargs)
        self.pool, self.watch, self.campaign, self.pace_s = pool, watch, campaign, pace_s

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[Any]:
        lease = self.pool.acquire()
        keys = [f"cpus/{lease.host.name}-{c}" for c in lease.slot.cpus] + [f"campaigns/{self.campaign}"]
        try:
            for key in keys:
                claim(self.watch, key)
            with (self.watch / "boots").open("a") as f:
                f.write(f"{self.campaign} {lease.host.name}/{lease.slot.index} {time.monotonic():.3f}\n")
            with super().boot(kernel, append) as session:
                time.sleep(self.pace_s)
                yield session
        finally:
            for key in keys:
                drop(self.watch, key)
            self.pool.release(lease)


def worker_main(url: str, lab: str, watch: str, data: str, timeout_s: float, runners: int,
                pace_s: float = 0.0) -> None:
    """A worker (with `once`) whose campaigns are measured by LeasingMeasurer."""
    from orchestrator import wiring
    from orchestrator.kinds.run import run_stored
    from orchestrator.queue.worker import Config, run_worker
    from tests.fakes import FakeBuilder

    os.environ["VMBISECT_DATA_DIR"] = data
    # Ctrl-C is the test's to send: pytest started as a background job of a non-interactive
    # shell (make test under `... &`) has SIGINT ignored, and a forked worker inherits that.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    log = Path(watch) / f"worker-{os.getpid()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr = sys.stdout = open(log, "a", buffering=1)  # noqa: SIM115 - this process's whole life

    def bisection(campaign: Any, choice: Any, clone: Path, pool: GuestPool, host: str | None = None) -> Any:
        def value(commit: str) -> float:
            slow = subprocess.run(["git", "-C", str(campaign.repository), "cat-file", "-e", f"{commit}:slow"],
                                  capture_output=True).returncode == 0
            return 90.0 if slow else 100.0

        measurer = LeasingMeasurer(pool, Path(watch), campaign.name, value, noise=0.01, metric=campaign.metric.name,
                                   seed=int.from_bytes(os.urandom(4), "little"), pace_s=pace_s)
        return FakeBuilder(), measurer

    wiring.bisection = bisection  # type: ignore[assignment]  # the fake ports, in this child process only
    # one slot a campaign, its guests through LeasingMeasurer (the engine's own slots over a lab are
    # the engine cases'; lab_slots would make real measurers)
    wiring.lab_slots = lambda *_args: []  # type: ignore[assignment]
    run_worker(Store(url), Config(run_stored, Path(lab), heartbeat_timeout_s=timeout_s, once=True, poll_s=0.2),
               runners)


def controller_main(argv: list[str], watch: str, data: str) -> None:
    """`vmbisect ARGV` in the foreground (cli.main, its exit code the process's), its guests
    measured by LeasingMeasurer on the pool of the campaign's lab file."""
    from orchestrator import wiring
    from orchestrator.cli import main
    from tests.fakes import FakeBuilder

    os.environ["VMBISECT_DATA_DIR"] = data
    log = Path(watch) / f"controller-{os.getpid()}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr = sys.stdout = open(log, "a", buffering=1)  # noqa: SIM115 - this process's whole life

    def bisection(campaign: Any, choice: Any, clone: Path, pool: GuestPool, host: str | None = None) -> Any:
        return FakeBuilder(), LeasingMeasurer(pool, Path(watch), campaign.name, lambda _c: 100.0, noise=0.01,
                                              metric=campaign.metric.name, seed=1)

    wiring.bisection = bisection  # type: ignore[assignment]  # the fake ports, in this child process only
    wiring.lab_slots = lambda *_args: []  # type: ignore[assignment]
    sys.exit(main(argv))


def spawn_controller(argv: list[str], watch: Path, data: Path) -> BaseProcess:
    proc = get_context("fork").Process(target=controller_main, args=(argv, str(watch), str(data)))
    proc.start()
    return proc


def wait_for_boots(watch: Path, proc: BaseProcess, boots: int, timeout_s: float = 60.0) -> None:
    """Until the workers under `watch` have started `boots` boots (the worker still alive)."""
    deadline = time.monotonic() + timeout_s
    while not ((watch / "boots").exists() and len((watch / "boots").read_text().splitlines()) >= boots):
        assert time.monotonic() < deadline and proc.is_alive(), "the worker booted too little"
        time.sleep(0.1)


def spawn_worker(url: str, lab: Path, watch: Path, data: Path, timeout_s: float, runners: int = 1,
                 pace_s: float = 0.0) -> BaseProcess:
    proc = get_context("fork").Process(target=worker_main,
                                       args=(url, str(lab), str(watch), str(data), timeout_s, runners, pace_s))
    proc.start()
    return proc


def lab_file(path: Path, slots: int = 2, host: str = "local") -> Path:
    """One local host with `slots` slots of one CPU each (nothing is launched on it); a host
    other than "local" is a machine of its own for the leases (its own libvirt URI)."""
    uri = "" if host == "local" else f"    uri: qemu:///system?lab={host}\n"
    path.write_text(f"hosts:\n  - name: {host}\n{uri}    slots:\n"
                    + "".join(f"      - cpus: [{i}]\n" for i in range(slots)))
    return path


@dataclass
class Campaigns:
    files: list[Path]
    culprits: dict[str, str]  # campaign name -> culprit commit


def campaigns(root: Path, n: int, rng: random.Random, commits: int = 8) -> Campaigns:
    """`n` campaign files, each over a repository of its own with a random culprit."""
    files, culprits = [], {}
    for i in range(n):
        name = f"q{i}"
        culprit_at = rng.randrange(1, commits)
        repo = Repo(root / f"repo{i}")
        for j in range(commits):
            if j == culprit_at:  # the culprit adds `slow`: every later commit has it too
                (repo.path / "slow").write_text("slow\n")
                repo.git("add", "slow")
            repo.commit(f"c{j}")
        shas = [repo.names[f"c{j}"] for j in range(commits)]
        culprit = shas[culprit_at]
        path = root / f"{name}.yaml"
        path.write_text(CAMPAIGN.format(name=name, repo=repo.path, good=shas[0], bad=shas[-1]))
        files.append(path)
        culprits[name] = culprit
    return Campaigns(files, culprits)


@dataclass
class Figures:
    campaigns: int = 0
    workers: int = 0
    kills: int = 0
    right_culprit: int = 0
    runs_stored: int = 0
    samples_lost: int = 0
    counted_twice: int = 0
    half_written_runs: int = 0
    taken_over: int = 0
    violations: int = 0
    leftover_guests: int = 0
    leftover_leases: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return (self.right_culprit == self.campaigns and not (
            self.samples_lost or self.counted_twice or self.half_written_runs or self.violations
            or self.leftover_guests or self.leftover_leases) and not self.problems)

    def as_dict(self) -> dict[str, object]:
        """The figures, with the names scripts/reliability.py tabulates (a worker for a controller)."""
        return {**asdict(self), "controllers": self.workers, "stale_locks_taken_over": self.taken_over}


def tokens(store: Store, cid: int) -> list[str]:
    return [r.raw["raw"]["token"] for r in store.runs(cid)]


def check(store: Store, ids: dict[str, int], culprits: dict[str, str], before: dict[int, set[str]],
          figures: Figures) -> None:
    """After every worker ended: each campaign done with its culprit, no run lost, none twice."""
    from orchestrator.kinds.table import read_result as read

    for name, cid in ids.items():
        row = store.campaign(cid)
        result = read(row.kind, row.state, row.result)
        named = getattr(result, "culprit", None)
        figures.right_culprit += row.state == "done" and named == culprits[name]
        if row.state != "done" or named != culprits[name]:
            figures.problems.append(f"campaign {cid}: {row.state}, culprit {str(named)[:12]}, "
                                    f"wanted {culprits[name][:12]}")
        got = tokens(store, cid)
        figures.samples_lost += len(before.get(cid, set()) - set(got))
        figures.counted_twice += sum(k - 1 for k in Counter(got).values() if k > 1)
        figures.half_written_runs += abs(len(got) - store.sample_count(cid))
        figures.runs_stored += len(got)
