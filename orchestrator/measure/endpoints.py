"""Before a search (commits or sets): is good good, is bad bad, and can the threshold be seen
through the noise?

Judged on boots (orchestrator.stats): each endpoint's boots give its value (geometric mean
of boot values), the two together the between- and within-boot noise, and from those the
boots per commit a step needs for a verdict that is wrong at most once in 1/error. Why a check
is not clear is a `Refusal` (orchestrator/decisions.py); `endpoints_next` is the sequential
stop rule both searches use, `too_noisy` the reason given at its cap. A regression whose 95%
interval lies clear of the threshold on the small side is `sure`: refused at once, with the
threshold that would bisect it (`threshold_for`); a campaign's `threshold: measured` is that
threshold, taken from the endpoints' own boots once bad is significantly worse."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Protocol, Sequence

from orchestrator.decisions import Basis, Decided, Refusal, Role, Verdict
from orchestrator.direction import Direction
from orchestrator.stats import Boot, Components, TwoSample, boots_needed, compare_boots, components, relative_change

MEASURED = "measured"  # Threshold.scale: the endpoints' measured change sets it (THRESHOLD_RULE)
THRESHOLD_RULE = ("half the bound of the change's 95% interval nearest zero, rounded toward zero to 0.1% "
                  "(at least 0.1%)")


@dataclass(frozen=True)
class Threshold:
    """`relative`: change of bad against good, e.g. -0.10 for "10% lower"; `absolute`: a bound
    the metric crosses when it regresses (below it for higher-is-better, above for lower);
    `measured`: whatever regression the endpoints show, the threshold then sized by
    THRESHOLD_RULE (the check's `threshold`; `value` unused)."""

    scale: str
    value: float

    def describe(self) -> str:
        if self.scale == MEASURED:
            return "measured"
        return f"{self.value:+.1%}" if self.scale == "relative" else f"bound {self.value:g}"


def near_bound(t: TwoSample, direction: str) -> float:
    """The interval's bound nearest zero for a regression: its upper bound when higher is better
    (the change is negative), its lower bound when lower is better."""
    return Direction(direction).better_end(t.low, t.high)


def threshold_for(t: TwoSample, direction: str) -> float:
    """THRESHOLD_RULE: a change the endpoints clear with margin (with 95% confidence the change
    is at least the near bound; half of it leaves room for the bisection's own sample of good
    and bad) and that a culprit carrying the whole regression reaches at its confirmation. The
    one rule for a threshold sized from a measured change: a comparison's bisect command, a
    refusal's suggestion and `threshold: measured`."""
    near = near_bound(t, direction)
    size = max(math.floor(abs(near) / 2 * 1000) / 1000, 0.001)
    return math.copysign(size, near)


def regressed(t: TwoSample, direction: str) -> bool:
    """Worse, the 95% interval of the change clear of zero on the worse side."""
    near = near_bound(t, direction)
    return Direction(direction).worse(near)


@dataclass(frozen=True)
class EndpointCheck:
    """`problem`: None when ok, else why not (a Refusal: good_not_good, bad_not_bad (not worse
    at all), short_of_threshold (worse, but less than asked), not_significant or too_noisy; the
    last three may go away with more boots, the first two will not). `boots_needed`: boots per
    commit a step needs at this noise (0 when it could not be estimated). `threshold`: the one
    judged against (a measured one resolved to its relative change). `sure`: the change's 95%
    interval lies clear of a relative threshold on the small side (more boots would not cross
    it); a change short of the threshold whose interval still reaches it is not (yet) sure.
    `suggested`: for a change short of the threshold that is significantly worse all the same,
    the relative threshold that would bisect it (THRESHOLD_RULE). `beyond`: the change's 95%
    interval lies wholly past a relative threshold (more boots would not bring it back)."""

    ok: bool
    message: str
    boots_needed: int
    change: float
    problem: Refusal | None = None
    noise: Components | None = None
    threshold: Threshold | None = None
    sure: bool = False
    suggested: float | None = None
    beyond: bool = False

    @property
    def reachable(self) -> bool:
        """Short of a relative threshold so far, its interval still reaching it."""
        return (self.problem is Refusal.SHORT_OF_THRESHOLD and not self.sure and self.threshold is not None
                and self.threshold.scale == "relative")


def level(boots: Sequence[Boot]) -> float:
    """An endpoint's value: the geometric mean of its boot values."""
    return math.exp(statistics.fmean(b.value for b in boots))


def check_endpoints(good: Sequence[Boot], bad: Sequence[Boot], direction: str, threshold: Threshold,
                    runs_per_boot: int, max_boots: int, alpha: float, error: float) -> EndpointCheck:
    g, b = level(good), level(bad)
    change = relative_change(g, b)
    worse = Direction(direction).worse_than(b, g)
    noise = components([good, bad])
    boots = boots_needed(noise.between_cov, noise.within_cov, runs_per_boot, change, error) if change else 0
    test = compare_boots(good, bad)
    measured = (f"good {g:.4g}, bad {b:.4g} ({change:+.1%}"
                f"{f', 95% CI {test.low:+.1%}..{test.high:+.1%}' if test else ''}) over {len(good)}+{len(bad)} "
                f"boots of {runs_per_boot} runs; {noise.describe()}")
    significant = test is not None and test.p < alpha
    asked = threshold
    if threshold.scale == MEASURED:
        if test is None or not regressed(test, direction):
            p = f"p={test.p:.3g}" if test else "too few boots for a test"
            return EndpointCheck(False, f"bad is not significantly worse than good, and the threshold is measured: "
                                 f"{measured}, {p}", boots, change,
                                 Refusal.NOT_SIGNIFICANT if worse else Refusal.BAD_NOT_BAD, noise, threshold)
        threshold = Threshold("relative", threshold_for(test, direction))
    if threshold.scale == "relative":
        crossed = worse and abs(change) >= abs(threshold.value)
        need = f"a change of {threshold.describe()}"
    else:
        if Direction(direction).worse_than(g, threshold.value):
            return EndpointCheck(False, f"good is not good: its value {g:.4g} is already beyond the "
                                 f"{threshold.describe()}", 0, change, Refusal.GOOD_NOT_GOOD, threshold=threshold)
        crossed = Direction(direction).worse_than(b, threshold.value)
        need = f"crossing the {threshold.describe()}"
    sure = False
    if threshold.scale == "relative" and test is not None and not crossed:
        # the threshold inside the interval: more boots may still show it (short for now, or not
        # significant); surely short (or not worse at all) only when the whole interval is
        reach = Direction(direction).worse_end(test.low, test.high)
        sure = not (abs(reach) >= abs(threshold.value) and (reach < 0) == (threshold.value < 0))
        if not sure and not significant:
            return EndpointCheck(False, f"good and bad do not differ significantly: {measured}, p={test.p:.3g}",
                                 boots, change, Refusal.NOT_SIGNIFICANT, noise, threshold)
    if not crossed:
        return _short(measured, need, boots, change, worse, sure, test, noise, threshold, direction)
    if not significant:
        p = f"p={test.p:.3g}" if test else "too few boots for a test"
        return EndpointCheck(False, f"good and bad do not differ significantly: {measured}, {p}", boots, change,
                             Refusal.NOT_SIGNIFICANT, noise, threshold)
    assert test is not None  # significant
    if asked.scale == MEASURED:
        measured += f"; threshold {threshold.describe()}, measured ({THRESHOLD_RULE})"
    if boots > max_boots:
        return EndpointCheck(False, f"the noise needs {boots} boots per commit to decide a step between good and "
                             f"bad ({measured}), but max_boots_per_commit is {max_boots}", boots, change,
                             Refusal.TOO_NOISY, noise, threshold)
    past = threshold.scale == "relative" and abs(near_bound(test, direction)) >= abs(threshold.value)
    return EndpointCheck(True, f"{measured}, p={test.p:.3g}; a step needs about {boots} boots", boots, change,
                         None, noise, threshold, beyond=past)


def _short(measured: str, need: str, boots: int, change: float, worse: bool, sure: bool, test: TwoSample | None,
           noise: Components, threshold: Threshold, direction: str) -> EndpointCheck:
    """Bad short of the threshold (or not worse than good at all), refused: for now while the
    interval still reaches it (`sure` false), else with the threshold that would bisect the
    regression that is there."""
    problem = Refusal.SHORT_OF_THRESHOLD if worse else Refusal.BAD_NOT_BAD
    if threshold.scale == "relative" and test is not None and not sure:
        return EndpointCheck(False, f"bad is short of the threshold so far: {measured}, p={test.p:.3g}; the "
                             f"campaign asks for {need}, which the interval still reaches", boots, change,
                             problem, noise, threshold)
    suggested = threshold_for(test, direction) if test is not None and regressed(test, direction) else None
    short = "; the whole interval falls short of it" if sure else ""
    if suggested is not None:
        short += (f": a threshold of {suggested:+.1%} would bisect the regression that is there ({THRESHOLD_RULE}); "
                  f"to use it, set `threshold: {suggested * 100:+.1f}%` (or `threshold: measured`) in the "
                  f"campaign's metric")
    return EndpointCheck(False, f"bad is not bad: {measured}; the campaign asks for {need}{short}", boots, change,
                         problem, noise, threshold, sure, suggested)


# The noise estimate is usable for the steps from this many degrees of freedom of the pooled
# boot variance on (3 boots a side): fewer make Student t's tails so heavy that every step pays.
MIN_NOISE_DF = 4
# A change not told apart from zero is refused as "bad is not bad" on at least this many boots
# a side, even when its interval is clear of the threshold: 2 can put bad above good by chance,
# and refusing at once on 3-6 boots refused 6 in 1,000 simulated campaigns at 8% between-boot
# noise whose true change was -15% against -10% (bench/bisect_accuracy, case 1).
MIN_REFUSAL_BOOTS = 8


class Next(StrEnum):
    MORE = "more"  # one more boot pair (A B B A)
    START = "start"  # apart with the campaign's confidence, the noise usable: bisect
    REFUSE = "refuse"  # check.message says why


def endpoints_next(check: EndpointCheck, boots_each: int, cap: int, early: bool = False) -> Next:
    """The sequential endpoint check's stop rule: START as soon as good and bad are apart (the
    check is ok: significant at alpha, past the threshold, the noise allows a step within
    max_boots_per_commit) and the pooled noise rests on MIN_NOISE_DF degrees of freedom, or, when
    `early`, at once when the change's 95% interval lies wholly past the threshold (`beyond`:
    surely larger, more boots would not change the decision); the references grow later as the
    steps need them. Commit bisection starts early (its steps pool the noise over every boot they
    take); set bisection does not (its pairs are sized once from the endpoints' noise, and an
    estimate on 2 degrees of freedom skipped candidates in its case table).

    REFUSE when good is not good; as soon as a regression (bad significantly worse) is `sure` to be
    smaller than the threshold on a noise of MIN_NOISE_DF degrees of freedom (its 95% interval clear
    of the threshold: more boots would only narrow it; the refusal suggests the threshold that would
    bisect it); when a change not told apart from zero is sure to be smaller on MIN_REFUSAL_BOOTS
    boots a side; or when the check is still not clear at `cap` boots a side; otherwise MORE. A
    change significant but short of the threshold, whose interval still reaches it, boots on (it is
    neither past the threshold nor surely short of it). At the cap, such a change starts, and so
    does a noise that needs more boots per step than max_boots_per_commit but at most `cap` (twice
    it: a step's visit and its revisit, which the posterior search makes where a step stays
    unclear): an unlucky first sample of good and bad understates the change, and refusing then
    refused one campaign in a hundred at 8% between-boot noise and -15% (bench/bisect_rounds; the
    case table's 100 trials, -9.9% measured on 16+16 boots)."""
    if check.problem is Refusal.GOOD_NOT_GOOD:
        return Next.REFUSE
    usable = check.noise is not None and check.noise.between_df >= MIN_NOISE_DF
    if check.sure and usable and check.suggested is not None:
        return Next.REFUSE  # a regression, surely short of the threshold
    if check.sure or check.problem is Refusal.BAD_NOT_BAD:
        return Next.REFUSE if boots_each >= min(cap, MIN_REFUSAL_BOOTS) else Next.MORE
    if check.ok and (usable or (early and check.beyond)):
        return Next.START  # apart; or surely past the threshold, whatever the noise's estimate
    if (boots_each >= cap and (check.problem is Refusal.TOO_NOISY or check.reachable) and usable
            and 0 < check.boots_needed <= cap):
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
    if (check.problem is not Refusal.NOT_SIGNIFICANT or noise is None or threshold.scale != "relative"
            or not threshold.value):
        return check
    need = boots_needed(noise.between_cov, noise.within_cov, runs_per_boot, threshold.value, error)
    if need <= max_boots:
        return check
    return dataclasses.replace(check, problem=Refusal.TOO_NOISY, boots_needed=need, message=(
        f"the noise needs {need} boots per commit to decide a step of {threshold.describe()} ({check.message}), but "
        f"max_boots_per_commit is {max_boots}"))


def interim(check: EndpointCheck, good_boots: int, bad_boots: int) -> EndpointCheck:
    """A check the stop rule boots on after: its line says so, not a refusal nor a start."""
    return dataclasses.replace(check, message=f"after {good_boots}+{bad_boots} boots: not yet decided, both booted "
                                              f"again (so far: {check.message})")


# The endpoint check boots each side up to this many times max_boots_per_commit.
REFERENCE_BOOTS = 2


class EndpointJudge(Protocol):
    """What the endpoint check boots on (orchestrator/measure/judge.py Judge)."""

    def interleave(self, keys: list[str], need: int, since: int = 0) -> None: ...
    def evidence(self) -> dict[str, list[Boot]]: ...


def measure_endpoints(judge: EndpointJudge, good: str, bad: str, direction: str, threshold: Threshold, runs_per_boot: int,
                      boots: int, max_boots: int, alpha: float, error: float,
                      emit: Callable[[EndpointCheck], None] = lambda _c: None, early: bool = False) -> EndpointCheck:
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
        step = endpoints_next(check, min(len(sides[good]), len(sides[bad])), cap, early)
        emit(check if step is not Next.MORE else interim(check, len(sides[good]), len(sides[bad])))
        if step is Next.START:
            return check if check.ok else dataclasses.replace(check, ok=True, problem=None, message=(
                f"{check.message}; started at the cap of {cap} boots a side: a step's visit and its revisit can "
                "reach the change, which an unlucky sample of the endpoints may understate"))
        if step is Next.REFUSE:
            return too_noisy(check, threshold, runs_per_boot, max_boots, error)
        need += 1

