"""What the statistics are worth: `python -m bench.bisect_accuracy` (part of `make bench-bisect`).

Simulated campaigns over a 1,000-commit linear history over S = 1, 2, 4, 8 lab slots (one
FakeMeasurer a host, each host its own references): vmbisect's real engine, decision rules,
statistics and confirmation, with fakes for git bisect (in memory, same midpoint choices),
builds, guests and the store (in memory: the SQLite store's transactions were three quarters of
a simulated campaign's time; tests/unit/test_memory_store.py shows the engine decides the same
on both). The guests follow the nested noise model measured on real ones:
a boot's level is the commit's value times a per-boot offset (gaussian, the between-boot CoV),
each run adds gaussian noise (the within-boot CoV), and the host may slow down linearly over
the campaign. A fraction of the commits may be no-ops (comment-only: the same kernel image as
their parent). The culprit is drawn at random among the real changes. A lower-is-better case
mirrors its higher-is-better twin on the log scale the statistics work on (bad at 100 / (1 -
drop) instead of 100 x (1 - drop), the threshold mirrored likewise): the same campaigns with
the signs turned, which must be found as often.

The endpoint cases (numbered after the campaign cases) run the engine's endpoint loop alone
(measure/endpoints.py measure_endpoints on the real Judge, fake guests, an in-memory store) on
endpoints whose change falls short of the threshold: printed, how often it was refused as
surely smaller, the boots a side it took (median, 95th percentile) and the threshold it
suggested (median and range).

Printed per case and S: how often the right culprit is named (with a 95% Wilson interval), how
many wrong answers came with high confidence, how many ended low-confidence or inconclusive, the
mean builds, boots per campaign (mean, median, 95th percentile), the verdicts inherited from
identical images; with `--baseline`, beside it the rule vmbisect used before (rank tests on
runs, the runs of one boot counted as independent samples, 3 runs per boot, up to 15 runs), run
on the same simulated guests at one slot. `--misses` lists the engine's trials that missed
(seed, answer, confidence) to replay them. The fakes have no clock: the simulated wall time of
a campaign over slots is bench/bisect_rounds' (the same search core with a lab clock).

Every trial is its own seed, run in `--jobs` processes (2 by default: these machines' cores);
the figures do not depend on how the trials are spread, and the wall time is printed.
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
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from orchestrator.bisect.confidence import HIGH_CONFIDENCE  # noqa: E402
from orchestrator.bisect.engine import CampaignRefused, Engine  # noqa: E402
from orchestrator.campaign.file import parse_campaign, parse_threshold  # noqa: E402
from orchestrator.decisions import Refusal  # noqa: E402
from orchestrator.measure.decide import ERROR  # noqa: E402
from orchestrator.measure.endpoints import measure_endpoints  # noqa: E402
from orchestrator.measure.judge import Judge  # noqa: E402
from orchestrator.stats import p_less  # noqa: E402
from tests.fakes import FakeBuilder, FakeLinearVcs, FakeMeasurer, MemoryStore  # noqa: E402

COMMITS = 1000


@dataclass(frozen=True)
class Case:
    name: str
    between: float
    within: float
    drop: float
    threshold: str
    drift: float = 0.0  # relative slowdown over the whole campaign
    noops: float = 0.0  # fraction of no-op commits
    direction: str = "higher"  # lower: bad reads 100 / (1 - drop), the mirror of 100 x (1 - drop)


CASES = [
    Case("between 8%, within 2%, -15%", 0.08, 0.02, 0.15, "-10%"),
    Case("between 3%, within 10%, -15%", 0.03, 0.10, 0.15, "-10%"),
    Case("run noise 3% only, -10%", 0.0, 0.03, 0.10, "-5%"),
    Case("8%/2%, -15%, host slows 10% over the campaign", 0.08, 0.02, 0.15, "-10%", drift=0.10),
    Case("8%/2%, -15%, 30% no-op commits", 0.08, 0.02, 0.15, "-10%", noops=0.30),
    Case("case 1 lower-is-better: 8%/2%, +17.6%, threshold +11.1%", 0.08, 0.02, 0.15, "+11.1%", direction="lower"),
    Case("the demo's size: between 3%, within 2%, -50%, threshold -25%", 0.03, 0.02, 0.50, "-25%"),
]


@dataclass(frozen=True)
class EndpointCase:
    """Good at 100, bad `change` from it, the campaign's `threshold`; boots_per_commit 2,
    max_boots_per_commit 8 and 3 runs a boot (the defaults)."""

    name: str
    between: float
    within: float
    change: float
    threshold: str


ENDPOINT_CASES = [
    EndpointCase("-16% asked -20% (0.8x), between 2%, within 1%", 0.02, 0.01, -0.16, "-20%"),
    EndpointCase("the demo's size: -50% asked -25%, between 3%, within 2%", 0.03, 0.02, -0.50, "-25%"),
]


@dataclass(frozen=True)
class Trial:
    right: bool
    wrong_confident: bool
    doubtful: bool  # low confidence or no single answer
    builds: int
    boots: int
    inherited: int
    seed: int = 0
    answer: str = ""  # what the campaign answered, for the list of misses


def history(rng: random.Random, noops: float) -> tuple[list[str], list[set[str]], list[int]]:
    """Commit names (hashes, as git's: unique in their first 12 digits, which outputs show), the
    groups of commits with one image, and the indices of real changes."""
    shas = [hashlib.sha1(f"commit {i}".encode()).hexdigest() for i in range(COMMITS)]
    groups: list[set[str]] = []
    real = [0]
    for i in range(1, COMMITS):
        if rng.random() < noops:
            if groups and shas[i - 1] in groups[-1]:
                groups[-1].add(shas[i])
            else:
                groups.append({shas[i - 1], shas[i]})
        else:
            real.append(i)
    return shas, groups, real


def values(shas: list[str], culprit: int, drop: float, direction: str = "higher"):
    index = {s: i for i, s in enumerate(shas)}
    worse = 100.0 * (1 - drop) if direction == "higher" else 100.0 / (1 - drop)

    def value(commit: str) -> float:
        if commit.startswith("revert-"):  # bad with that commit reverted
            return 100.0 if index[commit.removeprefix("revert-")] == culprit else worse
        return worse if index[commit] >= culprit else 100.0

    return value


def engine_trial(case: Case, seed: int, drift_per_boot: float, slots: int = 1) -> Trial:
    rng = random.Random(seed)
    shas, groups, real = history(rng, case.noops)
    culprit = rng.choice(real[1:])
    c = parse_campaign({"name": "sim", "repository": "/nonexistent", "good": shas[0], "bad": shas[-1],
                        "workload": "sim",
                        "metric": {"name": "iops", "direction": case.direction, "threshold": case.threshold},
                        "runs_per_boot": 3})
    store = MemoryStore()
    cid = store.new_campaign("sim", {})
    builder = FakeBuilder(same_image=groups)
    hosts = [FakeMeasurer(values(shas, culprit, case.drop, case.direction), case.within, seed + 100_000 * k,
                          between=case.between, drift=-drift_per_boot, host=f"h{k}") for k in range(slots)]
    engine = Engine(c, case.direction, FakeLinearVcs(shas), builder, hosts[0], store,
                    slots=hosts if slots > 1 else ())
    try:
        out = engine.run(cid)
    except CampaignRefused as exc:
        return Trial(False, False, True, len(set(builder.built)), sum(h.boots for h in hosts), 0, seed,
                     f"refused: {exc}"[:200])
    right = out.outcome == "found" and out.culprit == shas[culprit]
    confident = out.outcome == "found" and out.confidence >= HIGH_CONFIDENCE
    inherited = (store.campaign(cid).result or {}).get("inherited", 0)
    index = {s: i for i, s in enumerate(shas)}
    named = f"commit {index[out.culprit]}" if out.outcome == "found" else \
        f"{out.outcome} {', '.join(str(index.get(x, x)) for x in out.candidates)}"
    answer = f"culprit {culprit}, answered {named} with confidence {out.confidence:.3f}"
    return Trial(right, confident and not right, not confident, len(set(builder.built)), sum(h.boots for h in hosts),
                 inherited, seed, answer)


@dataclass(frozen=True)
class EndpointTrial:
    refused_sure: bool  # refused as surely smaller than the threshold
    started: bool
    boots_each: int  # boots of each endpoint when the loop stopped
    suggested: float | None  # the threshold the refusal suggested


def endpoint_trial(case: EndpointCase, seed: int) -> EndpointTrial:
    """The engine's endpoint loop on fake guests: the real Judge over an in-memory store."""
    store = MemoryStore()
    cid = store.new_campaign("sim", {})
    measurer = FakeMeasurer(lambda commit: 100.0 if commit == "good" else 100.0 * (1 + case.change), case.within,
                            seed, between=case.between)
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 3)
    check = measure_endpoints(judge, "good", "bad", "higher", parse_threshold(case.threshold, "threshold"), 3, 2, 8,
                              0.05, ERROR, early=True)
    sides = judge.evidence()
    return EndpointTrial(not check.ok and check.sure and check.problem is Refusal.SHORT_OF_THRESHOLD, check.ok,
                         min(len(sides["good"]), len(sides["bad"])), check.suggested)


