"""Before a search (commits or sets): is good good, is bad bad, and can the threshold be seen
through the noise?

Judged on boots (orchestrator.stats): each endpoint's boots give its value (geometric mean
of boot values), the two together the between- and within-boot noise, and from those the
boots per commit a step needs for a verdict that is wrong at most once in 1/error. Why a check
is not clear is a `Refusal` (orchestrator/decisions.py); `endpoints_next` is the sequential
stop rule both searches use, `too_noisy` the reason given at its cap."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Protocol, Sequence

from orchestrator.decisions import Basis, Decided, Refusal, Role, Verdict
from orchestrator.stats import Boot, Components, boots_needed, compare_boots, components, relative_change


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
    """`problem`: None when ok, else why not (a Refusal: good_not_good, bad_not_bad (not worse
    at all), short_of_threshold (worse, but less than asked), not_significant or too_noisy; the
    last three may go away with more boots, the first two will not). `boots_needed`: boots per
    commit a step needs at this noise (0 when it could not be estimated)."""

    ok: bool
    message: str
    boots_needed: int
    change: float
    problem: Refusal | None = None
    noise: Components | None = None


def level(boots: Sequence[Boot]) -> float:
    """An endpoint's value: the geometric mean of its boot values."""
    return math.exp(statistics.fmean(b.value for b in boots))


def check_endpoints(
    good: Sequence[Boot],
    bad: Sequence[Boot],
    direction: str,
    threshold: Threshold,
    runs_per_boot: int,
    max_boots: int,
    alpha: float,
    error: float,
) -> EndpointCheck:
    g, b = level(good), level(bad)
    change = relative_change(g, b)
    worse = b < g if direction == "higher" else b > g
    if threshold.kind == "relative":
        crossed = worse and abs(change) >= abs(threshold.value)
        need = f"a change of {threshold.describe()}"
    else:
        beyond = (lambda v: v < threshold.value) if direction == "higher" else (lambda v: v > threshold.value)
        if beyond(g):
            return EndpointCheck(False, f"good is not good: its value {g:.4g} is already beyond the "
                                 f"{threshold.describe()}", 0, change, Refusal.GOOD_NOT_GOOD)
        crossed = beyond(b)
        need = f"crossing the {threshold.describe()}"
    noise = components([good, bad])
    boots = boots_needed(noise.between_cov, noise.within_cov, runs_per_boot, change, error) if change else 0
    test = compare_boots(good, bad)
    measured = (f"good {g:.4g}, bad {b:.4g} ({change:+.1%}"
                f"{f', 95% CI {test.low:+.1%}..{test.high:+.1%}' if test else ''}) over {len(good)}+{len(bad)} "
                f"boots of {runs_per_boot} runs; {noise.describe()}")
    significant = test is not None and test.p < alpha
    if threshold.kind == "relative" and test is not None and not crossed:
        # the threshold inside the interval: more boots may still show it; short (or not worse at
        # all) only when the whole interval is
        reach = test.low if direction == "higher" else test.high
        crossed = abs(reach) >= abs(threshold.value) and (reach < 0) == (threshold.value < 0)
        if crossed and not significant:
            return EndpointCheck(False, f"good and bad do not differ significantly: {measured}, p={test.p:.3g}",
                                 boots, change, Refusal.NOT_SIGNIFICANT, noise)
    if not crossed:
        return EndpointCheck(False, f"bad is not bad: {measured}; the campaign asks for {need}", boots, change,
                             Refusal.SHORT_OF_THRESHOLD if worse else Refusal.BAD_NOT_BAD, noise)
    if not significant:
        p = f"p={test.p:.3g}" if test else "too few boots for a test"
        return EndpointCheck(False, f"good and bad do not differ significantly: {measured}, {p}", boots, change,
                             Refusal.NOT_SIGNIFICANT, noise)
    assert test is not None  # significant
    if boots > max_boots:
        return EndpointCheck(False, f"the noise needs {boots} boots per commit to decide a step between good and "
                             f"bad ({measured}), but max_boots_per_commit is {max_boots}", boots, change,
                             Refusal.TOO_NOISY, noise)
    return EndpointCheck(True, f"{measured}, p={test.p:.3g}; a step needs about {boots} boots", boots, change,
                         None, noise)


# The noise estimate is usable for the steps from this many degrees of freedom of the pooled
# boot variance on (3 boots a side): fewer make Student t's tails so heavy that every step pays.
MIN_NOISE_DF = 4
# "bad is not bad" is decided on at least this many boots a side: 2 can put bad above good by
# chance.
MIN_REFUSAL_BOOTS = 8


class Next(StrEnum):
    MORE = "more"  # one more boot pair (A B B A)
    START = "start"  # apart with the campaign's confidence, the noise usable: bisect
    REFUSE = "refuse"  # check.message says why


