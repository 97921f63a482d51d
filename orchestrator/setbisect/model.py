"""The vocabulary of a set bisection, shared by every kind of change (command-line
parameters, guest settings, Kconfig option groups).

A *change* is one named difference between the good and the bad side. A *unit* is what the
search adds to good (or removes from bad) as one: usually one change, or several that can only
be set together (an option with what it depends on, a scheduler's tunable with the scheduler),
as the caller groups them. A *candidate* is good with a subset of the units applied: "good +
S", which is the same thing as "bad - (all - S)"; the search names it by a key (a short hash of
the sorted unit names; `good` and `bad` for the two sides), the judge's key for its boots.

`CandidateMaker` is what a kind gives the search: the kernel and the guest settings of a
candidate. Pure; nothing here boots or builds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orchestrator.ports import KernelArtifact

GOOD, BAD = "good", "bad"


@dataclass(frozen=True)
class Change:
    """One difference: `name` as a maintainer calls it (`scheduler`, `scsi_mod.use_blk_mq`,
    `CONFIG_PROVE_LOCKING`), its value on each side ("" where that side does not set it:
    the kernel's or the guest's default)."""

    name: str
    good: str
    bad: str

    def describe(self) -> str:
        return f"{self.name}: {self.good or '(default)'} -> {self.bad or '(default)'}"


@dataclass(frozen=True)
class Unit:
    """What the search adds or removes as one. `rank`: the order a maintainer would try it in
    (lower first; ties by name); `why`: why its changes go together ("" for one change)."""

    name: str
    changes: tuple[Change, ...]
    rank: int = 0
    why: str = ""

    @classmethod
    def of(cls, change: Change, rank: int = 0) -> "Unit":
        return cls(change.name, (change,), rank)

    def describe(self) -> str:
        inner = "; ".join(c.describe() for c in self.changes)
        return f"{inner} ({self.why})" if self.why else inner


def ordered(units: Iterable[Unit]) -> list[Unit]:
    """In the order a maintainer would try them: by rank, then by name."""
    return sorted(units, key=lambda u: (u.rank, u.name))


def key_of(applied: Iterable[str], names: Sequence[str]) -> str:
    """The candidate good + `applied` (unit names out of `names`, every unit): `good` for none,
    `bad` for all, else `set-` and 12 hex digits of the sorted names' sha256."""
    chosen = sorted(set(applied))
    unknown = set(chosen) - set(names)
    if unknown:
        raise ValueError(f"not units of this search: {', '.join(sorted(unknown))}")
    if not chosen:
        return GOOD
    if len(chosen) == len(set(names)):
        return BAD
    return "set-" + hashlib.sha256("\n".join(chosen).encode()).hexdigest()[:12]


def label(applied: Iterable[str], names: Sequence[str]) -> str:
    """A candidate for people, the shorter way round: `good + a, b` or `bad - c`."""
    chosen = [n for n in names if n in set(applied)]
    rest = [n for n in names if n not in set(applied)]
    if not chosen:
        return "good"
    if not rest:
        return "bad"
    return f"good + {', '.join(chosen)}" if len(chosen) <= len(rest) else f"bad - {', '.join(rest)}"


@dataclass(frozen=True)
class Made:
    """A candidate as it boots: its kernel, its kernel command line (None: the measurer's),
    the guest settings applied before its runs (an I/O scheduler for every data disk, sysfs
    writes with `{disk}` for every data disk, a nice value for the workload), and what makes it
    this candidate (`identity`: two candidates of one identity boot the same thing, so one's
    verdict is the other's, e.g. a config that olddefconfig brought back to a side's). `notes`:
    what people should know (options the normalisation dropped). `cache_hit` and `build_s`: how
    its kernel was had (a settings candidate's is the campaign's one kernel: no build)."""

    kernel: KernelArtifact
    append: str | None = None
    sched: str | None = None
    sysfs: tuple[tuple[str, str], ...] = ()
    nice: int | None = None
    identity: str = ""
    notes: tuple[str, ...] = field(default=())
    cache_hit: bool = True
    build_s: float = 0.0

    def same_as(self) -> str:
        """The identity, made of the kernel image and every setting when the maker gave none."""
        if self.identity:
            return self.identity
        parts = [self.kernel.sha256, self.append or "", self.sched or "", repr(sorted(self.sysfs)), repr(self.nice)]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class CandidateMaker(Protocol):
    """How a kind makes a candidate (settings.py for command lines and guest settings; the
    `config` kind builds good's .config with the units' options, normalised by olddefconfig)."""

    def make(self, applied: frozenset[str]) -> Made:
        """Good with the units named in `applied`. Raises BuildFailed when that candidate's kernel
        does not build (the candidate is then a skip), UserError or InfraError."""
