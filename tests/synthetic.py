"""Synthetic comparisons for the report tests: made-up samples, summarised the way a real
comparison is, so the renderers see every field filled."""

from __future__ import annotations

import random
import statistics

from orchestrator.compare.model import Cell, Comparison, Row, VariantInfo
from orchestrator.workloads.stats import summarise

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
    metrics = [("read_iops", "IOPS", "higher")] + [(f"host_vcpu_used.{n}", "CPUs", "none") for n in (0, 1)]
    rows = tuple(Row(m, unit, direction, f"numjobs={jobs}", float(jobs),
                     tuple(_cell(v, samples[v][f"numjobs={jobs}"][m], samples[variants[0]][f"numjobs={jobs}"][m],
                                 direction, v == variants[0]) for v in variants))
                 for m, unit, direction in metrics for jobs in JOBS)
    return Comparison(
        title="Schedulers <none> & bfq", workload="fio randread", swept="numjobs",
        variants=tuple(VariantInfo(v, f"scheduler={v}") for v in variants), rows=rows, alpha=0.05,
        test="two-sided Mann-Whitney U against the baseline, Benjamini-Hochberg q < 0.05",
        verdict=("bfq: read_iops -50% at every numjobs",), notes=("synthetic data",), samples=samples,
        primary=("read_iops",))


def _cell(variant: str, values: list[float], base: list[float], direction: str, is_base: bool) -> Cell:
    b = statistics.fmean(base)
    diff = None if is_base else (statistics.fmean(values) - b) / abs(b) * 100.0
    significant = diff is not None and abs(diff) > 10
    return Cell(variant, summarise(values), statistics.median(values), diff,
                None if is_base else (0.008 if significant else 0.6),
                None if is_base else (0.01 if significant else 0.7), significant)
