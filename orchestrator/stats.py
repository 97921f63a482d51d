"""The one statistics module: summaries, the nested (boot-level) model, the sequential decision
a bisection step is judged by, and the tests of two kernels or settings on boots (bisect's
confirmation, verify and compare). Pure functions over numbers.

Conventions used everywhere in vmbisect:
- A coefficient of variation (CoV) is a fraction (0.03 for 3%); renderers print it in percent.
- Runs of one boot are not independent samples: most of the noise of a kernel benchmark in a
  guest is between boots (cache placement, host memory layout, IRQ routing), little within one.
  The unit of replication is the boot; a boot's value is the mean of its runs, on a log scale
  so that noise and changes are relative.
- Changes are relative to the reference: -0.10 means 10% below it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Hashable, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import numpy as np


@functools.cache
def _np() -> Any:
    """numpy, imported when a computation needs it: `vmbisect --help` and the commands that never
    compute stay quick (scipy.stats alone took most of a 0.75 s start)."""
    import numpy

    return numpy


@functools.cache
def _sps() -> Any:
    """scipy.stats, imported when a test needs it (see _np)."""
    from scipy import stats

    return stats

# ---- summaries -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Summary:
    """mmtests' summary of repeated values; `cov` is a fraction (stddev / |mean|)."""

    n: int
    mean: float
    stddev: float  # sample standard deviation (n - 1); 0 for one sample
    cov: float
    min: float
    max: float
    median: float


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("no samples to summarise")
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
    """The smaller of the usual CoV and the robust one: the first overstates noise when one value
    strays, the second (a third of the efficiency) overstates it by chance in small samples."""
    return min(summarize(samples).cov, robust_cov(samples))


def relative_change(reference: float, value: float) -> float:
    """(value - reference) / |reference|: -0.1 means 10% below the reference."""
    if reference == 0:
        return math.inf if value > 0 else (-math.inf if value < 0 else 0.0)
    return (value - reference) / abs(reference)


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics."""
    xs = sorted(samples)
    n = len(xs)
    if n < 2:
        return (xs[0], xs[0]) if xs else (math.nan, math.nan)
    lo_rank = int(_sps().binom.ppf((1 - confidence) / 2, n, 0.5))
    hi_rank = n - 1 - lo_rank
    lo_rank = max(0, min(lo_rank, n - 1))
    return xs[lo_rank], xs[max(lo_rank, hi_rank)]


# ---- rank tests and multiple comparisons ------------------------------------------------------

def p_less(x: Sequence[float], y: Sequence[float]) -> float:
    """One-sided Mann-Whitney U p-value for "x tends to be smaller than y" (exact when small)."""
    if len(x) < 1 or len(y) < 1:
        return 1.0
    if len(set(x) | set(y)) == 1:
        return 1.0
    return float(_sps().mannwhitneyu(x, y, alternative="less").pvalue)


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """Adjusted p-values (q) for a family of tests, in the given order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    q = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        q[i] = running
    return q


# ---- how many repetitions ----------------------------------------------------------------------

def _t_quantile(p: float, v: int) -> float:
    z = statistics.NormalDist().inv_cdf(p)
    return z + (z**3 + z) / (4 * v) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v * v)