def endpoints_next(check: EndpointCheck, boots_each: int, cap: int) -> Next:
    """The sequential endpoint check's stop rule: START as soon as good and bad are apart (the
    check is ok: significant at alpha, past the threshold, the noise allows a step within
    max_boots_per_commit) and the pooled noise rests on MIN_NOISE_DF degrees of freedom; the
    references grow later as the steps need them. REFUSE when good is not good, when bad is
    not bad on MIN_REFUSAL_BOOTS boots a side, or when the check is still not clear at `cap`
    boots a side; otherwise MORE. At the cap, a noise that needs more boots per step than
    max_boots_per_commit but at most `cap` (twice it: a step's visit and its revisit, which the
    posterior search makes where a step stays unclear) starts: an unlucky first sample of good
    and bad understates the change, and refusing then refused one campaign in a hundred at 8%
    between-boot noise and -15% (bench/bisect_rounds)."""
    if check.problem is Refusal.GOOD_NOT_GOOD:
        return Next.REFUSE
    if check.problem is Refusal.BAD_NOT_BAD:
        return Next.REFUSE if boots_each >= min(cap, MIN_REFUSAL_BOOTS) else Next.MORE
    if check.ok and check.noise is not None and check.noise.between_df >= MIN_NOISE_DF:
        return Next.START
    if boots_each >= cap and check.problem is Refusal.TOO_NOISY and check.boots_needed <= cap:
        return Next.START  # apart, and a step's visit and a revisit together can reach it
    return Next.REFUSE if boots_each >= cap else Next.MORE


def endpoint_decisions(check: EndpointCheck, good: str, bad: str, runs: Callable[[str], int]) -> list[Decided]:
    """The decisions a search stores when its endpoints' check starts it: good is good and bad is
    bad, on `runs(side)` runs each, the check's message as the reason."""
    return [Decided(side, role, verdict, check.message, 1.0, runs(side), Basis.ENDPOINTS)
            for side, role, verdict in ((good, Role.GOOD, Verdict.GOOD), (bad, Role.BAD, Verdict.BAD))]


def too_noisy(check: EndpointCheck, threshold: Threshold, runs_per_boot: int, max_boots: int,
              error: float) -> EndpointCheck:
    """A refusal at the endpoints' cap: when good and bad were not told apart and the noise
    measured would need more than `max_boots` boots per step even for a change of the
    threshold's size, that is the reason given (the boots needed), not the chance p-value."""
    check = dataclasses.replace(check, ok=False)
    noise = check.noise
    if check.problem is not Refusal.NOT_SIGNIFICANT or noise is None or threshold.kind != "relative" \
            or not threshold.value:
        return check
    need = boots_needed(noise.between_cov, noise.within_cov, runs_per_boot, threshold.value, error)
    if need <= max_boots:
        return check
    return dataclasses.replace(check, problem=Refusal.TOO_NOISY, boots_needed=need, message=(
        f"the noise needs {need} boots per commit to decide a step of {threshold.describe()} ({check.message}), but "
        f"max_boots_per_commit is {max_boots}"))


# The endpoint check boots each side up to this many times max_boots_per_commit.
REFERENCE_BOOTS = 2


class EndpointJudge(Protocol):
    """What the endpoint check boots on (orchestrator/measure/judge.py Judge)."""

    def interleave(self, keys: list[str], need: int, since: int = 0) -> None: ...
    def evidence(self) -> dict[str, list[Boot]]: ...


def measure_endpoints(judge: EndpointJudge, good: str, bad: str, direction: str, threshold: Threshold, runs_per_boot: int,
                      boots: int, max_boots: int, alpha: float, error: float,
                      emit: Callable[[EndpointCheck], None] = lambda _c: None) -> EndpointCheck:
    """Both endpoints booted in A B B A pairs on `judge` (from `boots` a side, or as many as
    they have) until `endpoints_next` says start (the check, ok) or refuse (the check, not
    ok: `too_noisy` gives the boots the noise needs when that is why), each check told to
    `emit`; a side that does not build, boot or run raises its KernelFault (`judge.booting`
    says which). Both searches check their endpoints so; the references grow later as the
    steps need them."""
    cap = REFERENCE_BOOTS * max_boots
    have = judge.evidence()
    need = max(boots, min(len(have.get(good, [])), len(have.get(bad, []))))
    while True:
        judge.interleave([good, bad] if need % 2 else [bad, good], need)
        sides = judge.evidence()
        check = check_endpoints(sides[good], sides[bad], direction, threshold, runs_per_boot, max_boots, alpha,
                                error)
        emit(check)
        step = endpoints_next(check, min(len(sides[good]), len(sides[bad])), cap)
        if step is Next.START:
            return check
        if step is Next.REFUSE:
            return too_noisy(check, threshold, runs_per_boot, max_boots, error)
        need += 1

