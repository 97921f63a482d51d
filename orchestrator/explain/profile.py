"""A kernel profile diff, parent against culprit (pure): from each side's folded stacks
(orchestrator/explain/perfscript.py), every symbol's self share (the samples whose innermost
frame it is) and children share (the samples with it anywhere on the stack, counted once per
sample: its call chain's share), both as percent of the side's samples, and the symbols whose
shares moved most, in the kernel test robot's layout (`perf-profile.self.cycles-pp.X`,
`perf-profile.children.cycles-pp.X`, where the event is `cycles-pp`; with the software clock
of a guest without a PMU the key says `cpu-clock`).

Each side is one or more profile boots (orchestrator/explain/profile_boots.py); a side's share
is that of its boots' samples pooled, and a row is `apart` when every boot of one side lies
beyond every boot of the other (with one boot a side, never): the profile boots' own spread, the
one noise a profile shows. A profile is never evidence for a verdict (docs/explain.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.explain.perfscript import KERNEL

SELF, CHILDREN = "self", "children"
TOP = 12  # rows in the Markdown report and the mail


@dataclass(frozen=True)
class Profile:
    """One side: its label (a commit, a variant), the event sampled, and the folded stacks of
    each of its boots (command name first, the sampled function last)."""

    label: str
    event: str
    boots: tuple[Mapping[tuple[str, ...], int], ...]

    @property
    def samples(self) -> int:
        return sum(sum(b.values()) for b in self.boots)

    def pooled(self) -> Counter[tuple[str, ...]]:
        out: Counter[tuple[str, ...]] = Counter()
        for b in self.boots:
            out.update(b)
        return out


@dataclass(frozen=True)
class SymbolMove:
    """One symbol's share, parent against culprit, in percent of each side's samples."""

    symbol: str
    kind: str  # SELF or CHILDREN
    parent_pct: float
    culprit_pct: float
    apart: bool  # every boot of one side beyond every boot of the other

    @property
    def change(self) -> float:
        return self.culprit_pct - self.parent_pct


@dataclass(frozen=True)
class ProfileDiff:
    parent: Profile
    culprit: Profile
    rows: tuple[SymbolMove, ...]  # largest move first

    @property
    def key_event(self) -> str:
        """The event as the robot's key names it."""
        return lkp_event(self.parent.event or self.culprit.event)


def lkp_event(event: str) -> str:
    return "cycles-pp" if event.split(":")[0] in ("cycles", "cpu-cycles") else event.split(":")[0] or "samples"


def shares(stacks: Mapping[tuple[str, ...], int]) -> tuple[dict[str, float], dict[str, float]]:
    """(self, children) shares of every symbol, in percent of the samples; the first frame (the
    command's name) is no symbol."""
    total = sum(stacks.values())
    own: Counter[str] = Counter()
    chain: Counter[str] = Counter()
    for stack, n in stacks.items():
        frames = stack[1:]
        if not frames:
            continue
        own[frames[-1]] += n
        for f in set(frames):
            chain[f] += n
    if total == 0:
        return {}, {}
    return ({s: 100.0 * n / total for s, n in own.items()}, {s: 100.0 * n / total for s, n in chain.items()})


def diff(parent: Profile, culprit: Profile) -> ProfileDiff:
    """Every symbol's self and children share on both sides, largest move first (ties by name)."""
    pooled = [shares(parent.pooled()), shares(culprit.pooled())]
    per_boot = [[shares(b) for b in side.boots] for side in (parent, culprit)]
    rows = []
    for index, kind in enumerate((SELF, CHILDREN)):
        p, c = pooled[0][index], pooled[1][index]
        for symbol in p.keys() | c.keys():
            pb = [b[index].get(symbol, 0.0) for b in per_boot[0]]
            cb = [b[index].get(symbol, 0.0) for b in per_boot[1]]
            rows.append(SymbolMove(symbol, kind, p.get(symbol, 0.0), c.get(symbol, 0.0), _apart(pb, cb)))
    rows.sort(key=lambda r: (-abs(r.change), r.kind, r.symbol))
    return ProfileDiff(parent, culprit, tuple(rows))


def _apart(a: Sequence[float], b: Sequence[float]) -> bool:
    if len(a) < 2 or len(b) < 2:
        return False
    return min(b) > max(a) or max(b) < min(a)


def display(symbol: str) -> str:
    """A symbol as the robot writes it: a kernel frame without folded text's `_[k]`."""
    return symbol.removesuffix(KERNEL)


def key(diff_: ProfileDiff, row: SymbolMove) -> str:
    return f"perf-profile.{row.kind}.{diff_.key_event}.{display(row.symbol)}"


def top(d: ProfileDiff, n: int = TOP, kind: str | None = None) -> tuple[SymbolMove, ...]:
    """The `n` rows (of `kind`, or both) that moved most; a children row that repeats its self
    row (a function that calls nothing sampled: its two shares are one figure) is left out."""
    selfs = {(r.symbol, round(r.parent_pct, 6), round(r.culprit_pct, 6)) for r in d.rows if r.kind == SELF}
    out = [r for r in d.rows if (kind is None or r.kind == kind) and abs(r.change) > 0.0
           and not (r.kind == CHILDREN and (r.symbol, round(r.parent_pct, 6), round(r.culprit_pct, 6)) in selfs)]
    return tuple(out[:n])


def only_on(d: ProfileDiff, side: str, n: int = TOP) -> tuple[SymbolMove, ...]:
    """The `n` largest call-chain shares of symbols sampled on `side` ("parent" or "culprit")
    alone: what the culprit added, or what it took away (a new function's share can be small
    beside the shares it moved elsewhere, e.g. to where interrupts are enabled again)."""
    rows = [r for r in d.rows if r.kind == CHILDREN
            and (r.parent_pct == 0.0 < r.culprit_pct if side == "culprit" else r.culprit_pct == 0.0 < r.parent_pct)]
    rows.sort(key=lambda r: (-max(r.parent_pct, r.culprit_pct), r.symbol))
    return tuple(rows[:n])