def endpoint_row(results: list[EndpointTrial]) -> str:
    n = len(results)
    refused = sum(r.refused_sure for r in results)
    lo, hi = wilson(refused, n)
    each = [r.boots_each for r in results]
    suggested = sorted(r.suggested for r in results if r.suggested is not None)
    said = (f"{statistics.median(suggested):+.1%} ({suggested[0]:+.1%}..{suggested[-1]:+.1%}, {len(suggested)} "
            f"refusals)" if suggested else "none")
    return (f"refused as surely smaller {refused}/{n} ({refused / n:.1%}, 95% CI {lo:.1%}-{hi:.1%}), started "
            f"{sum(r.started for r in results)}; boots a side: median {statistics.median(each):.0f}, p95 {p95(each)}, "
            f"max {max(each)}; suggested threshold: median {said}")


def old_decide(good: list[float], bad: list[float], step: list[float], can_more: bool, alpha: float = 0.05) -> str:
    """vmbisect's rule before the boot became the unit (kept here only as the baseline)."""
    if len(step) < 3:
        return "more"
    g, b = statistics.median(good), statistics.median(bad)
    pos = (statistics.median(step) - g) / (b - g) if b != g else 0.0
    if b > g:
        p_not_bad, p_not_good = p_less(step, bad), p_less(good, step)
    else:
        p_not_bad, p_not_good = p_less(bad, step), p_less(step, good)
    apart_bad, apart_good = p_not_bad < alpha, p_not_good < alpha
    if apart_bad and pos < (0.25 if apart_good else 0.4):
        return "good"
    if apart_good and pos > (0.75 if apart_bad else 0.6):
        return "bad"
    return "more" if can_more else "skip"


