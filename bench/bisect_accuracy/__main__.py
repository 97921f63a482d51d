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

`--noise B/W ...` runs the campaign cases chosen at those between-boot and within-boot CoVs
(percent) instead of their own. `--first-parent` adds to each row its twin with `first_parent:
true` on the same histories: the search over the main line's merges, then a second campaign
inside the merge it names (its first parent good, the merge bad); right when the second names
the culprit, the figures both campaigns' (the fake revert refuses a merge, as git's does).

Every trial is its own seed, run in `--jobs` processes (2 by default: these machines' cores);
the figures do not depend on how the trials are spread, and the wall time is printed. The
seeds are 0 to `--trials` - 1, or those `--seeds` names (e.g. `98`, `0-9`) to replay some
campaigns alone; `--each` lists every engine trial (seed, answer with its confidence, steps,
rounds, boots, builds).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.history.shape import MIN_COMMITS, kernel_shape  # noqa: E402
from orchestrator.bisect.confidence import HIGH_CONFIDENCE  # noqa: E402
from orchestrator.bisect.engine import CampaignRefused, Engine  # noqa: E402
from orchestrator.campaign.file import parse_campaign, parse_threshold  # noqa: E402
from orchestrator.decisions import Refusal, Role  # noqa: E402
from orchestrator.measure.decide import ERROR  # noqa: E402
from orchestrator.measure.endpoints import measure_endpoints  # noqa: E402
from orchestrator.measure.judge import Judge  # noqa: E402
from orchestrator.stats import p_less  # noqa: E402
from tests.fakes import FakeBuilder, FakeMeasurer, FakeVcs, MemoryStore  # noqa: E402

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
    steps: int = 0  # the search's steps (revisits included)
    rounds: int = 0  # the search's rounds (a round measures up to S commits at once)
    refused: bool = False  # the endpoints' check refused the campaign
    confidence: float = 0.0  # the answer's confidence


def seeds(text: str) -> list[int]:
    """A seed (`98`) or a range of them, both ends included (`0-9`)."""
    first, dash, last = text.partition("-")
    if not first.isdigit() or (dash and not last.isdigit()) or (dash and int(last) < int(first)):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a seed (e.g. 98) or a range of seeds (e.g. 0-9)")
    return list(range(int(first), int(last or first) + 1))


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


@dataclass(frozen=True)
class History:
    """What a simulated campaign bisects: the commits oldest first (the first is good, the last
    bad) with their parents (None: a line), the groups of commits with one kernel image, the
    commits that do not build and those whose kernel panics at boot, and the culprit."""

    shas: list[str]
    parents: dict[str, list[str]] | None
    groups: list[set[str]]
    culprit: int
    broken: frozenset[str] = frozenset()
    boot_broken: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Source:
    """Where a trial's history comes from: `linear` (COMMITS commits, the culprit at a random real
    change), `kernel:N` (bench/history/shape.py with the trial's seed: its culprit, its build-broken
    range and boot-broken pair, its comment-only commits as images equal to their parents'), or a
    repository's range (`topology`: `git rev-list --parents` oldest first, good first; the culprit
    at a random commit that is not a merge)."""

    name: str
    kernel: int = 0
    topology: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def history(self, rng: random.Random, seed: int, noops: float) -> History:
        if self.kernel:
            shape = kernel_shape(self.kernel, seed)
            shas = [hashlib.sha1(f"release {self.kernel} {seed}".encode()).hexdigest()] + [
                hashlib.sha1(f"kernel {self.kernel} {seed} {i}".encode()).hexdigest() for i in range(len(shape))]
            parents: dict[str, list[str]] = {shas[0]: []}
            for i, n in enumerate(shape.nodes):
                parents[shas[i + 1]] = [shas[j + 1] for j in n.parents] or [shas[0]]
            return History(shas, parents, [{shas[i + 1] for i in g} for g in shape.same_image()], shape.culprit + 1,
                           frozenset(shas[i + 1] for i in shape.build_broken),
                           frozenset(shas[i + 1] for i in shape.boot_broken))
        if self.topology:
            shas = [c for c, _ in self.topology]
            parents = {c: list(ps) for c, ps in self.topology}
            return History(shas, parents, [], rng.choice([i for i, (_, ps) in enumerate(self.topology) if len(ps) == 1]))
        shas, groups, real = history(rng, noops)
        return History(shas, None, groups, rng.choice(real[1:]))

    def candidates(self) -> int:
        return self.kernel or (len(self.topology) - 1 if self.topology else COMMITS - 1)


def source(text: str) -> Source:
    """`linear` or `kernel:N` (N commits, MIN_COMMITS at least)."""
    if text == "linear":
        return Source("linear")
    kind, _, size = text.partition(":")
    if kind != "kernel" or not size.isdigit() or int(size) < MIN_COMMITS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected linear or kernel:N (N commits, {MIN_COMMITS} at least)")
    return Source(text, kernel=int(size))


def noise(text: str) -> tuple[float, float]:
    """BETWEEN/WITHIN, the between-boot and within-boot CoV in percent."""
    between, _, within = text.partition("/")
    try:
        b, w = float(between), float(within)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected BETWEEN/WITHIN in percent, e.g. 13/11") from None
    if not (0 <= b < 100 and 0 <= w < 100):
        raise argparse.ArgumentTypeError(f"{text!r}: each CoV from 0 to 100 (percent)")
    return b / 100, w / 100


def repo_source(path: str, span: str) -> Source:
    """The topology of `git rev-list --parents A..B` in the repository at `path`: good (A) first,
    then the range oldest first; parents outside the range are good's ancestors."""
    good, _, bad = span.partition("..")
    if not good or not bad:
        raise SystemExit(f"--range: {span!r}: expected A..B")
    done = subprocess.run(["git", "-C", path, "rev-parse", "--verify", f"{good}^{{commit}}"], capture_output=True,
                          text=True)
    listed = subprocess.run(["git", "-C", path, "rev-list", "--topo-order", "--reverse", "--parents", span],
                            capture_output=True, text=True)
    if done.returncode or listed.returncode:
        raise SystemExit(f"--repo/--range: git cannot list {span} in {path}: "
                         f"{(done.stderr or listed.stderr).strip()[:200]}")
    root = done.stdout.strip()
    rows = [line.split() for line in listed.stdout.splitlines() if line.strip()]
    inside = {r[0] for r in rows}
    topology = ((root, ()),) + tuple((r[0], tuple(p for p in r[1:] if p in inside) or (root,)) for r in rows)
    return Source(f"{path} {span}", topology=topology)


def values(culprit: str, bad: set[str], drop: float, direction: str = "higher"):
    """The metric of each commit: 100 on the good side, `drop` worse where the culprit is in
    the commit's history (`bad`), and 100 again for bad with the culprit reverted."""
    worse = 100.0 * (1 - drop) if direction == "higher" else 100.0 / (1 - drop)

    def value(commit: str) -> float:
        if commit.startswith("revert-"):  # bad with that commit reverted
            return 100.0 if commit.removeprefix("revert-") == culprit else worse
        return worse if commit in bad else 100.0

    return value


@dataclass(frozen=True)
class Ran:
    """One campaign of a trial: its outcome (None: refused, with `refused` the reason), the
    boots and builds it took, the search's steps and rounds, the verdicts it inherited."""

    outcome: Any
    refused: str
    boots: int
    builds: set[str]
    steps: int
    rounds: int
    inherited: int


def campaign(case: Case, h: History, vcs: FakeVcs, good: int, bad: int, target: str, seed: int, drift_per_boot: float,
             slots: int, first_parent: bool = False) -> Ran:
    """The real engine on h's commits good..bad with fake builds and guests: the metric drops at
    the culprit and a revert restores it where `target` is reverted."""
    shas = h.shas
    c = parse_campaign({"name": "sim", "repository": "/nonexistent", "good": shas[good], "bad": shas[bad],
                        "workload": "sim",
                        "metric": {"name": "iops", "direction": case.direction, "threshold": case.threshold},
                        "runs_per_boot": 3, "first_parent": first_parent})
    store = MemoryStore()
    cid = store.new_campaign("sim", {})
    worse = {shas[i] for i in vcs.dag.descent(h.culprit).nonzero()[0].tolist()}
    builder = FakeBuilder(broken=h.broken, same_image=h.groups)
    hosts = [FakeMeasurer(values(target, worse, case.drop, case.direction), case.within, seed + 100_000 * k,
                          between=case.between, drift=-drift_per_boot, host=f"h{k}", boot_broken=h.boot_broken)
             for k in range(slots)]
    events: list[Any] = []
    engine = Engine(c, case.direction, vcs, builder, hosts[0], store, on_event=events.append,
                    slots=hosts if slots > 1 else ())
    try:
        out, refused = engine.run(cid), ""
    except CampaignRefused as exc:
        out, refused = None, f"refused: {exc}"[:200]
    steps = sum(1 for d in store.decisions(cid) if d.role is Role.STEP)
    rounds = sum(1 for e in events if e.phase == "round")
    inherited = (store.campaign(cid).result or {}).get("inherited", 0) if out is not None else 0
    return Ran(out, refused, sum(m.boots for m in hosts), set(builder.built), steps, rounds, inherited)


def entry(vcs: FakeVcs, culprit: int, bad: int) -> int:
    """The first commit of bad's first-parent chain that has the culprit: the merge that brought
    it in (the culprit itself when it is on that chain)."""
    at, last = bad, bad
    while vcs.dag.is_ancestor(vcs.commits[culprit], vcs.commits[at]):
        last = at
        parents = vcs.parents[vcs.commits[at]]
        if not parents:
            break
        at = vcs.index[parents[0]]
    return last


def engine_trial(case: Case, seed: int, drift_per_boot: float, slots: int = 1, where: Source = Source("linear"),
                 first_parent: bool = False) -> Trial:
    """One simulated campaign. With `first_parent`: the campaign with `first_parent: true`
    (the merges of the main line), then, when it names a merge, a second campaign inside that
    merge (its first parent good, the merge bad): right when the second names the culprit; the
    boots, builds, steps and rounds are both campaigns'."""
    rng = random.Random(seed)
    h = where.history(rng, seed, case.noops)
    shas = h.shas
    vcs = FakeVcs(shas, h.parents)
    bad = len(shas) - 1
    target = entry(vcs, h.culprit, bad) if first_parent else h.culprit
    runs = [campaign(case, h, vcs, 0, bad, shas[target], seed, drift_per_boot, slots, first_parent)]
    out = runs[0].outcome
    if first_parent and out is not None and out.outcome == "found" and len(vcs.parents[out.culprit]) > 1:
        inside = vcs.index[out.culprit]
        runs.append(campaign(case, h, vcs, vcs.index[vcs.parents[out.culprit][0]], inside, shas[h.culprit],
                             seed + 50_000, drift_per_boot, slots))
        out = runs[1].outcome
    builds = len(set().union(*(r.builds for r in runs)))
    boots = sum(r.boots for r in runs)
    steps, rounds = sum(r.steps for r in runs), sum(r.rounds for r in runs)
    if out is None:
        return Trial(False, False, True, builds, boots, 0, seed, next(r.refused for r in runs if r.refused),
                     steps, rounds, refused=True)
    right = out.outcome == "found" and out.culprit == shas[h.culprit]
    confident = out.outcome == "found" and out.confidence >= HIGH_CONFIDENCE
    index = {s: i for i, s in enumerate(shas)}
    named = (f"commit {index[out.culprit]}" if out.outcome == "found" else
             f"{out.outcome} {', '.join(str(index.get(x, x)) for x in out.candidates)}")
    answer = f"culprit {h.culprit}, answered {named} with confidence {out.confidence:.3f}"
    return Trial(right, confident and not right, not confident, builds, boots, sum(r.inherited for r in runs), seed,
                 answer, steps, rounds, confidence=out.confidence)


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
    value = values(shas[culprit], set(shas[culprit:]), case.drop)
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

    vcs = FakeVcs(shas)
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


def trials(fn: Callable[..., Trial], case: Case, chosen: list[int], drift_per_boot: float, jobs: int,
           slots: int = 1, **options: Any) -> list[Trial]:
    """A trial for each seed `chosen`, in `jobs` processes: every trial is its own seed, so the
    results do not depend on how they are spread."""
    run = partial(_one, fn, case, drift_per_boot, slots, options)
    if jobs <= 1 or len(chosen) <= 1:
        return [run(seed) for seed in chosen]
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(run, chosen, chunksize=max(1, min(25, len(chosen) // (4 * jobs)))))


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
            f"{sum(r.refused for r in results):>7} "
            f"{statistics.fmean(r.builds for r in results):>7.1f} {statistics.fmean(boots):>7.1f} "
            f"{statistics.median(boots):>6.0f} {p95(boots):>5} {statistics.fmean(r.inherited for r in results):>6.1f} "
            f"{statistics.fmean(r.steps for r in results):>6.1f} {statistics.fmean(r.rounds for r in results):>6.1f}")


HEADER = (f"{'engine':<10} {'right':>11} {'rate':>6} {'95% CI':<16} {'wrong!':>6} {'low':>6} {'refused':>7} "
          f"{'builds':>7} {'boots':>7} {'median':>6} {'p95':>5} {'inher.':>6} {'steps':>6} {'rounds':>6}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--trials", type=int, default=1000, help="trials a row, seeds 0 to TRIALS - 1")
    p.add_argument("--seeds", type=seeds, nargs="+", default=[],
                   help="the trials' seeds instead (N or A-B, both included), e.g. 98 or 0-9")
    p.add_argument("--each", action="store_true",
                   help="list every engine trial: seed, answer and confidence, steps, rounds, boots, builds")
    p.add_argument("--cases", type=int, nargs="+", help="case numbers (1-based) to run; default all")
    p.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8], help="lab slots, one host each")
    p.add_argument("--history", type=source, nargs="+", default=[Source("linear")],
                   help="linear (the default) or kernel:N, a kernel-shaped history of N commits (bench/history)")
    p.add_argument("--noise", type=noise, nargs="+", default=[],
                   help="BETWEEN/WITHIN in percent (e.g. 13/11): the campaign cases at these noise levels instead "
                        "of their own")
    p.add_argument("--first-parent", action="store_true",
                   help="also each row with first_parent: true, then a second campaign inside the merge it names")
    p.add_argument("--repo", help="a repository whose range (--range A..B) is bisected instead")
    p.add_argument("--range", dest="span", help="the range of --repo, A..B")
    p.add_argument("--baseline", action="store_true", help="also the old rule (one slot, linear history)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)")
    p.add_argument("--misses", action="store_true", help="list the engine's trials that missed")
    a = p.parse_args()
    if bool(a.repo) != bool(a.span):
        p.error("--repo and --range go together")
    sources = [repo_source(a.repo, a.span)] if a.repo else a.history
    a.seeds = sorted({seed for chosen in a.seeds for seed in chosen}) or list(range(a.trials))
    started = time.monotonic()
    print(f"{len(a.seeds)} seeded trials per row, {a.jobs} process(es); wrong!: wrong culprit with confidence >= "
          f"{HIGH_CONFIDENCE:.0%}; low: low confidence or no single answer (refused ones included); refused: the "
          f"endpoints' check refused the campaign; S slots on S fake hosts, each with its "
          f"own references; steps: the search's steps (revisits included), rounds: its rounds (S steps at most each), "
          f"means; fp: first_parent: true, then a campaign inside the merge it names (both campaigns' figures)")
    for where in sources:
        n = where.candidates()
        print(f"\n== {where.name}: {n} candidates, ceil(log2 N) = {math.ceil(math.log2(n))}; " + (
            "culprit at a random real change" if where.name == "linear" else
            "the maker's culprit, build-broken range and boot-broken pair; comment-only commits share their parent's "
            "image" if where.kernel else "culprit at a random commit that is not a merge"))
        run_cases(a, where)
    for number, ecase in enumerate(ENDPOINT_CASES, len(CASES) + 1):
        if a.cases and number not in a.cases:
            continue
        print(f"\n{number}. endpoints only: {ecase.name}")
        case_started = time.monotonic()
        ended = [endpoint_trial(ecase, seed) for seed in a.seeds]
        print(f"{endpoint_row(ended)} ({time.monotonic() - case_started:.0f} s)", flush=True)
    print(f"\ntotal {(time.monotonic() - started) / 60:.1f} min")
    return 0


def run_cases(a: argparse.Namespace, where: Source) -> None:
    """The campaign cases on one source of histories."""
    boots_per_campaign = {"engine": 0.0, "old": 0.0}  # from the first case without drift: the drift's scale
    chosen = [(n, c) for n, c in enumerate(CASES, 1) if not a.cases or n in a.cases]
    if a.noise:
        chosen = [(n, replace(c, name=f"case {n}'s change ({'+' if c.direction == 'lower' else '-'}{c.drop:.0%}, threshold "
                                 f"{c.threshold}) at between {b:.1%}, within {w:.1%}", between=b, within=w))
                  for n, c in chosen for b, w in a.noise]
    for number, case in chosen:
        print(f"\n{number}. {case.name}")
        print(HEADER)
        per_boot = {k: case.drift / v if case.drift and v else 0.0 for k, v in boots_per_campaign.items()}
        for slots, first_parent in [(s, fp) for s in a.slots for fp in (False, True) if fp <= a.first_parent]:
            case_started = time.monotonic()
            results = trials(engine_trial, case, a.seeds, per_boot["engine"], a.jobs, slots, where=where,
                             first_parent=first_parent)
            if not case.drift and not boots_per_campaign["engine"]:
                boots_per_campaign["engine"] = statistics.fmean(r.boots for r in results)
            print(f"{row(f'S={slots}' + (' fp' if first_parent else ''), results)} "
                  f"({time.monotonic() - case_started:.0f} s)", flush=True)
            if a.each:
                for r in results:
                    print(f"{'':<10} seed {r.seed}: {r.answer or 'no answer'} (confidence {r.confidence!r}); "
                          f"steps {r.steps}, rounds {r.rounds}, boots {r.boots}, builds {r.builds}")
            if a.misses:
                for r in results:
                    if not r.right:
                        print(f"{'':<10} miss: seed {r.seed}: {r.answer}")
            if case.noops and slots == 1 and where.name == "linear":
                judged = [r for r in results if r.boots]
                per_step = statistics.fmean(r.boots for r in judged) / max(1.0, statistics.fmean(
                    r.builds for r in judged))
                print(f"{'':<10} no-op inheritance: {statistics.fmean(r.inherited for r in results):.1f} verdicts "
                      f"per campaign without booting, about "
                      f"{statistics.fmean(r.inherited for r in results) * per_step:.0f} boots saved")
        if case.drift:
            print(f"{'':<10} (drift {case.drift:.0%} over {boots_per_campaign['engine']:.0f} boots: "
                  f"{per_boot['engine']:.3%} per boot of a host)")
        if a.baseline and where.name == "linear":
            old = trials(old_trial, case, a.seeds, per_boot["old"], a.jobs)
            if not case.drift and not boots_per_campaign["old"]:
                boots_per_campaign["old"] = statistics.fmean(r.boots for r in old)
            print(row("old rule", old), flush=True)


if __name__ == "__main__":
    sys.exit(main())
