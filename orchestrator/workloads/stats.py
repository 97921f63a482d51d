"""Summaries over repetitions in the mmtests layout: mean, stddev, coeffvar, min, max."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean, stdev


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float  # sample standard deviation (n - 1); 0 for one sample
    coeffvar: float  # stddev / |mean| in percent; 0 when the mean is 0
    min: float
    max: float


def summarise(samples: list[float]) -> Summary:
    if not samples:
        raise ValueError("no samples to summarise")
    mean = fmean(samples)
    sd = stdev(samples) if len(samples) > 1 else 0.0
    return Summary(len(samples), mean, sd, 100.0 * sd / abs(mean) if mean else 0.0, min(samples), max(samples))