def old_trial(case: Case, seed: int, drift_per_boot: float) -> Trial:
    """The old engine on the same guests: 3 runs per boot, up to 15 runs per commit, references
    topped up to as many runs as the step; one build per commit, no inheritance, no confirmation."""
    rng = random.Random(seed)
    shas, groups, real = history(rng, case.noops)
    culprit = rng.choice(real[1:])
    value = values(shas, culprit, case.drop)
    measurer = FakeMeasurer(value, case.within, seed, between=case.between, drift=-drift_per_boot)
    builder = FakeBuilder(same_image=groups)
    runs: dict[str, list[float]] = {}

    def collect(commit: str, need: int) -> list[float]:
        have = runs.setdefault(commit, [])
        while len(have) < need:
            with measurer.boot(builder.build(commit).kernel) as session:
                for _ in range(min(3, need - len(have))):
                    have.append(session.run().values()["iops"])
        return have

    vcs = FakeLinearVcs(shas)
    good, bad = shas[0], shas[-1]
    state = vcs.start(good, bad)
    while state.kind == "testing":
        commit, need = vcs.current(), 3
        while True:
            step = collect(commit, need)
            verdict = old_decide(collect(good, len(step)), collect(bad, len(step)), step, len(step) < 15)
            if verdict != "more":
                break
            need = min(15, len(step) + 3)
        state = vcs.mark(commit, verdict)
    right = state.kind == "found" and state.culprit == shas[culprit]
    # it gave every answer with full confidence
    return Trial(right, state.kind == "found" and not right, state.kind != "found", len(set(builder.built)),
                 measurer.boots, 0, seed)


