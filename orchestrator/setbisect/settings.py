"""The `settings` kind's changes: between two kernel command lines and two sets of guest
settings (the vocabulary `vmbisect compare` knows: an I/O scheduler, block queue knobs, sysfs
writes, a nice value), the units a set bisection adds to good, and the maker that turns a set of
them into a candidate's command line and settings on the one kernel. Pure, but for the kernel,
which is resolved once by the caller.

Settings (each side's `settings:` mapping):
    scheduler       the I/O scheduler of every data disk (none, mq-deadline, bfq, kyber)
    read_ahead_kb   /sys/block/<disk>/queue/read_ahead_kb of every data disk
    nomerges        /sys/block/<disk>/queue/nomerges of every data disk (0, 1, 2)
    nice            the nice value N the workload's commands start at (-20..19)
    sysfs           {PATH: VALUE}: VALUE written to /sys/PATH; `{disk}` means every data disk
A setting one side leaves out is the guest's default on that side (nothing is written).

Command line (each side's `cmdline:`): words `name=value` or `name`; a parameter given on
one side only is absent (the kernel's default) on the other.

The order a maintainer would try them: the scheduler, then command-line parameters (boot-time
switches such as scsi_mod.use_blk_mq), then the disks' queue knobs, other sysfs writes, nice.
A scheduler's tunable (a sysfs path under queue/iosched/) exists only under its scheduler, so it
goes as one unit with a scheduler change; `together:` groups any other changes the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.errors import UserError
from orchestrator.ports import KernelArtifact
from orchestrator.setbisect.model import Change, Made, Unit

QUEUE_KNOBS = {"read_ahead_kb": "block/{disk}/queue/read_ahead_kb", "nomerges": "block/{disk}/queue/nomerges"}
SETTINGS = ("scheduler", *QUEUE_KNOBS, "nice", "sysfs")
RANKS = {"scheduler": 0, "cmdline": 1, "queue": 2, "sysfs": 3, "nice": 4}
SYSFS_PREFIX = "sysfs:"


@dataclass(frozen=True)
class SettingsSide:
    """One side: its kernel command line's words, and its settings (`scheduler`, `read_ahead_kb`,
    `nomerges`, `nice` and `sysfs:PATH` keys, values as text)."""

    cmdline: tuple[str, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()

    def params(self) -> dict[str, str]:
        """Command-line parameter name -> its word."""
        return {w.partition("=")[0]: w for w in self.cmdline}


def _shown(word: str) -> str:
    name, eq, value = word.partition("=")
    return value if eq else ("(set)" if word else "")


def changes(good: SettingsSide, bad: SettingsSide) -> list[Change]:
    """Every difference between the sides: command-line parameters by name (value `(set)` for a
    word without `=`, "" where a side does not give it), settings by key."""
    out: list[Change] = []
    g, b = good.params(), bad.params()
    for name in dict.fromkeys([*g, *b]):
        if g.get(name, "") != b.get(name, ""):
            out.append(Change(name, _shown(g.get(name, "")), _shown(b.get(name, ""))))
    gs, bs = dict(good.settings), dict(bad.settings)
    for key in dict.fromkeys([*gs, *bs]):
        if gs.get(key, "") != bs.get(key, ""):
            out.append(Change(key, gs.get(key, ""), bs.get(key, "")))
    return out


def _rank(name: str) -> int:
    if name == "scheduler":
        return RANKS["scheduler"]
    if name in QUEUE_KNOBS:
        return RANKS["queue"]
    if name == "nice":
        return RANKS["nice"]
    if name.startswith(SYSFS_PREFIX):
        return RANKS["queue"] if "/queue/" in name else RANKS["sysfs"]
    return RANKS["cmdline"]


def units(good: SettingsSide, bad: SettingsSide, together: Sequence[Sequence[str]] = ()) -> list[Unit]:
    """The changes as units: each alone, but for a scheduler's tunables (with the scheduler
    change) and the groups `together` names (each group's names must be changes; a unit's
    name is its changes' names joined by `+`)."""
    found = changes(good, bad)
    by_name = {c.name: c for c in found}
    groups: list[tuple[list[str], str]] = []
    for i, group in enumerate(together):
        missing = [n for n in group if n not in by_name]
        if missing:
            raise UserError(f"together[{i}]: {missing[0]!r} is not a change between the sides; changes: "
                            f"{', '.join(by_name) or '(none)'}")
        groups.append((list(group), "settable only together (together: in the campaign file)"))
    tunables = [n for n in by_name if n.startswith(SYSFS_PREFIX) and "/queue/iosched/" in n]
    if "scheduler" in by_name and tunables:
        groups.append((["scheduler", *tunables], "a scheduler's tunables exist only under that scheduler"))
    merged: list[tuple[list[str], str]] = []
    for names, why in groups:  # overlapping groups become one
        overlapping = [m for m in merged if set(m[0]) & set(names)]
        joined = list(dict.fromkeys([*(n for m in overlapping for n in m[0]), *names]))
        whys = "; ".join(dict.fromkeys([*(m[1] for m in overlapping), why]))
        merged = [m for m in merged if m not in overlapping] + [(joined, whys)]
    grouped = {n for joined, _why in merged for n in joined}
    names = [c.name for c in found]
    out = [Unit.of(by_name[n], _rank(n)) for n in names if n not in grouped]
    for joined, why in merged:
        out.append(Unit("+".join(joined), tuple(by_name[n] for n in joined), min(_rank(n) for n in joined),
                        why))
    return out


class SettingsMaker:
    """Candidates of a settings bisection: the one `kernel`, good's command line with the
    applied units' parameters as bad has them, good's settings with the applied units' settings
    as bad has them."""

    def __init__(self, kernel: KernelArtifact, good: SettingsSide, bad: SettingsSide, all_units: Sequence[Unit]) -> None:
        self.kernel, self.good, self.bad = kernel, good, bad
        self.changes_of = {u.name: [c.name for c in u.changes] for u in all_units}

    def side(self, applied: frozenset[str]) -> tuple[str, dict[str, str]]:
        """The candidate's command line and settings."""
        taken = {c for u in applied for c in self.changes_of[u]}
        g, b = self.good.params(), self.bad.params()
        words = [(b if name in taken else g).get(name, "") for name in dict.fromkeys([*g, *b])]
        gs, bs = dict(self.good.settings), dict(self.bad.settings)
        settings = {k: (bs if k in taken else gs).get(k, "") for k in dict.fromkeys([*gs, *bs])}
        return " ".join(w for w in words if w), {k: v for k, v in settings.items() if v}

    def make(self, applied: frozenset[str]) -> Made:
        cmdline, settings = self.side(applied)
        sysfs = [(QUEUE_KNOBS[k], v) for k, v in settings.items() if k in QUEUE_KNOBS]
        sysfs += [(k.removeprefix(SYSFS_PREFIX), v) for k, v in settings.items() if k.startswith(SYSFS_PREFIX)]
        nice = settings.get("nice")
        return Made(self.kernel, cmdline, settings.get("scheduler"), tuple(sysfs), int(nice) if nice else None)


def side_of(cmdline: str, settings: Mapping[str, str]) -> SettingsSide:
    """A side from its command line and its settings already checked (campaign.py)."""
    return SettingsSide(tuple(cmdline.split()), tuple(settings.items()))
