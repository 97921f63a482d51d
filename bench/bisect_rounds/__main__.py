"""`python -m bench.bisect_rounds`: simulated campaigns of the probabilistic bisection over
slots, driven by the pure search core with a simulated measurement (not the engine; see sim.py).

Printed per case, commits N and slots S, over seeded trials: how often the right culprit is
named, wrong culprits named with confidence >= 95% ("wrong!"), answers below 95% ("low"), boots
per campaign (median, 95th percentile), search rounds (median, max, and how many trials kept to
ceil(log_{S+1} N) + 2 when nothing was skipped), and the simulated wall time without and with
build-ahead (median, and against S = 1)."""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.bisect_rounds.sim import CASES, DURATIONS, Campaign, Params, Trial  # noqa: E402


def one(case_no: int, commits: int, slots: int, seed: int) -> Trial:
    return Campaign(CASES[case_no], Params(slots=slots, commits=commits), seed).run()


def run(case_no: int, commits: int, slots: int, trials: int, jobs: int) -> list[Trial]:
    fn = partial(one, case_no, commits, slots)
    if jobs <= 1:
        return [fn(s) for s in range(trials)]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(fn, range(trials), chunksize=max(1, trials // (4 * jobs))))


def pct(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)]


def row(slots: int, commits: int, res: list[Trial], base: tuple[float, float] | None) -> str:
    n = len(res)
    right = sum(r.right for r in res)
    boots = [r.boots for r in res]
    rounds = [r.rounds for r in res]
    bound = math.ceil(math.log(commits) / math.log(slots + 1) - 1e-9) + 2
    wall, ahead = statistics.median(r.wall for r in res) / 60, statistics.median(r.wall_ahead for r in res) / 60
    vs = f" {wall / base[0]:>5.2f}x {ahead / base[1]:>5.2f}x" if base else f" {'':>6} {'':>6}"
    return (f"S={slots:<2} {right:>5}/{n:<5} {sum(r.wrong_confident for r in res):>6} {sum(r.low for r in res):>4} "
            f"{statistics.median(boots):>7.0f} {pct(boots, 0.95):>5.0f} {statistics.median(rounds):>6.0f} "
            f"{max(rounds):>4} {sum(x <= bound for x in rounds):>5}/{n:<5} (<= {bound:>2}) "
            f"{wall:>7.1f} {ahead:>7.1f}{vs}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--cases", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--commits", type=int, nargs="+", default=[15, 100, 1000])
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = p.parse_args()
    started = time.monotonic()
    print("Simulated campaigns driven by the pure search core (orchestrator.bisect.posterior/rounds, the endpoint "
          "stop rule, stats) with a simulated measurement: NOT the engine.")
    print(f"{a.trials} seeded trials per row; durations (s): {DURATIONS} (docs/kernel-builds.md, issue 19's "
          "demo boot); wall = median minutes, rounds as barriers; 'ahead' = with build-ahead on build CPUs of "
          "their own.")
    for case_no in a.cases:
        case = CASES[case_no - 1]
        for commits in a.commits:
            print(f"\n{case_no}. {case.name}, N={commits}")
            print(f"{'':<4} {'right':>11} {'wrong!':>6} {'low':>4} {'boots':>7} {'p95':>5} {'rounds':>6} {'max':>4} "
                  f"{'in bound':>17} {'wall':>7} {'ahead':>7} {'vs S=1':>13}")
            base = None
            for slots in a.slots:
                res = run(case_no - 1, commits, slots, a.trials, a.jobs)
                print(row(slots, commits, res, base), flush=True)
                if slots == 1:
                    base = (statistics.median(r.wall for r in res) / 60,
                            statistics.median(r.wall_ahead for r in res) / 60)
    print(f"\ntotal {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
