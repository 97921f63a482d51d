"""`python -m bench.set_pairs`: a set bisection's confirmation pair (good + set against good) with
its fixed-size stop rule against commit bisection's sequential one, on simulated boots.

Each trial boots a pair afresh (A B B A) of `--runs` runs a boot, boot values log-normal with the
between-boot and within-boot noise given, B's true change `--change` (0: the search named a wrong
set). Fixed: the size setbisect/setbisection.py `_pair_boots` computes (95% power to see the
good-to-bad gap at the campaign's boot noise, at least 2 and `boots`, at most `max_boots`), judged
once by measure/pairs.py `answer_pair`. Sequential: one boot pair at a time (from `--start` a side) until
measure/pairs.py `settled` (the pair's evidence on the noise pooled over `--other` boots of
other candidates, as a campaign's is, at the campaign's error, no prior: a set search has no
posterior; its own test `answer_pair` confirmed, or the evidence against it) or the cap, then
judged by `answer_pair` as the fixed size is. Printed per case: how often the pair is confirmed
and its boots a side (mean).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics

from orchestrator.decisions import PairVerdict
from orchestrator.measure.pairs import answer_pair, pair, settled
from orchestrator.stats import Boot, pooled_boot_variance, reps_to_detect


def boot(rng: random.Random, seq: int, level: float, between: float, within: float, runs: int) -> Boot:
    mean = level * math.exp(rng.gauss(0.0, between))
    return Boot(seq, tuple(mean * math.exp(rng.gauss(0.0, within)) for _ in range(runs)))


def fixed_size(between: float, within: float, runs: int, gap: float, boots: int, max_boots: int) -> int:
    """setbisect/setbisection.py `_pair_boots` at the true noise and gap."""
    noise = math.sqrt(between ** 2 + within ** 2 / runs)
    try:
        need = reps_to_detect(noise, abs(gap), 0.05, 0.95)
    except ValueError:
        need = max_boots
    return min(max_boots, max(2, boots, need))


def trial(rng: random.Random, change: float, gap: float, a: argparse.Namespace, sequential: bool) -> tuple[bool, int]:
    seq = iter(range(10 ** 6))
    others = [[boot(rng, next(seq), 100.0, a.between, a.within, a.runs) for _ in range(2)] for _ in range(a.other // 2)]
    ss, df = pooled_boot_variance(others)
    pa: list[Boot] = []
    pb: list[Boot] = []

    def more(n: int) -> None:
        while len(pa) < n:
            order = [(pa, 100.0), (pb, 100.0 * (1 + change))]
            for side, level in (order if len(pa) % 2 == 0 else order[::-1]):
                side.append(boot(rng, next(seq), level, a.between, a.within, a.runs))

    if not sequential:
        more(fixed_size(a.between, a.within, a.runs, gap, a.boots, a.max_boots))
        return answer_pair(pa, pb, "higher", a.threshold, 0.05, a.max_boots).verdict is PairVerdict.CONFIRMED, len(pa)
    n = a.start
    while True:
        more(n)
        state = pair(pa, pb, math.log1p(gap), ss, df, a.error)
        seen = answer_pair(pa, pb, "higher", a.threshold, 0.05, a.max_boots).verdict is PairVerdict.CONFIRMED
        state = dataclasses.replace(state, seen=state.seen and seen)
        if state.boots >= a.max_boots or settled([state], a.max_boots, a.error):
            return seen, len(pa)
        n += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--between", type=float, default=0.03)
    ap.add_argument("--within", type=float, default=0.02)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--max-boots", type=int, default=8)
    ap.add_argument("--threshold", type=float, default=-0.10)
    ap.add_argument("--gap", type=float, default=-0.40, help="good to bad when the set is wrong (change 0); a "
                    "right set carries the whole gap")
    ap.add_argument("--changes", type=float, nargs="+", default=[-0.40, -0.20, -0.12, 0.0])
    ap.add_argument("--other", type=int, default=20, help="boots of other candidates the noise is pooled over")
    ap.add_argument("--error", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=3, help="boots a side a sequential pair starts from")
    a = ap.parse_args()
    print(f"between {a.between:.0%}, within {a.within:.0%}, {a.runs} runs a boot, boots {a.boots}..{a.max_boots}, "
          f"threshold {a.threshold:+.0%}, gap {a.gap:+.0%}, {a.trials} trials")
    print(f"{'change':>7} {'rule':>10} {'confirmed':>10} {'boots a side':>13}")
    for change in a.changes:
        for sequential in (False, True):
            rng = random.Random(a.seed)
            runs = [trial(rng, change, change or a.gap, a, sequential) for _ in range(a.trials)]
            rate = sum(r for r, _n in runs) / len(runs)
            print(f"{change:>+7.0%} {'sequential' if sequential else 'fixed':>10} {rate:>10.1%} "
                  f"{statistics.fmean(n for _r, n in runs):>13.1f}")


if __name__ == "__main__":
    main()
