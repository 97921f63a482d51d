"""Synthetic comparisons for the report tests: made-up samples through the same table code as a
real comparison, so the renderers see every field filled."""

from __future__ import annotations

import random

from orchestrator.metrictable.cells import Comparison, VariantInfo
from orchestrator.metrictable.tabulate import MetricMeta, Point, build

JOBS = (1, 2, 4, 8)


def scheduler_comparison(variants: tuple[str, ...] = ("none", "bfq"), runs: int = 5) -> Comparison:
    """read_iops over a numjobs sweep: "none" scales with the jobs, "bfq" stays at about half
    of it; plus host CPU use of vCPUs 0 and 1 as descriptive metrics."""
    rng = random.Random(7)
    means = {"none": 1000.0, "bfq": 500.0, "mq-deadline": 900.0}
    samples: dict[str, dict[str, dict[str, list[float]]]] = {}
    for v in variants:
        samples[v] = {}
        for jobs in JOBS:
            iops = [means[v] * jobs ** 0.5 * rng.gauss(1.0, 0.03) for _ in range(runs)]
            cpu = {f"host_vcpu_used.{n}": [(0.6 if v == "bfq" else 0.3) + 0.1 * n + rng.gauss(0, 0.02)
                                           for _ in range(runs)] for n in (0, 1)}
            samples[v][f"numjobs={jobs}"] = {"read_iops": iops, **cpu}
    metrics = {"read_iops": MetricMeta("IOPS", "higher"), **{f"host_vcpu_used.{n}": MetricMeta("CPUs", "none")
                                                             for n in (0, 1)}}
    return build("Schedulers <none> & bfq", "fio randread", "numjobs",
                 [VariantInfo(v, f"scheduler={v}") for v in variants],
                 [Point(f"numjobs={jobs}", float(jobs)) for jobs in JOBS], metrics, samples, ["read_iops"],
                 notes=["synthetic data"])