def trials(fn: Callable[..., Trial], case: Case, count: int, drift_per_boot: float, jobs: int,
           slots: int = 1, **options: Any) -> list[Trial]:
    """`count` seeded trials, in `jobs` processes: every trial is its own seed, so the results
    do not depend on how they are spread."""
    run = partial(_one, fn, case, drift_per_boot, slots, options)
    if jobs <= 1:
        return [run(seed) for seed in range(count)]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(run, range(count), chunksize=max(1, min(25, count // (4 * jobs)))))


def _one(fn: Callable[..., Trial], case: Case, drift_per_boot: float, slots: int, options: dict[str, Any],
         seed: int) -> Trial:
    return fn(case, seed, drift_per_boot, slots, **options) if slots > 1 or options else fn(case, seed, drift_per_boot)


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    z = 1.96
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def p95(xs: list[int]) -> int:
    return sorted(xs)[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)]


def row(name: str, results: list[Trial]) -> str:
    n = len(results)
    right = sum(r.right for r in results)
    lo, hi = wilson(right, n)
    boots = [r.boots for r in results]
    return (f"{name:<10} {right:>5}/{n:<5} {right / n:>6.1%} [{lo:.1%}, {hi:.1%}] "
            f"{sum(r.wrong_confident for r in results):>6} {sum(r.doubtful for r in results):>6} "
            f"{statistics.fmean(r.builds for r in results):>7.1f} {statistics.fmean(boots):>7.1f} "
            f"{statistics.median(boots):>6.0f} {p95(boots):>5} {statistics.fmean(r.inherited for r in results):>6.1f}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--cases", type=int, nargs="+", help="case numbers (1-based) to run; default all")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8], help="lab slots, one host each")
    p.add_argument("--baseline", action="store_true", help="also the old rule (one slot)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    p.add_argument("--misses", action="store_true", help="list the engine's trials that missed")
    a = p.parse_args()
    started = time.monotonic()
    print(f"{COMMITS} commits, culprit at a random real change, {a.trials} seeded trials per row, {a.jobs} "
          f"process(es); wrong!: wrong culprit with confidence >= {HIGH_CONFIDENCE:.0%}; low: low confidence or no "
          f"single answer; S slots on S fake hosts, each with its own references")
    boots_per_campaign = {"engine": 0.0, "old": 0.0}  # from the first case without drift: the drift's scale
    for number, case in enumerate(CASES, 1):
        if a.cases and number not in a.cases:
            continue
        print(f"\n{number}. {case.name}")
        print(f"{'engine':<10} {'right':>11} {'rate':>6} {'95% CI':<16} {'wrong!':>6} {'low':>6} "
              f"{'builds':>7} {'boots':>7} {'median':>6} {'p95':>5} {'inher.':>6}")
        per_boot = {k: case.drift / v if case.drift and v else 0.0 for k, v in boots_per_campaign.items()}
        for slots in a.slots:
            case_started = time.monotonic()
            results = trials(engine_trial, case, a.trials, per_boot["engine"], a.jobs, slots)
            if not case.drift and not boots_per_campaign["engine"]:
                boots_per_campaign["engine"] = statistics.fmean(r.boots for r in results)
            print(f"{row(f'S={slots}', results)} ({time.monotonic() - case_started:.0f} s)", flush=True)
            if a.misses:
                for r in results:
                    if not r.right:
                        print(f"{'':<10} miss: seed {r.seed}: {r.answer}")
            if case.noops and slots == 1:
                judged = [r for r in results if r.boots]
                per_step = statistics.fmean(r.boots for r in judged) / max(1.0, statistics.fmean(
                    r.builds for r in judged))
                print(f"{'':<10} no-op inheritance: {statistics.fmean(r.inherited for r in results):.1f} verdicts "
                      f"per campaign without booting, about "
                      f"{statistics.fmean(r.inherited for r in results) * per_step:.0f} boots saved")
        if case.drift:
            print(f"{'':<10} (drift {case.drift:.0%} over {boots_per_campaign['engine']:.0f} boots: "
                  f"{per_boot['engine']:.3%} per boot of a host)")
        if a.baseline:
            old = trials(old_trial, case, a.trials, per_boot["old"], a.jobs)
            if not case.drift and not boots_per_campaign["old"]:
                boots_per_campaign["old"] = statistics.fmean(r.boots for r in old)
            print(row("old rule", old), flush=True)
    for number, ecase in enumerate(ENDPOINT_CASES, len(CASES) + 1):
        if a.cases and number not in a.cases:
            continue
        print(f"\n{number}. endpoints only: {ecase.name}")
        case_started = time.monotonic()
        ended = [endpoint_trial(ecase, seed) for seed in range(a.trials)]
        print(f"{endpoint_row(ended)} ({time.monotonic() - case_started:.0f} s)", flush=True)
    print(f"\ntotal {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