def reps_to_detect(cov: float, change: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Independent repetitions per variant for a two-sided two-sample t-test at `alpha` to see a
    relative `change` with probability `power` at noise `cov` (both fractions).

    The smallest n with n >= 2 (t_{1-a/2,v} + t_{power,v})^2 (cov/change)^2, v = 2n - 2, the t
    quantiles from the Cornish-Fisher expansion; this matches the exact noncentral-t answer
    from CoV 3% up (checked to 30%). At least 3: two samples say nothing about spread. The
    repetitions are independent ones: boots, not runs of one boot (see boots_needed)."""
    if change == 0:
        raise ValueError("a change of 0 cannot be detected")
    for n in range(3, 100_000):
        v = 2 * n - 2
        if 2 * (_t_quantile(1 - alpha / 2, v) + _t_quantile(power, v)) ** 2 * (cov / change) ** 2 <= n:
            return n
    raise ValueError(f"a CoV of {cov:.1%} is too large to detect a change of {change:.1%}")


def boot_cov(between_cov: float, within_cov: float, runs_per_boot: int) -> float:
    """The noise of one boot's value (the mean of its runs)."""
    return math.sqrt(between_cov**2 + within_cov**2 / max(1, runs_per_boot))


def boots_needed(between_cov: float, within_cov: float, runs_per_boot: int, change: float,
                 error: float) -> int:
    """Boots per commit for a bisection step to reach a verdict whose chance of being wrong is
    below `error`, when the step behaves like one reference and the references are `change`
    apart: the sequential test gains on average d^2/2 of log odds per boot, d the gap in units
    of a boot's noise, and needs log(1/error) of it. More runs per boot help only as far as the
    within-boot noise goes; the between-boot noise is paid in boots. At least 2."""
    gap = abs(math.log1p(change))
    sd = boot_cov(between_cov, within_cov, runs_per_boot)
    if gap == 0:
        raise ValueError("a change of 0 cannot be detected")
    if sd == 0:
        return 2
    d = gap / sd
    return max(2, math.ceil(2 * math.log(1 / error) / d**2))


# ---- the nested model --------------------------------------------------------------------------

@dataclass(frozen=True)
class Boot:
    """One guest boot: `seq` orders boots in time, `runs` its values,
    `busy`: its host had not settled when the guest started; `taken`: the share of its host CPUs'
    time other work took during the boot; `to_agent_s`: how long its guest took to reach the
    agent (0: not known; docs/campaign.md, "Quiet host"); `id`: the store's boot id (0: a boot
    not read from a store)."""

    seq: int
    runs: tuple[float, ...]
    busy: bool = False
    taken: float = 0.0
    to_agent_s: float = 0.0
    id: int = dataclasses.field(default=0, compare=False)

    @functools.cached_property
    def value(self) -> float:
        """The boot's value: log of the mean of its runs (computed once: a boot's runs never
        change, a boot with one run more is another Boot)."""
        return math.log(statistics.fmean(self.runs))


@dataclass(frozen=True)
class Components:
    """Noise of a metric split into between-boot and within-boot parts (CoVs, fractions), with
    the degrees of freedom each estimate rests on."""

    between_cov: float
    within_cov: float
    runs_per_boot: float
    between_df: int
    within_df: int

    @property
    def boot_cov(self) -> float:
        return math.sqrt(self.between_cov**2 + self.within_cov**2 / max(1.0, self.runs_per_boot))

    def describe(self) -> str:
        return (f"between-boot CoV {self.between_cov:.1%}, within-boot CoV {self.within_cov:.1%} "
                f"({self.between_df + 1 if self.between_df else 0}+ boots)")


def components(groups: Sequence[Sequence[Boot]]) -> Components:
    """Variance components from boots of several commits (each group one commit, or one image).

    Within: runs around their boot's mean (log scale), pooled. Boot-level: boot values around
    their group's mean, pooled; the between-boot part is what the within-boot noise does not
    explain (never below 0)."""
    ss_w = df_w = ss_b = df_b = 0.0
    runs = []
    for boots in groups:
        values = [b.value for b in boots if b.runs and min(b.runs) > 0]
        for b in boots:
            if len(b.runs) > 1 and min(b.runs) > 0:
                logs = [math.log(x) for x in b.runs]
                m = statistics.fmean(logs)
                ss_w += sum((x - m) ** 2 for x in logs)
                df_w += len(logs) - 1
            runs.append(len(b.runs))
        if len(values) > 1:
            m = statistics.fmean(values)
            ss_b += sum((v - m) ** 2 for v in values)
            df_b += len(values) - 1
    var_w = ss_w / df_w if df_w else 0.0
    r = statistics.fmean(runs) if runs else 1.0
    var_b = ss_b / df_b if df_b else 0.0
    return Components(math.sqrt(max(0.0, var_b - var_w / r)), math.sqrt(var_w), r, int(df_b), int(df_w))


def boot_variance(boots: Sequence[Boot]) -> tuple[float, int]:
    """One group's sum of squares of boot values around their mean, and its degrees of freedom
    ((0.0, 0) for fewer than two boots)."""
    if len(boots) < 2:
        return 0.0, 0
    values = [b.value for b in boots]
    m = statistics.fmean(values)
    return sum((v - m) ** 2 for v in values), len(values) - 1


def pooled_boot_variance(groups: Sequence[Sequence[Boot]]) -> tuple[float, int]:
    """Sum of squares of boot values around their group means, and its degrees of freedom."""
    return pooled(boot_variance(boots) for boots in groups)


def pooled(parts: Iterable[tuple[float, int]]) -> tuple[float, int]:
    """Groups' sums of squares and degrees of freedom (boot_variance) added up, in their order:
    the same sum whether each group's part was computed now or kept from before."""
    ss, df = 0.0, 0
    for part_ss, part_df in parts:
        if part_df:
            ss += part_ss
            df += part_df
    return ss, df


@dataclass(frozen=True)
class StepOdds:
    """Where a step's boots place it between two references.

    `p_bad`: posterior probability that the step behaves like the bad reference rather than
    the good one (equal prior odds); `position`: the step's mean on the good (0) to bad (1)
    line; `drift`: the fitted change of the metric per 100 boots (relative), 0 when not fitted;
    `df`: degrees of freedom of the noise estimate; `change`, `change_se`: the step's distance
    from the good reference on the log scale, and its standard error."""

    p_bad: float
    position: float
    drift: float
    drift_t: float
    boot_sd: float
    df: int
    fit_p: float = 1.0
    change: float = 0.0
    change_se: float = 0.0

    @property
    def p_wrong(self) -> float:
        return min(self.p_bad, 1 - self.p_bad)

    def p_past(self, threshold: float) -> float:
        """The probability that the step's change from good lies past `threshold` (relative,
        signed in the bad direction: -0.10 for 10% lower), Student t on the fit's noise."""
        if self.change_se <= 0:
            return 0.5
        z = (self.change - math.log1p(threshold)) / self.change_se
        return float(_sps().t.cdf(z if threshold > 0 else -z, self.df))

    @property
    def verdict(self) -> str:
        return "bad" if self.p_bad > 0.5 else "good"


def _design(groups: Sequence[Sequence[Boot]], slope: bool) -> tuple[np.ndarray, np.ndarray]:
    rows, ys = [], []
    for g, boots in enumerate(groups):
        for b in boots:
            row = [0.0] * len(groups)
            row[g] = 1.0
            if slope:
                row.append(b.seq / 100.0)
            rows.append(row)
            ys.append(b.value)
    return _np().array(rows), _np().array(ys)


def fit_groups(groups: Sequence[Sequence[Boot]], slope: bool, prior_ss: float = 0.0,
               prior_df: int = 0) -> tuple[np.ndarray, np.ndarray, float, int] | None:
    """Least squares: one mean per group (log scale), optionally a common linear drift over boot
    sequence; the residual variance pooled with `prior_ss`/`prior_df` from other commits.
    Returns (coefficients, their covariance, residual variance, df), or None when the noise
    cannot be estimated yet."""
    x, y = _design(groups, slope)
    if len(y) == 0 or _np().linalg.matrix_rank(x) < x.shape[1]:
        return None
    beta, *_ = _np().linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    df = len(y) - x.shape[1] + prior_df
    if df < 1:
        return None
    s2 = (float(resid @ resid) + prior_ss) / df
    cov = s2 * _np().linalg.inv(x.T @ x)
    return beta, cov, s2, df


# A host drifts less often than it stays level (the drift guard is there for the exception): one
# in four campaigns a priori. At even odds a stationary campaign spent 3 boots more (median 77
# against 74 of 1,000 simulated campaigns at 8% between-boot noise); the host that slows 10% over
# the campaign was found as often at both (993 of 1,000, none wrong with high confidence).
DRIFT_PRIOR_ODDS = 1 / 3


def step_odds(good: Sequence[Boot], bad: Sequence[Boot], step: Sequence[Boot], prior_ss: float = 0.0,
              prior_df: int = 0, drift: bool = True) -> StepOdds | None:
    """The sequential test of one bisection step on boot values.

    The references give two hypotheses for the step's mean: the good one's and the bad one's.
    Model: boot value = group mean (+ drift x boot sequence) + noise, fitted over the good, bad
    and step boots; the noise pooled with the other commits' boots of the campaign. The
    likelihood of the step's estimated distance to each reference (Student t, with the
    uncertainty of both means) gives the odds; `fit_p` says how well the nearer reference
    explains the step (a step far from both is neither). None when the noise cannot be
    estimated yet.

    Whether the host drifts is itself uncertain, so the odds average the two models, a level
    host and a linear drift, weighted by how well each explains the boots (`drift_weight`,
    once the references have boots spread over time, at least 3 each). The drift model alone
    carries the slope's uncertainty into every step: the references' level at the newest
    boot is an extrapolation whose variance is about 4x their mean's, and a stationary host
    paid about a quarter of a campaign's boots for it (docs/campaign.md, step 3). Switching
    the drift in only once its t reached 2 took the first references' chance slopes at face
    value and extrapolated them (stationary campaigns ended on ambiguous skips, drifting ones
    on wrong steps): the average never switches, a chance slope moves the odds only by its
    weight, and a real one takes over as its t grows."""
    level = _odds([good, bad, step], False, prior_ss, prior_df)
    if not (drift and drift_estimable(good, bad)):
        return level
    sloped = _odds([good, bad, step], True, prior_ss, prior_df)
    if level is None or sloped is None:
        return sloped or level
    w = drift_weight(sloped.drift_t, len(good) + len(bad) + len(step))
    main = sloped if w >= 0.5 else level
    return dataclasses.replace(main, p_bad=w * sloped.p_bad + (1 - w) * level.p_bad,
                               fit_p=w * sloped.fit_p + (1 - w) * level.fit_p, drift=sloped.drift,
                               drift_t=sloped.drift_t)


def drift_weight(t: float, n: int) -> float:
    """The probability of the drift model against a level host, from the slope's t statistic
    over `n` boots: prior odds DRIFT_PRIOR_ODDS times the Bayes factor of one more parameter in
    the BIC approximation, exp((t^2 - ln n) / 2). A slope of no consequence (t near 0) over 40
    boots weighs about 0.05; t = 3 about 0.83, t = 4 0.99."""
    log_odds = (t * t - math.log(max(2, n))) / 2 + math.log(DRIFT_PRIOR_ODDS)
    return 1 / (1 + math.exp(-max(-700.0, min(700.0, log_odds))))


def _odds(groups: Sequence[Sequence[Boot]], slope: bool, prior_ss: float, prior_df: int) -> StepOdds | None:
    """step_odds of one model (`slope`: with the common drift)."""
    fit = fit_groups(groups, slope, prior_ss, prior_df)
    if fit is None:
        return None
    beta, cov, s2, df = fit
    c_good = _np().zeros(len(beta))
    c_good[[2, 0]] = [1.0, -1.0]
    c_bad = _np().zeros(len(beta))
    c_bad[[2, 1]] = [1.0, -1.0]
    d_good, d_bad = float(c_good @ beta), float(c_bad @ beta)
    se_good = math.sqrt(float(c_good @ cov @ c_good))
    se_bad = math.sqrt(float(c_bad @ cov @ c_bad))
    log_good = _sps().t.logpdf(d_good / se_good, df) - math.log(se_good)
    log_bad = _sps().t.logpdf(d_bad / se_bad, df) - math.log(se_bad)
    llr = max(-700.0, min(700.0, log_good - log_bad))
    gap = float(beta[1] - beta[0])
    drift_rate = float(beta[3]) if slope else 0.0
    drift_t = drift_rate / math.sqrt(float(cov[3, 3])) if slope and cov[3, 3] > 0 else 0.0
    p_bad = 1 / (1 + math.exp(llr))
    nearer = abs(d_bad / se_bad) if p_bad > 0.5 else abs(d_good / se_good)
    fit_p = float(2 * _sps().t.sf(nearer, df))
    return StepOdds(p_bad, d_good / gap if gap else 0.0, drift_rate, drift_t, math.sqrt(s2), df, fit_p, d_good, se_good)


@dataclass(frozen=True)
class TwoSample:
    """`b` against `a` with the boot as the unit: relative change of b, its 95% interval, the
    two-sided p-value of the t-test, and the boots on each side (`paired`: the same boots ran
    both, n_a = n_b of them)."""

    change: float
    low: float
    high: float
    p: float
    n_a: int
    n_b: int
    se: float = 0.0  # of the log change (relative)
    df: float = 1.0
    paired: bool = False
    pooled: bool = False  # the boot noise pooled over the campaign's boots, not the two sides' own

    def describe(self) -> str:
        boots = f"{self.n_a} boots, paired" if self.paired else f"{self.n_a}+{self.n_b} boots"
        if self.pooled:
            boots += f", noise pooled over the campaign (df {self.df:.0f})"
        return f"{self.change:+.1%} (95% CI {self.low:+.1%}..{self.high:+.1%}, p={self.p:.2g}, {boots})"

    def detectable(self, alpha: float, power: float = 0.8) -> float:
        """The relative change this test sees with probability `power` at level `alpha`."""
        return float((_sps().t.ppf(1 - alpha / 2, self.df) + _sps().t.ppf(power, self.df)) * self.se)


def _t_test(diff: float, se: float, df: float, n_a: int, n_b: int, scale: float | None, paired: bool,
            pooled: bool = False) -> TwoSample:
    """A difference of levels with its standard error as a TwoSample: on a log scale when
    `scale` is None, else linear and relative to `scale` (the reference's level)."""
    if se == 0:
        p, half = (0.0 if diff else 1.0), 0.0
    else:
        p, half = float(2 * _sps().t.sf(abs(diff / se), df)), float(_sps().t.ppf(0.975, df)) * se
    if scale is None:
        return TwoSample(math.expm1(diff), math.expm1(diff - half), math.expm1(diff + half), p, n_a, n_b, se, df,
                         paired, pooled)
    rel = 1 / abs(scale) if scale else 0.0
    return TwoSample(diff * rel, (diff - half) * rel, (diff + half) * rel, p, n_a, n_b, se * rel, df, paired)


def _welch(va: Sequence[float], vb: Sequence[float], scale: float | None) -> TwoSample:
    sa, sb = statistics.variance(va) / len(va), statistics.variance(vb) / len(vb)
    se = math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / (sa**2 / (len(va) - 1) + sb**2 / (len(vb) - 1)) if se else 1.0
    return _t_test(statistics.fmean(vb) - statistics.fmean(va), se, df, len(va), len(vb), scale, False)


def compare_boots(a: Sequence[Boot], b: Sequence[Boot]) -> TwoSample | None:
    """Welch's t-test on boot values (log scale): what a comparison of two kernels can claim
    when the boot is the unit of replication. None with fewer than 2 boots on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    return _welch([x.value for x in a], [x.value for x in b], None)


def variance_ratio(a: Sequence[Boot], b: Sequence[Boot]) -> tuple[float, float, float] | None:
    """The between-boot noise of `b` against `a`'s: the ratio of the standard deviations of
    their boot values (log scale), with its 95% interval from the F distribution (boot values
    taken as normal). None with fewer than 2 boots on a side or no spread in `a`."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance([x.value for x in a]), statistics.variance([x.value for x in b])
    if va == 0:
        return None
    f = vb / va
    f_dist = _sps().f
    hi_q, lo_q = f_dist.ppf(0.975, len(b) - 1, len(a) - 1), f_dist.ppf(0.025, len(b) - 1, len(a) - 1)
    return math.sqrt(f), math.sqrt(f / float(hi_q)), math.sqrt(f / float(lo_q))


def compare_pooled(a: Sequence[Boot], b: Sequence[Boot], ss: float, df: int) -> TwoSample | None:
    """`b` against `a` (boots of their own) with the boot as the unit and one noise model for
    the campaign: the t-test of the boot levels' difference (log scale) whose boot variance is
    pooled over the campaign's other boots (sum of squares `ss`, `df` degrees of freedom, from
    pooled_boot_variance) and the two sides' own. Welch on 3+3 boots estimates the noise from 4
    degrees of freedom and needs about twice the boots to see the same change; a sequential
    confirmation that looks after every boot pair would also take a variance small by chance
    at face value. None with fewer than 2 boots on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    own_ss, own_df = pooled_boot_variance([a, b])
    dof = df + own_df
    s2 = (ss + own_ss) / dof
    diff = statistics.fmean(x.value for x in b) - statistics.fmean(x.value for x in a)
    return _t_test(diff, math.sqrt(s2 * (1 / len(a) + 1 / len(b))), dof, len(a), len(b), None, False, True)


def compare_runs(a: Mapping[Hashable, Sequence[float]], b: Mapping[Hashable, Sequence[float]]) -> TwoSample | None:
    """`b` against `a`, their runs grouped by the boot that took them (boot -> values); the boot
    is the unit, a boot's level the mean of its runs:

    - boots of their own on each side (different kernels): Welch's t-test on the boots'
      levels, as compare_boots;
    - the same boots ran both (one guest, a setting switched between runs, A B B A): each
      boot's difference is one observation (the boot's own level cancels out), a paired t-test
      with boots - 1 degrees of freedom. Runs of one boot are never counted as independent.

    Levels are logs (changes relative) when every value is positive, else the plain values,
    the change relative to a's level. None with fewer than 2 boots (2 shared boots when
    paired), or when the two share some boots but not all."""
    a = {k: list(v) for k, v in a.items() if v}
    b = {k: list(v) for k, v in b.items() if v}
    log = all(x > 0 for runs in (*a.values(), *b.values()) for x in runs)

    def level(runs: Sequence[float]) -> float:
        return math.log(statistics.fmean(runs)) if log else statistics.fmean(runs)

    shared = [k for k in a if k in b]
    if shared and (len(shared) != len(a) or len(shared) != len(b)):
        return None
    if shared:
        if len(shared) < 2:
            return None
        diffs = [level(b[k]) - level(a[k]) for k in shared]
        scale = None if log else statistics.fmean(level(a[k]) for k in shared)
        se = statistics.stdev(diffs) / math.sqrt(len(diffs))
        return _t_test(statistics.fmean(diffs), se, len(diffs) - 1, len(diffs), len(diffs), scale, True)
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = [level(r) for r in a.values()], [level(r) for r in b.values()]
    return _welch(va, vb, None if log else statistics.fmean(va))


def drift_estimable(good: Sequence[Boot], bad: Sequence[Boot]) -> bool:
    """The references have boots enough, spread over time, to estimate a common drift."""
    return len(good) >= 3 and len(bad) >= 3 and len({b.seq for b in (*good, *bad)}) >= 4


def drift(good: Sequence[Boot], bad: Sequence[Boot]) -> tuple[float, float]:
    """The references' common linear drift (log change per 100 boots, least squares, no prior)
    and its t statistic; (0, 0) while it cannot be estimated."""
    if not drift_estimable(good, bad):
        return 0.0, 0.0
    fit = fit_groups([good, bad], True)
    if fit is None:
        return 0.0, 0.0
    beta, cov, _s2, _df = fit
    se = math.sqrt(float(cov[2, 2]))
    return float(beta[2]), float(beta[2] / se) if se else 0.0


def evidence(t: TwoSample, expected: float) -> float:
    """Log Bayes factor of a measured change for "the change is `expected`" (relative) against
    "there is no change" (Student t likelihoods with the test's own uncertainty). Positive
    supports the expected change; it composes with a prior by adding to its log odds."""
    if t.se <= 0:
        return 0.0
    observed, target = math.log1p(t.change), math.log1p(expected)
    return float(_sps().t.logpdf((observed - target) / t.se, t.df) - _sps().t.logpdf(observed / t.se, t.df))


def ratio(num: float, se_num: float, den: float, se_den: float, df: float) -> tuple[float, float, float, float]:
    """`num / den` of two independent estimates with their standard errors: the ratio, its
    standard error (delta method) and its 95% interval (Student t, `df` degrees of freedom)."""
    if not den:
        return 0.0, math.inf, -math.inf, math.inf
    r = num / den
    se = math.sqrt(se_num**2 + (r * se_den) ** 2) / abs(den)
    half = float(_sps().t.ppf(0.975, max(1.0, df))) * se
    return r, se, r - half, r + half


# ---- stray boots -------------------------------------------------------------------------------

STRAY_K = 4.0
# Other work that took this much more of a boot's host CPUs' time than it took during the
# campaign's typical boot (the median) leaves the boot out.
TAKEN_OUT = 0.25
# This much more makes a boot suspect, as a host that had not settled before it does.
TAKEN_SUSPECT = 0.10
# A guest that reached its agent this many times slower than the campaign's median is suspect.
SLOW_TO_AGENT = 2.0


class Stray(enum.Enum):
    """Why a boot is left out of the decisions (docs/campaign.md, "Quiet host")."""

    OVERLAPPED = "overlapped"  # other work took TAKEN_OUT more of its CPUs' time than usual
    STRAYED = "strayed"  # suspect, and its value lies far from its commit's other boots


@dataclass(frozen=True)
class Usual:
    """What the campaign's boots typically saw: the median share of their CPUs other work took
    and the median time to the agent (0: fewer than 3 boots with the figure)."""

    taken: float
    to_agent_s: float

    @classmethod
    def of(cls, boots: Sequence[Boot]) -> "Usual":
        times = [b.to_agent_s for b in boots if b.to_agent_s > 0]
        return cls(statistics.median([b.taken for b in boots]) if len(boots) >= 3 else 0.0,
                   statistics.median(times) if len(times) >= 3 else 0.0)


def overlapped(boot: Boot, usual: Usual) -> bool:
    return boot.taken - usual.taken >= TAKEN_OUT


class Suspicion(enum.Enum):
    """What makes a boot suspect (`suspicions`)."""

    UNSETTLED = "unsettled"  # its host had not settled before the guest started
    OTHER_WORK = "other_work"  # other work took TAKEN_SUSPECT more of its CPUs' time than usual
    SLOW_START = "slow_start"  # its guest reached the agent SLOW_TO_AGENT times slower than usual


def suspicions(boot: Boot, usual: Usual) -> tuple[Suspicion, ...]:
    """What the host did beside a boot: not settled before it, other work on its CPUs during it
    beyond what the campaign's boots usually saw, a guest far slower than usual to reach its
    agent; () for a boot of a quiet host."""
    slow = usual.to_agent_s > 0 and boot.to_agent_s > SLOW_TO_AGENT * usual.to_agent_s
    return tuple(s for s, seen in ((Suspicion.UNSETTLED, boot.busy),
                                   (Suspicion.OTHER_WORK, boot.taken - usual.taken >= TAKEN_SUSPECT),
                                   (Suspicion.SLOW_START, slow)) if seen)


def suspect(boot: Boot, usual: Usual) -> bool:
    """A boot whose host did something beside it (`suspicions`)."""
    return bool(suspicions(boot, usual))


def stray_boots(groups: Mapping[str, Sequence[Boot]], k: float = STRAY_K) -> dict[int, Stray]:
    """The `seq` of every boot left out of the decisions, with why: other work took TAKEN_OUT
    more of its host CPUs' time during it than during the campaign's usual boot (OVERLAPPED), or
    it is `suspect` and its value lies more than `k` robust boot SDs from the median of the other
    boots of its group (STRAYED). The robust SD is 1.4826 x the median absolute deviation of
    boot values from their group's median, pooled over groups of 3+ boots; without one, no boot
    strays. Other work every boot shared (two guests on the same cores) leaves none out. A boot
    is never left out for its value alone: a boot of a quiet host, however far, is evidence."""
    usual = Usual.of([b for boots in groups.values() for b in boots])
    out = {b.seq: Stray.OVERLAPPED for boots in groups.values() for b in boots if overlapped(b, usual)}
    if not any(suspect(b, usual) for boots in groups.values() for b in boots if b.seq not in out):
        return out
    deviations = []
    for boots in groups.values():
        values = [b.value for b in boots if b.seq not in out]
        if len(values) >= 3:
            med = statistics.median(values)
            deviations += [abs(v - med) for v in values]
    if not deviations:
        return out
    scale = 1.4826 * statistics.median(deviations)
    if scale <= 0:
        return out
    for boots in groups.values():
        for b in boots:
            others = [o.value for o in boots if o.seq != b.seq and o.seq not in out]
            if (b.seq not in out and suspect(b, usual) and len(others) >= 2
                    and abs(b.value - statistics.median(others)) > k * scale):
                out[b.seq] = Stray.STRAYED
    return out
