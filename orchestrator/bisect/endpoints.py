"""Before bisecting: is good good, is bad bad, and can the threshold be seen through the noise?"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from orchestrator.bisect.stats import noise_cov, p_less, relative_change, reps_to_detect

DIRECTIONS = ("higher", "lower")


@dataclass(frozen=True)
class Threshold:
    """`relative`: change of bad against good, e.g. -0.10 for "10% lower"; `absolute`: a bound
    the metric crosses when it regresses (below it for higher-is-better, above for lower)."""

    kind: str
    value: float

    def describe(self) -> str:
        return f"{self.value:+.1%}" if self.kind == "relative" else f"bound {self.value:g}"


@dataclass(frozen=True)
class EndpointCheck:
    """`problem`: "" when ok, else good_not_good, bad_not_bad (not worse at all),
    short_of_threshold (worse, but less than asked), not_significant or too_noisy; the last
    three may go away with more samples, the first two will not."""

    ok: bool
    message: str
    reps_needed: int
    change: float
    problem: str = ""


def check_endpoints(
    good: Sequence[float],
    bad: Sequence[float],
    direction: str,
    threshold: Threshold,
    max_reps: int,
    alpha: float = 0.05,
) -> EndpointCheck:
    g, b = statistics.median(good), statistics.median(bad)
    change = relative_change(g, b)
    worse = b < g if direction == "higher" else b > g
    if threshold.kind == "relative":
        effect = abs(threshold.value)
        crossed = worse and abs(change) >= effect
        need = f"a change of {threshold.describe()}"
    else:
        effect = abs(relative_change(g, threshold.value))
        beyond = (lambda v: v < threshold.value) if direction == "higher" else (lambda v: v > threshold.value)
        if beyond(g):
            return EndpointCheck(False, f"good is not good: its median {g:.4g} is already beyond the {threshold.describe()}",
                                 0, change, "good_not_good")
        crossed = beyond(b)
        need = f"crossing the {threshold.describe()}"
    noise = max(noise_cov(good), noise_cov(bad))
    reps = reps_to_detect(noise, effect, alpha)
    measured = f"good median {g:.4g}, bad median {b:.4g} ({change:+.1%})"
    if not crossed:
        return EndpointCheck(False, f"bad is not bad: {measured}; the campaign asks for {need}", reps, change,
                             "short_of_threshold" if worse else "bad_not_bad")
    p = p_less(bad, good) if direction == "higher" else p_less(good, bad)
    if p >= alpha:
        return EndpointCheck(False, f"good and bad do not differ significantly: {measured}, p={p:.3g} "
                             f"with {len(good)}+{len(bad)} samples", reps, change, "not_significant")
    if reps > max_reps:
        return EndpointCheck(False, f"the noise (CoV {noise:.1%}) needs {reps} repetitions per commit to detect "
                             f"{need}, but at most {max_reps} are allowed", reps, change, "too_noisy")
    return EndpointCheck(True, f"{measured}, p={p:.3g}; noise CoV {noise:.1%} needs {reps} repetitions",
                         reps, change)
