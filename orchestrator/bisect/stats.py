"""Pure statistics helpers over samples of one metric."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from scipy import stats as sps

# Asymptotic relative efficiency of the Mann-Whitney U test against the t-test (normal data).
MWU_EFFICIENCY = 3 / math.pi


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float
    cov: float
    min: float
    max: float
    median: float


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("no samples")
    mean = statistics.fmean(samples)
    sd = statistics.stdev(samples) if len(samples) > 1 else 0.0
    return Summary(len(samples), mean, sd, sd / abs(mean) if mean else 0.0, min(samples), max(samples),
                   statistics.median(samples))


def robust_cov(samples: Sequence[float]) -> float:
    """Noise as 1.4826 x median absolute deviation / |median|: the CoV of normal data, but one
    stray run (a busy host) does not inflate it the way it inflates the standard deviation."""
    if len(samples) < 2:
        return 0.0
    med = statistics.median(samples)
    mad = statistics.median(abs(x - med) for x in samples)
    return 1.4826 * mad / abs(med) if med else 0.0


def noise_cov(samples: Sequence[float]) -> float:
    """The noise a campaign is judged by: the smaller of the usual CoV and the robust one.

    The standard deviation overstates noise when one run strays (a busy host); the MAD, with a
    third of its efficiency, overstates it by chance in small samples. A campaign is refused
    for noise only when both say it is too noisy."""
    return min(summarize(samples).cov, robust_cov(samples))


def relative_change(reference: float, value: float) -> float:
    """(value - reference) / |reference|: -0.1 means 10% below the reference."""
    if reference == 0:
        return math.inf if value > 0 else (-math.inf if value < 0 else 0.0)
    return (value - reference) / abs(reference)


def p_less(x: Sequence[float], y: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for "x tends to be smaller than y" (exact when small)."""
    if len(x) < 1 or len(y) < 1:
        return 1.0
    if len(set(x) | set(y)) == 1:
        return 1.0
    return float(sps.mannwhitneyu(x, y, alternative="less").pvalue)


def reps_to_detect(cov: float, change: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Samples per group for a one-sided rank test to see a relative `change` at noise `cov`.

    Normal approximation of the two-sample t-test, divided by the Mann-Whitney efficiency;
    at least 3, the smallest group for which an exact one-sided rank test can reach 0.05.
    """
    if change == 0:
        return math.inf  # type: ignore[return-value]
    z = sps.norm.ppf(1 - alpha) + sps.norm.ppf(power)
    n = 2 * (z * cov / abs(change)) ** 2 / MWU_EFFICIENCY
    return max(3, math.ceil(n))


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics."""
    xs = sorted(samples)
    n = len(xs)
    if n < 2:
        return (xs[0], xs[0]) if xs else (math.nan, math.nan)
    lo_rank = int(sps.binom.ppf((1 - confidence) / 2, n, 0.5))
    hi_rank = n - 1 - lo_rank
    lo_rank = max(0, min(lo_rank, n - 1))
    return xs[lo_rank], xs[max(lo_rank, hi_rank)]
