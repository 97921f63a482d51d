"""What a comparison produced, independent of how it is shown: per metric and sweep point, each
variant's summary, its difference to the baseline (the first variant) and whether that
difference is significant; plus every sample, for plots."""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.stats import Summary, TwoSample


@dataclass(frozen=True)
class VariantInfo:
    name: str
    description: str  # what makes it this variant: "kernel bzImage-6.1, sched=bfq"


@dataclass(frozen=True)
class Cell:
    """One variant at one sweep point for one metric."""

    variant: str
    summary: Summary
    median: float
    diff_pct: float | None  # against the baseline, signed so that + is better; None for the baseline
    p_value: float | None  # two-sided t-test against the baseline with the boot as the unit
    q_value: float | None  # Benjamini-Hochberg adjusted over every test in the comparison
    significant: bool
    boots: int = 0  # the boots the runs came from (the test's unit)
    tested: TwoSample | None = None  # the change as tested: boot levels, paired when the boots are shared


@dataclass(frozen=True)
class Row:
    metric: str
    unit: str
    direction: str  # higher, lower or none (descriptive: the sign is plain (v - base) / base)
    point: str  # the sweep point's label ("numjobs=4"), "" without a sweep
    x: float | None  # the sweep point's numeric value for plotting, None without a numeric sweep
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Comparison:
    title: str
    workload: str
    swept: str | None  # the swept parameter(s) as shown on a plot's x axis, e.g. "numjobs"
    variants: tuple[VariantInfo, ...]
    rows: tuple[Row, ...]
    alpha: float
    test: str  # how significance was decided, one line
    verdict: tuple[str, ...]  # the summary sentences: significant changes, or "no significant difference"
    notes: tuple[str, ...] = ()
    # every sample: samples[variant][point][metric] -> values in the order taken
    samples: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)
    primary: tuple[str, ...] = ()  # the metrics the user asked for, shown first and plotted
    bisect: tuple[str, ...] = ()  # the command that bisects each row that regressed (compare/tobisect.py)


def to_json(c: Comparison) -> str:
    import json
    from dataclasses import asdict

    return json.dumps(asdict(c), indent=1)
