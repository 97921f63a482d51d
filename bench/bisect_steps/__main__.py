"""Regressions in several steps: `python -m bench.bisect_steps` (part of `make bench-bisect`).

Simulated campaigns over a linear history whose regression comes in one, two or three steps:
vmbisect's real engine (search, confirmation, revert, the steps' search of
orchestrator/bisect/steps.py) with the fakes bench/bisect_accuracy uses (git bisect in memory,
builds, guests following the nested noise model, the store in memory). Each step lowers the
metric by its share of the whole (on the log scale); bad with some steps reverted has the
others' drop. The steps are drawn at random among the commits, at least a tenth of the history
apart.

Printed per case: for each step (oldest first) how often it was named and how often its share's
95% interval held the true share, how often the one that crossed the threshold was marked so,
the named steps that are no step ("wrong": any, "wrong!": in an answer given with confidence
>= 95%), how often bad with every named step reverted was back at good, and the boots per
campaign (mean, 95th percentile). For the one-step case, the boots taken after the culprit's
revert was judged (the share check: more boots of the culprit and its parent while its share is
unclear) and beyond the same seed run with `steps: first` (which stops after the share check).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.bisect_accuracy.__main__ import p95, wilson  # noqa: E402
from orchestrator.bisect.engine import HIGH_CONFIDENCE, CampaignRefused, Engine  # noqa: E402
from orchestrator.campaign.file import parse_campaign  # noqa: E402
from orchestrator.decisions import Basis, Decided, PairVerdict, Role  # noqa: E402
from orchestrator.results import BisectResult  # noqa: E402
from tests.fakes import FakeBuilder, FakeLinearVcs, FakeMeasurer, MemoryStore  # noqa: E402

COMMITS = 300
BETWEEN, WITHIN = 0.03, 0.02  # boot noise: between boots, within a boot (CoVs)


@dataclass(frozen=True)
class Case:
    name: str
    shares: tuple[float, ...]  # each step's share of the whole, oldest first
    drop: float  # bad against good (relative, lower)
    threshold: str
    min_share: float = 0.2  # the campaign's steps.min_share
    between: float = BETWEEN  # boot noise (CoVs)
    within: float = WITHIN


CASES = [
    Case("one step, -30%, threshold -10%", (1.0,), 0.30, "-10%"),
    Case("two steps 50/50, -35%, threshold -10%", (0.5, 0.5), 0.35, "-10%"),
    Case("two steps 30/70, -35%, threshold -10%", (0.3, 0.7), 0.35, "-10%"),
    Case("two steps 30/70, -35%, threshold -15%: the first below it alone", (0.3, 0.7), 0.35, "-15%"),
    Case("three steps 20/50/30, -40%, threshold -15%, min_share 10%", (0.2, 0.5, 0.3), 0.40, "-15%", 0.1),
    Case("two steps of a fifth each 50/50, -36%, threshold -15%, boot noise 14% between / 3% within",
         (0.5, 0.5), 0.36, "-15%", between=0.14, within=0.03),
]


@dataclass(frozen=True)
class Trial:
    named: tuple[bool, ...]  # each true step named, oldest first
    covered: tuple[bool, ...]  # its share's interval holds the true share
    crossed_right: bool  # the step marked as crossing the threshold is the one that did
    wrong: int  # named steps that are no step
    wrong_confident: int  # of those, in an answer given with high confidence
    restored: bool | None  # bad with every named step reverted back at good (None: one step named)
    boots: int
    extra: int = 0  # one step: boots beyond the same seed with `steps: first`
    after_revert: int = 0  # boots after the culprit's revert was judged (the share check, and any steps' search)
    seed: int = 0
    answer: str = ""


def history(rng: random.Random, case: Case) -> tuple[list[str], list[int]]:
    """Commit names and the steps' indices (oldest first, at least COMMITS // 10 apart)."""
    shas = [hashlib.sha1(f"commit {i}".encode()).hexdigest() for i in range(COMMITS)]
    gap = COMMITS // 10
    while True:
        at = sorted(rng.sample(range(1, COMMITS), len(case.shares)))
        if all(b - a >= gap for a, b in zip(at, at[1:])):
            return shas, at


def values(shas: list[str], at: list[int], case: Case) -> Callable[[str], float]:
    index = {s: i for i, s in enumerate(shas)}
    whole = math.log(1 - case.drop)
    logs = [share * whole for share in case.shares]

    def value(commit: str) -> float:
        if commit.startswith("revert-"):  # bad with these commits reverted ("revert-A+revert-B")
            gone = {index[x.removeprefix("revert-")] for x in commit.split("+")}
            return 100.0 * math.exp(sum(v for i, v in zip(at, logs) if i not in gone))
        return 100.0 * math.exp(sum(v for i, v in zip(at, logs) if index[commit] >= i))

    return value


