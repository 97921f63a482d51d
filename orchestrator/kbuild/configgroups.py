"""Which option changes can be tried on their own, which need others, and in what order.

Pure, given `normalise` (a .config text -> its values after `make olddefconfig` at the campaign's
commit; the adapter is KernelBuilder.olddefconfig). For each change, the good .config with that
one option set to its bad value is normalised:

- it stays: a group of its own (ALONE). What else olddefconfig changed to the bad side's value
  with it (a `select`, a default that follows it) is listed as what it pulls in.
- olddefconfig undoes it, but another group pulls it in (a change that stays alone, or a group
  it needs): it is not a candidate (a Follower of those; a symbol without a prompt, LOCKDEP
  under PROVE_LOCKING, is one).
- olddefconfig undoes it and nothing alone brings it: the smallest set of other changes with
  which it stays is found (removing chunks of all the others while it still stays, as ddmin
  does) and it is grouped with them (NEEDS): a dependency, or the option that selects it back.
- it stays with no set of the others (not even all of them): Unsettable, reported, not tried.

docs/config-bisect.md gives the rules and the order (`order`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from orchestrator.kbuild.configdiff import OptionChange, apply
from orchestrator.kbuild.kconfig import NOT_SET

Normalise = Callable[[str], Mapping[str, str]]


class GroupReason(StrEnum):
    ALONE = "alone"  # set on its own, olddefconfig keeps it
    NEEDS = "needs"  # olddefconfig undoes it unless `needs` are set too


@dataclass(frozen=True)
class Group:
    """Options tried together: `lead` and what it needs; `pulls`: the other changes olddefconfig
    makes with it. `where`: the Kconfig file defining `lead` ("" unknown)."""

    lead: str
    why: GroupReason
    needs: tuple[str, ...] = ()
    pulls: tuple[str, ...] = ()
    where: str = ""

    @property
    def options(self) -> tuple[str, ...]:
        return (self.lead, *self.needs)


@dataclass(frozen=True)
class Follower:
    """A change that is no candidate: olddefconfig undoes it alone, and `by` bring it."""

    option: str
    by: tuple[str, ...]


@dataclass(frozen=True)
class Grouping:
    groups: tuple[Group, ...]
    followers: tuple[Follower, ...]
    unsettable: tuple[str, ...]

    def settings(self, groups: Sequence[Group], changes: Sequence[OptionChange]) -> dict[str, str]:
        """The bad side's value of every option of `groups`."""
        bad = {c.option: c.bad for c in changes}
        return {option: bad[option] for g in groups for option in g.options}


def _stays(option: str, value: str, normalised: Mapping[str, str]) -> bool:
    return normalised.get(option, NOT_SET) == value


def shrink(items: Sequence[str], keeps: Callable[[list[str]], bool]) -> list[str]:
    """A small subset of `items` (for which `keeps` holds) for which `keeps` still holds: chunks
    are removed while it does, halving the chunk when no chunk can go (1-minimal at the end)."""
    current = list(items)
    parts = 2
    while current:
        size = max(1, -(-len(current) // parts))
        for start in range(0, len(current), size):
            rest = current[:start] + current[start + size:]
            if keeps(rest):
                current, parts = rest, max(parts - 1, 2)
                break
        else:
            if size == 1:
                break
            parts = min(parts * 2, len(current))
    return current


def group_changes(good_text: str, changes: Sequence[OptionChange], normalise: Normalise,
                  where: Mapping[str, str] | None = None) -> Grouping:
    """The changes between the normalised good and bad .config (`changes`), grouped as the
    module docstring says. `good_text`: the normalised good .config."""
    where = where or {}
    bad = {c.option: c.bad for c in changes}

    def with_bad(options: Sequence[str]) -> Mapping[str, str]:
        return normalise(apply(good_text, {o: bad[o] for o in options}))

    alone: dict[str, tuple[str, ...]] = {}
    undone: list[str] = []
    for change in changes:
        after = with_bad([change.option])
        if _stays(change.option, change.bad, after):
            alone[change.option] = tuple(o for o in bad if o != change.option and _stays(o, bad[o], after))
        else:
            undone.append(change.option)
    groups = [Group(lead, GroupReason.ALONE, pulls=pulls, where=where.get(lead, "")) for lead, pulls in alone.items()]
    followers, unsettable = [], []
    for option in undone:
        by = tuple(g.lead for g in groups if option in g.pulls)
        if by:
            followers.append(Follower(option, by))
            continue
        others = [o for o in bad if o != option]

        def keeps(subset: list[str], option: str = option) -> bool:
            return _stays(option, bad[option], with_bad([option, *subset]))

        if not keeps(others):
            unsettable.append(option)
            continue
        needs = tuple(shrink(others, keeps))
        after = with_bad([option, *needs])
        pulls = tuple(o for o in bad if o != option and o not in needs and _stays(o, bad[o], after))
        groups.append(Group(option, GroupReason.NEEDS, needs, pulls, where.get(option, "")))
    return _followers_of_needs(groups, followers, unsettable)


def _followers_of_needs(groups: list[Group], followers: list[Follower], unsettable: list[str]) -> Grouping:
    """A group that needs an option whose own group brings it (LOCKDEP needs PROVE_LOCKING, which
    selects it) is no candidate either: a follower of that option."""
    kept = []
    for g in groups:
        by = tuple(h.lead for h in groups if h is not g and h.lead in g.needs and g.lead in h.pulls)
        if g.why is GroupReason.NEEDS and by:
            followers.append(Follower(g.lead, by))
        else:
            kept.append(g)
    return Grouping(tuple(order(kept)), tuple(sorted(followers, key=lambda f: f.option)), tuple(unsettable))


# Kconfig files whose options are checkers, tracers and instrumentation: what a maintainer
# suspects first when a kernel is slower, since each is known to cost run time.
_DEBUG_FILES = ("lib/Kconfig.kasan", "lib/Kconfig.kcsan", "lib/Kconfig.kmsan", "lib/Kconfig.ubsan",
                "lib/Kconfig.kfence", "lib/Kconfig.kgdb", "kernel/trace/Kconfig", "kernel/gcov/Kconfig")


def is_debug(path: str) -> bool:
    return path.rsplit("/", 1)[-1].startswith("Kconfig.debug") or path in _DEBUG_FILES


def order(groups: Sequence[Group]) -> list[Group]:
    """Debug and instrumentation options first, options of unknown origin last; within each,
    the options settable on their own before the groups that need others (the simpler
    explanation first: the search names the earliest unit that moves the metric), then by the
    Kconfig file defining them (one subsystem's options side by side: a binary split keeps them
    in the same half), then by name."""
    return sorted(groups, key=lambda g: (0 if is_debug(g.where) else 1 if g.where else 2, g.why is GroupReason.NEEDS,
                                         g.where, g.lead))
