"""`python -m bench.bisect_rounds` (`make bench-rounds`, and the table of `make bench-bisect`):
simulated campaigns of the probabilistic bisection over a lab's slots, driven by the pure
search core (orchestrator.bisect.posterior, rounds, endpoints) with a simulated measurement
and a simulated lab clock (sim.py): not the engine (bench/bisect_accuracy drives the engine).

Printed per case, commits N and slots S, over seeded trials: how often the right culprit is
named, wrong culprits named with confidence >= 95% ("wrong!"), answers below 95% or none
("low"), boots per campaign (median, 95th percentile), search rounds (median, max, and how many
trials kept to ceil(log_{S+1} N) + 2 among those where nothing was skipped), and the simulated
wall time without and with build-ahead (median minutes, and against S = 1). Rounds are barriers,
as the engine measures them; `--refill` hands a slot that frees the next pick at once instead
(each clock is then its own run)."""

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
from orchestrator.bisect.rounds import NOMINATE, REVISIT_ERROR, VISIT_ERROR  # noqa: E402


def one(case_no: int, commits: int, slots: int, refill: bool, builders: int, seed: int) -> Trial:
    """A trial: `wall` without build-ahead, `wall_ahead` with it. With refill the decisions follow
    the clock, so the seed runs twice and the rest of the trial is the build-ahead run's."""
    if not refill:
        return Campaign(CASES[case_no], Params(slots=slots, commits=commits, builders=builders), seed).run()
    without, with_ = (Campaign(CASES[case_no], Params(slots=slots, commits=commits, refill=True, ahead=a,
                                                      builders=builders), seed).run() for a in (False, True))
    return Trial(with_.right, with_.wrong_confident, with_.low, with_.boots, with_.rounds, without.wall,
                 with_.wall_ahead, with_.refused, with_.skipped)


def run(case_no: int, commits: int, slots: int, trials: int, jobs: int, refill: bool, builders: int) -> list[Trial]:
    fn = partial(one, case_no, commits, slots, refill, builders)
    if jobs <= 1:
        return [fn(s) for s in range(trials)]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(fn, range(trials), chunksize=max(1, min(25, trials // (4 * jobs)))))


def pct(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(q * len(xs))) - 1)]


def row(slots: int, commits: int, res: list[Trial], base: tuple[float, float] | None) -> str:
    n = len(res)
    right = sum(r.right for r in res)
    boots = [r.boots for r in res]
    rounds = [r.rounds for r in res]
    clean = [r.rounds for r in res if not r.skipped and not r.refused]
    bound = math.ceil(math.log(commits) / math.log(slots + 1) - 1e-9) + 2
    wall, ahead = statistics.median(r.wall for r in res) / 60, statistics.median(r.wall_ahead for r in res) / 60
    vs = f" {wall / base[0]:>5.2f}x {ahead / base[1]:>5.2f}x" if base else f" {'':>6} {'':>6}"
    return (f"S={slots:<2} {right:>5}/{n:<5} {right / n:>6.1%} {sum(r.wrong_confident for r in res):>6} "
            f"{sum(r.low for r in res):>4} {statistics.median(boots):>6.0f} {pct(boots, 0.95):>5.0f} "
            f"{statistics.median(rounds):>6.0f} {max(rounds):>4} {sum(x <= bound for x in clean):>5}/{len(clean):<5} "
            f"(<= {bound:>2}) {wall:>6.1f} {ahead:>6.1f}{vs}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--cases", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--commits", type=int, nargs="+", default=[1000])
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--refill", action="store_true", help="slots refilled as they free (default: rounds as barriers)")
    p.add_argument("--builders", type=int, default=1,
                   help="kernels built at once: 1 = the controller's build CPUs (the engine's), 0 = one per host")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    a = p.parse_args()
    started = time.monotonic()
    print("Simulated campaigns driven by the pure search core (orchestrator.bisect.posterior/rounds, measure.endpoints/pairs, "
          "stats) with a simulated measurement and lab clock: NOT the engine (bench/bisect_accuracy drives it).")
    print(f"{a.trials} seeded trials per row, {a.jobs} process(es); policy: first visit error {VISIT_ERROR}, revisit "
          f"{REVISIT_ERROR}, confirmation at mass >= {1 - NOMINATE:.2f}, answer at >= 0.99 with it.")
    builds = "one build at a time on the controller's build CPUs" if a.builders == 1 else (
        "one build at a time per host" if a.builders == 0 else f"{a.builders} builds at a time")
    print(f"Durations (s): {DURATIONS} (docs/kernel-builds.md, docs/boot-time.md; push assumed). Kernels built "
          f"once and pushed, {builds}; wall = median minutes "
          f"{'with slots refilled as they free' if a.refill else 'with rounds as barriers'}; "
          "'ahead' = build-ahead on build CPUs of their own.")
    for case_no in a.cases:
        case = CASES[case_no - 1]
        for commits in a.commits:
            print(f"\n{case_no}. {case.name}, N={commits}")
            print(f"{'':<4} {'right':>11} {'rate':>6} {'wrong!':>6} {'low':>4} {'boots':>6} {'p95':>5} {'rounds':>6} "
                  f"{'max':>4} {'in bound':>17} {'wall':>6} {'ahead':>6} {'vs S=1':>13}")
            base = None
            row_started = time.monotonic()
            for slots in a.slots:
                res = run(case_no - 1, commits, slots, a.trials, a.jobs, a.refill, a.builders)
                print(row(slots, commits, res, base), flush=True)
                if slots == 1:
                    base = (statistics.median(r.wall for r in res) / 60,
                            statistics.median(r.wall_ahead for r in res) / 60)
            print(f"     ({time.monotonic() - row_started:.0f} s)")
    print(f"\ntotal {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