def campaign(case: Case, seed: int, steps: str | dict[str, float] = "") -> tuple[BisectResult | None, int, list[str],
                                                                              list[int], int]:
    rng = random.Random(seed)
    shas, at = history(rng, case)
    c = parse_campaign({"name": "sim", "repository": "/nonexistent", "good": shas[0], "bad": shas[-1],
                        "workload": "sim", "steps": steps or {"min_share": case.min_share},
                        "metric": {"name": "iops", "direction": "higher", "threshold": case.threshold},
                        "runs_per_boot": 3})
    store = MemoryStore()
    cid = store.new_campaign("sim", {})
    host = FakeMeasurer(values(shas, at, case), case.within, seed, between=case.between)
    judged: list[int] = []  # the boots taken when the culprit's revert was judged
    add = store.add_decision

    def added(campaign_id: int, d: Decided) -> None:
        if d.role is Role.REVERT and d.kind is not Basis.MEASURING and not judged:
            judged.append(host.boots)
        add(campaign_id, d)

    store.add_decision = added  # type: ignore[method-assign]
    try:
        out = Engine(c, "higher", FakeLinearVcs(shas), FakeBuilder(), host, store).run(cid)
    except CampaignRefused:
        return None, host.boots, shas, at, 0
    return out.result, host.boots, shas, at, host.boots - (judged or [host.boots])[0]


def trial(case: Case, seed: int) -> Trial:
    result, boots, shas, at, after_revert = campaign(case, seed)
    if result is None:
        return Trial((False,) * len(at), (False,) * len(at), False, 0, 0, None, boots, seed=seed, answer="refused")
    index = {s: i for i, s in enumerate(shas)}
    steps = {index[x.commit]: x for x in result.steps}
    # the step that crossed the threshold: the first at which bad's drop so far reaches it
    threshold = math.log(1 + float(case.threshold.rstrip("%")) / 100)
    whole = math.log(1 - case.drop)
    cum = [sum(case.shares[:k + 1]) * whole for k in range(len(at))]
    crossing = at[next(k for k, v in enumerate(cum) if v <= threshold)]
    named = tuple(i in steps for i in at)
    covered = tuple(i in steps and steps[i].low <= share <= steps[i].high for i, share in zip(at, case.shares))
    wrong = [i for i in steps if i not in at]
    confident = result.confidence >= HIGH_CONFIDENCE
    crossed = [i for i, x in steps.items() if x.crossed]
    restored = None if result.reverted is None else result.reverted.get("verdict") == PairVerdict.RESTORES
    extra = 0
    if len(at) == 1:
        first_boots = campaign(case, seed, "first")[1]
        extra = boots - first_boots
    answer = (f"steps at {at}; named " + ", ".join(f"{i} {x.share:.0%} [{x.low:.0%}, {x.high:.0%}]"
                                                   for i, x in sorted(steps.items()))
              + f"; end {result.steps_end}; notes {' / '.join(result.notes)[:300]}")
    return Trial(named, covered, crossed == [crossing], len(wrong), len(wrong) if confident else 0, restored, boots,
                 extra, after_revert, seed, answer)


def trials(case: Case, count: int, jobs: int) -> list[Trial]:
    run = partial(trial, case)
    if jobs <= 1:
        return [run(seed) for seed in range(count)]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(run, range(count), chunksize=max(1, min(10, count // (4 * jobs)))))


def rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n} {k / n:.0%} [{lo:.0%}, {hi:.0%}]" if n else "-"


def report(case: Case, results: list[Trial]) -> list[str]:
    n = len(results)
    lines = []
    for k, share in enumerate(case.shares):
        lines.append(f"  step {k + 1} ({share:.0%}): named {rate(sum(r.named[k] for r in results), n)}, "
                     f"share's CI holds it {rate(sum(r.covered[k] for r in results), n)}")
    boots = [r.boots for r in results]
    reverted = [r.restored for r in results if r.restored is not None]
    lines.append(f"  crossing step marked right {rate(sum(r.crossed_right for r in results), n)}; wrong steps named "
                 f"{sum(r.wrong for r in results)} (with high confidence {sum(r.wrong_confident for r in results)}); "
                 f"all reverted back at good {rate(sum(reverted), len(reverted))}")
    lines.append(f"  boots per campaign: mean {statistics.fmean(boots):.1f}, p95 {p95(boots)}")
    if len(case.shares) == 1:
        extra = [r.extra for r in results]
        check = [r.after_revert for r in results]
        lines.append(f"  boots of the share check (after the revert was judged): mean {statistics.fmean(check):.2f}, "
                     f"max {max(check)}, campaigns with any {sum(1 for x in check if x)}; beyond `steps: first` on "
                     f"the same seed: mean {statistics.fmean(extra):.2f}, max {max(extra)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--cases", type=int, nargs="+", help="case numbers (1-based) to run; default all")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    p.add_argument("--misses", action="store_true", help="list the trials that missed a step or named a wrong one")
    a = p.parse_args(argv)
    started = time.monotonic()
    print(f"{COMMITS} commits, steps at random (a tenth of the history apart at least), boot noise between "
          f"{BETWEEN:.0%} / within {WITHIN:.0%} unless the case says, {a.trials} seeded trials per case, "
          f"{a.jobs} process(es)")
    for number, case in enumerate(CASES, 1):
        if a.cases and number not in a.cases:
            continue
        case_started = time.monotonic()
        results = trials(case, a.trials, a.jobs)
        print(f"\n{number}. {case.name} ({time.monotonic() - case_started:.0f} s)")
        print("\n".join(report(case, results)), flush=True)
        if a.misses:
            for r in results:
                if not all(r.named) or r.wrong:
                    print(f"  miss: seed {r.seed}: {r.answer}")
    print(f"\ntotal {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
