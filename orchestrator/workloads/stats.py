"""Summaries over repetitions in the mmtests layout: mean, stddev, coeffvar, min, max."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist, fmean, stdev


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


def reps_to_detect(coeffvar_pct: float, change_pct: float = 10.0, alpha: float = 0.05, power: float = 0.8) -> int:
    """Repetitions per kernel for a two-sided two-sample t-test at `alpha` to detect a
    `change_pct` shift of the mean with probability `power`, given the run-to-run CoV.

    The smallest n with n >= 2 (t_{1-a/2,v} + t_{power,v})^2 (cov/change)^2, v = 2n - 2, the t
    quantiles from the Cornish-Fisher expansion; this matches the exact noncentral-t answer
    from CoV 3 % up (checked to CoV 30 %). At least 3: two samples say nothing about spread.
    """
    for n in range(3, 100_000):
        v = 2 * n - 2
        if 2 * (_t_quantile(1 - alpha / 2, v) + _t_quantile(power, v)) ** 2 * (coeffvar_pct / change_pct) ** 2 <= n:
            return n
    raise ValueError(f"coefficient of variation {coeffvar_pct} % is too large to detect {change_pct} %")


def _t_quantile(p: float, v: int) -> float:
    z = NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v * v)
