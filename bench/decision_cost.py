"""What one decision of a campaign costs at a kernel release's size:
`python -m bench.decision_cost --candidates N [--skips K]`.

A kernel-shaped DAG of N candidates (bench/history/shape.py, seed 1), the evidence of a campaign
ceil(log2 N) steps in (commits drawn at random, each with a verdict of 90% as the planted
culprit makes it) and K skipped commits drawn at random; then one decision as the search takes
it (orchestrator.bisect.rounds.next_move: the posterior, the answer with its classes of skipped
commits, and the next pick). Printed: `decision: X s, peak Y MB`, X the median of three
decisions, Y the process's peak resident memory (the DAG's index included), and how long the
index took (once a campaign, when its search starts)."""

from __future__ import annotations

import argparse
import math
import random
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.history.shape import MIN_COMMITS, kernel_shape  # noqa: E402
from orchestrator.bisect.posterior import Dag, llr_of  # noqa: E402
from orchestrator.bisect.rounds import next_move  # noqa: E402
from orchestrator.measure.decide import ERROR  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--candidates", type=int, required=True)
    p.add_argument("--skips", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.candidates < MIN_COMMITS:
        p.error(f"--candidates: {a.candidates}: {MIN_COMMITS} at least")
    shape = kernel_shape(a.candidates, a.seed)
    names = [f"{i:040x}" for i in range(len(shape))]
    started = time.monotonic()
    dag = Dag(names, {c: [names[j] for j in shape.nodes[i].parents] for i, c in enumerate(names)})
    built = time.monotonic() - started
    rng = random.Random(a.seed)
    measured = rng.sample(range(len(dag) - 1), math.ceil(math.log2(len(dag))))
    evidence = {names[i]: llr_of(0.9 if dag.is_ancestor(names[shape.culprit], names[i]) else 0.1) for i in measured}
    skipped = {names[i] for i in rng.sample([i for i in range(len(dag) - 1) if i not in set(measured)], a.skips)}
    times = []
    for _ in range(3):
        started = time.monotonic()
        next_move(dag, evidence, 1, ERROR, skipped)
        times.append(time.monotonic() - started)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"decision: {statistics.median(times):.2f} s, peak {peak:.0f} MB ({len(dag)} candidates in {dag.segments} "
          f"segments, {a.skips} skipped; the DAG's index {built:.2f} s, once a campaign)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
