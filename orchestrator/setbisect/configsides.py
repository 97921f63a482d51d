"""A config bisection's two sides at its commit: each side's .config (a file's text, or what a
recipe configures), both normalised by `make olddefconfig` at that commit, the options that
differ, their groups (orchestrator/kbuild/configgroups.py) and the units the set bisection
searches over (orchestrator/setbisect/), in the order a maintainer would try them.

    sides = prepare(kernels, commit, Side(text=good_text), Side(recipe=("guest-base", "lockdep")))
    sides.units()                  # what the search adds to good
    sides.candidate({"CONFIG_X"})  # good's .config with unit CONFIG_X's options at bad's values
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass
from typing import Any, Protocol

from orchestrator.kbuild.configdiff import OptionChange, apply, diff, shown, values, vanished
from orchestrator.kbuild.configgroups import Follower, Group, Grouping, GroupReason, group_changes
from orchestrator.kbuild.recipe import Recipe, parse_recipe
from orchestrator.setbisect import model


class ConfigSource(Protocol):
    """What the sides are made with (orchestrator/measure/kernels.py Kernels)."""

    def configured(self, commit: str, recipe: Recipe) -> str: ...

    def olddefconfig(self, commit: str, config_text: str) -> str: ...

    def definitions(self, commit: str) -> dict[str, str]: ...


@dataclass(frozen=True)
class ConfigSide:
    """A side as the user gave it: a .config's text (`text`, read from `label`'s file) or a
    recipe's items (`recipe`, orchestrator/kbuild/recipe.py)."""

    label: str
    text: str = ""
    recipe: tuple[str, ...] = ()

    def config(self, source: ConfigSource, commit: str, cc: str = "") -> str:
        if not self.recipe:
            return self.text
        return source.configured(commit, parse_recipe(list(self.recipe) + ([f"cc={cc}"] if cc else [])))


@dataclass(frozen=True)
class ConfigSides:
    """`good`, `bad`: the two .config texts after olddefconfig; `changes`: the options they differ
    in; `vanished`: options the sides differ in as written that olddefconfig made equal (not
    candidates); `grouping`: the changes as groups (in order), followers and unsettable ones."""

    good: str
    bad: str
    changes: tuple[OptionChange, ...]
    vanished: tuple[OptionChange, ...]
    grouping: Grouping

    def units(self) -> list[model.Unit]:
        by_option = {c.option: c for c in self.changes}
        return [model.Unit(g.lead, tuple(model.Change(o, shown(by_option[o].good), shown(by_option[o].bad))
                                         for o in g.options), rank, why(g))
                for rank, g in enumerate(self.grouping.groups)]

    def group(self, name: str) -> Group:
        return next(g for g in self.grouping.groups if g.lead == name)

    def candidate(self, applied: Iterable[str]) -> str:
        """good's .config with the options of the units named in `applied` at bad's values (not
        yet normalised); bad's own .config when every unit is applied."""
        applied = set(applied)
        if applied and applied >= {g.lead for g in self.grouping.groups}:
            return self.bad
        return apply(self.good, self.grouping.settings([self.group(n) for n in sorted(applied)], self.changes))

    def to_dict(self) -> dict[str, Any]:
        g = self.grouping
        return {"good": self.good, "bad": self.bad, "changes": [list(astuple(c)) for c in self.changes],
                "vanished": [list(astuple(c)) for c in self.vanished],
                "groups": [{"lead": x.lead, "why": x.why.value, "needs": list(x.needs), "pulls": list(x.pulls),
                            "where": x.where} for x in g.groups],
                "followers": [{"option": f.option, "by": list(f.by)} for f in g.followers],
                "unsettable": list(g.unsettable)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ConfigSides":
        groups = tuple(Group(x["lead"], GroupReason(x["why"]), tuple(x["needs"]), tuple(x["pulls"]), x["where"])
                       for x in d["groups"])
        followers = tuple(Follower(f["option"], tuple(f["by"])) for f in d["followers"])
        return cls(d["good"], d["bad"], tuple(OptionChange(*c) for c in d["changes"]),
                   tuple(OptionChange(*c) for c in d["vanished"]), Grouping(groups, followers, tuple(d["unsettable"])))

    def lines(self) -> list[str]:
        """The options for people: the units in the order tried, then what is not a candidate."""
        out = [f"{len(self.changes)} options differ after olddefconfig on both sides; tried as "
               f"{len(self.grouping.groups)} units, in this order (debug options first; settable alone before what needs "
               "others; then by Kconfig file):"]
        by_option = {c.option: c for c in self.changes}
        for rank, g in enumerate(self.grouping.groups, 1):
            where = f" [{g.where}]" if g.where else ""
            out.append(f"  {rank}. {by_option[g.lead].describe()}{where}")
            if g.needs:
                out.append(f"     grouped: {why(g)}")
            if g.pulls:
                out.append(f"     olddefconfig sets with it: {_some(_names(g.pulls))}")
        for f in self.grouping.followers:
            out.append(f"  not a unit: {by_option[f.option].describe()} (olddefconfig undoes it alone; "
                       f"set with {_some(_names(f.by))})")
        for option in self.grouping.unsettable:
            out.append(f"  not a unit: {by_option[option].describe()} (olddefconfig undoes it even with every "
                       "other change)")
        if self.vanished:
            out.append(f"  not candidates ({len(self.vanished)}): options the files differ in that olddefconfig "
                       "gives the same value on both sides (one side is older, or asks for what Kconfig "
                       f"refuses): {', '.join(c.describe() for c in self.vanished)}")
        return out


def _some(names: list[str], shown: int = 12) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _names(options: Iterable[str]) -> list[str]:
    return [o.removeprefix("CONFIG_") for o in options]


def why(group: Group) -> str:
    """Why a group's options go together ("" for one option)."""
    if group.why is GroupReason.NEEDS:
        return (f"olddefconfig undoes {group.lead.removeprefix('CONFIG_')} set alone; it stays with "
                f"{', '.join(_names(group.needs))}")
    return ""


def prepare(source: ConfigSource, commit: str, good: ConfigSide, bad: ConfigSide, cc: str = "") -> ConfigSides:
    """Both sides normalised at `commit`, their differences grouped and ordered (a few seconds of
    `make olddefconfig` per option that differs; nothing is built). `cc`: a recipe side's compiler."""
    texts = [side.config(source, commit, cc) for side in (good, bad)]
    normalised = [source.olddefconfig(commit, text) for text in texts]
    changes = diff(values(normalised[0]), values(normalised[1]))

    def normalise(text: str) -> Mapping[str, str]:
        return values(source.olddefconfig(commit, text))

    grouping = group_changes(normalised[0], changes, normalise, source.definitions(commit) if changes else {})
    return ConfigSides(normalised[0], normalised[1], tuple(changes),
                 tuple(vanished(values(texts[0]), values(texts[1]), changes)), grouping)
