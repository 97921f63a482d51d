"""SIGKILL the controller at random moments of simulated campaigns and resume each one
(tests/faultcontroller.py: real engine, git and store; fake build and VM ports).

Per campaign: a random culprit in a 24-commit history, 1-4 kills at moments drawn uniformly
over a measured campaign's length, a resume after each kill, until a controller finishes.
Checked after every controller: no run stored before a kill is missing after it (lost), no
run token appears twice (counted twice), every run has its one sample (no half-written
run); at the end: the named culprit, and no guest file left by any controller (leftover).
`make reliability` runs it with large budgets and tabulates the figures.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path

from orchestrator.store import Store
from tests import faultcontroller
from tests.integration.gitrepo import linear


@dataclass
class Figures:
    campaigns: int = 0
    kills: int = 0
    controllers: int = 0
    right_culprit: int = 0
    runs_stored: int = 0
    samples_lost: int = 0
    counted_twice: int = 0
    half_written_runs: int = 0
    leftover_guests: int = 0
    stale_locks_taken_over: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return (self.right_culprit == self.campaigns and not (self.samples_lost or self.counted_twice
                or self.half_written_runs or self.leftover_guests) and not self.problems)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _spawn(url: str, repo: Path, culprit: str, cid: int, work: Path) -> BaseProcess:
    proc = multiprocessing.get_context("fork").Process(
        target=faultcontroller.main, args=(url, str(repo), culprit, cid, str(work / f"w{cid}"), str(work / "guests")))
    proc.start()
    return proc


def _tokens(store: Store, cid: int) -> list[str]:
    return [r.raw["raw"]["token"] for r in store.runs(cid)]


def kill_and_resume(url: str, work: Path, kills: int, seed: int) -> Figures:
    rng = random.Random(seed)
    started = time.monotonic()
    repo = linear(work / "repo", 24)
    shas = [repo.names[f"c{i}"] for i in range(24)]
    store = Store(url)
    figures = Figures()
    length = None  # seconds a whole campaign takes after "ready", measured on the first one
    while figures.kills < kills:
        culprit = rng.choice(shas[1:])
        cid = store.new_campaign("fault", {"culprit": culprit})
        figures.campaigns += 1
        kills_here = 0 if length is None else rng.randint(1, 4)
        while True:
            t0 = time.monotonic()
            before = set(_tokens(store, cid))
            holder = store.lock_owner(cid)
            proc = _spawn(url, repo.path, culprit, cid, work)
            figures.controllers += 1
            if holder is not None:
                figures.stale_locks_taken_over += 1
            if kills_here and figures.kills < kills:
                proc.join(rng.uniform(0, length or 1.0))
                if proc.is_alive():
                    assert proc.pid is not None
                    os.kill(proc.pid, signal.SIGKILL)
                    figures.kills += 1
                kills_here -= 1
            proc.join()
            tokens = _tokens(store, cid)
            figures.samples_lost += len(before - set(tokens))
            figures.counted_twice += sum(n - 1 for n in Counter(tokens).values() if n > 1)
            figures.half_written_runs += abs(len(tokens) - store.sample_count(cid))
            if proc.exitcode == 0:
                if length is None:
                    length = time.monotonic() - t0
                named = (work / f"w{cid}" / "culprit").read_text()
                figures.right_culprit += named == culprit
                if named != culprit:
                    figures.problems.append(f"campaign {cid}: named {named[:12]}, culprit {culprit[:12]}")
                break
            if proc.exitcode != -signal.SIGKILL:
                figures.problems.append(f"campaign {cid}: controller exit {proc.exitcode}")
                break
        if figures.problems:  # a controller that fails by itself would never reach the kills asked for
            break
        figures.runs_stored += len(_tokens(store, cid))
    figures.leftover_guests = len(list((work / "guests").iterdir()))
    figures.seconds = round(time.monotonic() - started, 1)
    return figures
