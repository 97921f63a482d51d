"""Where a real campaign's night went (pure, over what its store holds): the wall time split
into building, booting and measuring, both at once, and neither (the clone, the search, the
reports), from the spans of its builds and boots."""

from __future__ import annotations

from dataclasses import dataclass

Span = tuple[float, float]


def union(spans: list[Span]) -> list[Span]:
    """`spans` merged where they overlap or touch, in order."""
    out: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def length(spans: list[Span]) -> float:
    return sum(end - start for start, end in union(spans))


def overlap(a: list[Span], b: list[Span]) -> float:
    """Seconds inside both `a` and `b`."""
    total, ua, ub = 0.0, union(a), union(b)
    for s1, e1 in ua:
        for s2, e2 in ub:
            total += max(0.0, min(e1, e2) - max(s1, s2))
    return total


@dataclass(frozen=True)
class Split:
    """Seconds of the campaign's wall time: only building, only a guest up, both, neither."""

    wall: float
    building: float
    booted: float
    both: float

    @property
    def neither(self) -> float:
        return self.wall - self.building - self.booted - self.both

    def lines(self) -> list[str]:
        def part(name: str, seconds: float) -> str:
            return f"  {name:<34} {seconds / 60:6.1f} min  {100 * seconds / max(self.wall, 1e-9):5.1f}%"
        return [f"  {'wall':<34} {self.wall / 60:6.1f} min",
                part("building only", self.building), part("a guest up only (boot, runs)", self.booted),
                part("building while a guest ran", self.both),
                part("neither (clone, search, reports)", self.neither)]


def split(wall: Span, builds: list[Span], boots: list[Span]) -> Split:
    """The campaign's `wall` span split by its `builds` and `boots` spans (clipped to it)."""
    clip = [(max(s, wall[0]), min(e, wall[1])) for s, e in builds], [(max(s, wall[0]), min(e, wall[1])) for s, e in boots]
    both = overlap(*clip)
    return Split(wall[1] - wall[0], length(clip[0]) - both, length(clip[1]) - both, both)
