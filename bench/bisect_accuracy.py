"""What the statistics are worth: `make bench-bisect`.

Simulated campaigns over a 1,000-commit linear history (real git, fake builds and guests):
the culprit is drawn at random, the metric is 100 before it and 90 after (a 10% regression),
each run adds gaussian noise. Printed per noise level: how often the right culprit is named,
and the mean builds and runs per campaign, for vmbisect's engine and for a plain bisection
that takes one run per commit and calls it bad below the midpoint of one good and one bad run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from orchestrator.backends.git_bisect import GitBisect  # noqa: E402
from orchestrator.bisect.engine import CampaignRefused, Engine  # noqa: E402
from orchestrator.campaign import parse_campaign  # noqa: E402
from orchestrator.store import Store  # noqa: E402
from tests.fakes import FakeBuilder, FakeMeasurer  # noqa: E402
from tests.integration.gitrepo import Repo  # noqa: E402

COMMITS = 1000


def history(path: Path) -> tuple[Path, list[str]]:
    """A linear history made with git fast-import (a thousand commits in well under a second)."""
    import subprocess

    repo = Repo(path)
    lines = []
    for i in range(COMMITS):
        msg = f"c{i}".encode()
        lines.append(b"commit refs/heads/main\nmark :%d\ncommitter T <t@example.org> 1700000000 +0000\n" % (i + 1))
        lines.append(b"data %d\n%s\n" % (len(msg), msg))
        if i:
            lines.append(b"from :%d\n" % i)
        lines.append(b"M 644 inline f\ndata %d\n%s\n" % (len(msg), msg))
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(lines), check=True)
    shas = subprocess.run(["git", "-C", str(path), "rev-list", "--reverse", "main"], capture_output=True,
                          text=True, check=True).stdout.split()
    return repo.path, shas


def value_of(shas: list[str], culprit: int):  # type: ignore[no-untyped-def]
    index = {s: i for i, s in enumerate(shas)}
    return lambda commit: 90.0 if index[commit] >= culprit else 100.0


def engine_trial(repo: Path, work: Path, shas: list[str], culprit: int, noise: float, seed: int,
                 store: Store) -> tuple[bool, int, int]:
    c = parse_campaign({"name": "sim", "repository": str(repo), "good": shas[0], "bad": shas[-1],
                        "workload": "sim", "metric": {"name": "iops", "direction": "higher", "threshold": "-5%"},
                        "repetitions": {"min": 3, "max": 15}, "runs_per_boot": 3})
    cid = store.new_campaign("sim", {})
    builder = FakeBuilder()
    engine = Engine(c, "higher", GitBisect(repo, work), builder, FakeMeasurer(value_of(shas, culprit), noise, seed),
                    store)
    try:
        outcome = engine.run(cid)
    except CampaignRefused:
        return False, len(set(builder.built)), store.sample_count(cid)
    return outcome.culprit == shas[culprit], len(set(builder.built)), store.sample_count(cid)


def plain_trial(repo: Path, work: Path, shas: list[str], culprit: int, noise: float, seed: int) -> tuple[bool, int, int]:
    rng = random.Random(seed)
    value = value_of(shas, culprit)
    sample = lambda commit: rng.gauss(value(commit), value(commit) * noise)  # noqa: E731
    gb = GitBisect(repo, work)
    gb.prepare()
    midpoint = (sample(shas[0]) + sample(shas[-1])) / 2
    state, commits = gb.start(shas[0], shas[-1]), 2
    while state.kind == "testing":
        commit = gb.current()
        commits += 1
        state = gb.mark(commit, "bad" if sample(commit) < midpoint else "good")
    return state.culprit == shas[culprit], commits, commits


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--noise", type=float, nargs="+", default=[0.01, 0.03, 0.05])
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo, shas = history(Path(tmp) / "u")
        store = Store("sqlite://")
        print(f"{COMMITS} commits, 10% regression at a random commit, {a.trials} seeded trials per row")
        print(f"{'strategy':<34} {'noise':>6} {'right':>7} {'builds':>7} {'runs':>7}")
        for noise in a.noise:
            for name, trial in (("vmbisect (rank tests, 3-15 runs)", "engine"), ("plain (1 run, midpoint)", "plain")):
                rng = random.Random(1)
                results = []
                for t in range(a.trials):
                    culprit = rng.randrange(1, COMMITS)
                    work = Path(tmp) / f"w-{trial}"
                    if trial == "engine":
                        results.append(engine_trial(repo, work, shas, culprit, noise, t, store))
                    else:
                        results.append(plain_trial(repo, work, shas, culprit, noise, t))
                right = sum(r[0] for r in results)
                print(f"{name:<34} {noise:>6.0%} {right:>4}/{a.trials:<3}"
                      f"{statistics.fmean(r[1] for r in results):>7.1f} {statistics.fmean(r[2] for r in results):>7.1f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
