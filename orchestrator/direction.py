"""A metric's better direction, and what "worse" and "better" mean in it: the one place that
says it. A judged metric is better `higher` (throughput, operations per second) or `lower`
(latency, CPU per operation); changes are relative (`(b - a) / |a|`), so a change is worse
when it goes against the better direction. Campaign files, workload definitions and results
keep the direction as its word ("higher", "lower"); `Direction(word)` reads it back, and a
`Direction` is that word wherever a string is expected.
"""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"

    @property
    def worse_sign(self) -> int:
        """The sign of a change for the worse: -1 when higher is better, +1 when lower is."""
        return -1 if self is Direction.HIGHER else 1

    def worse(self, change: float) -> bool:
        """`change` (b against a) is for the worse."""
        return change < 0 if self is Direction.HIGHER else change > 0

    def better(self, change: float) -> bool:
        """`change` (b against a) is for the better."""
        return change > 0 if self is Direction.HIGHER else change < 0

    def worse_than(self, value: float, other: float) -> bool:
        """`value` is strictly worse than `other` (a level, a change or a threshold)."""
        return value < other if self is Direction.HIGHER else value > other

    def reaches(self, value: float, threshold: float) -> bool:
        """`value` is at `threshold` or beyond it on the worse side."""
        return value <= threshold if self is Direction.HIGHER else value >= threshold

    def worse_end(self, low: float, high: float) -> float:
        """The end of the interval `low`..`high` on the worse side."""
        return low if self is Direction.HIGHER else high

    def better_end(self, low: float, high: float) -> float:
        """The end of the interval `low`..`high` on the better side."""
        return high if self is Direction.HIGHER else low

    def worsening(self, change: float) -> float:
        """`change` measured towards the worse: positive when it is for the worse."""
        return change * self.worse_sign
