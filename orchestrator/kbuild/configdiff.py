"""Pure: two .config files as option changes, a candidate .config made of the good one and some of
them, and where each option is defined (for the order a maintainer tries them in).

    good, bad = values(good_text), values(bad_text)
    changes = diff(good, bad)                      # CONFIG_X: good value -> bad value
    text = apply(good_text, {"CONFIG_X": "y"})     # the good .config with CONFIG_X=y

A value is the text after `=` (`y`, `m`, `"str"`, `123`, `0x10`); "n" stands for `# CONFIG_X is
not set`, `CONFIG_X=n` and an option the file lacks alike (Kconfig reads all three as off).
docs/config-bisect.md describes the whole config bisection.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.kbuild.kconfig import NOT_SET, parse_config

_LINE = re.compile(r"^\s*(?:# )?(CONFIG_[A-Za-z0-9_]+)(?:=| is not set\s*$)")
_DEFINITION = re.compile(r"^(?:[0-9a-f]{7,64}:)?(?P<path>[^:]+):\s*(?:menu)?config\s+(?P<name>[A-Za-z0-9_]+)\s*$")


@dataclass(frozen=True)
class OptionChange:
    """One option that differs: its value on the good side and on the bad side."""

    option: str
    good: str
    bad: str

    @property
    def name(self) -> str:
        return self.option.removeprefix("CONFIG_")

    def describe(self) -> str:
        return f"{self.name}: {shown(self.good)} -> {shown(self.bad)}"


def shown(value: str) -> str:
    return "not set" if value == NOT_SET else value


def values(text: str) -> dict[str, str]:
    """Option -> value of a .config; options set to "n" are left out (absent means not set)."""
    return {k: v for k, v in parse_config(text).items() if v != NOT_SET}


def config_sha(text: str) -> str:
    """The identity of a normalised .config: two candidates with the same one are one kernel."""
    return hashlib.sha256(text.encode()).hexdigest()


def diff(good: Mapping[str, str], bad: Mapping[str, str]) -> list[OptionChange]:
    """The options whose value differs, by name; absent and "n" are the same value."""
    names = sorted(set(good) | set(bad))
    out = []
    for option in names:
        g, b = good.get(option, NOT_SET), bad.get(option, NOT_SET)
        if g != b:
            out.append(OptionChange(option, g, b))
    return out


def vanished(raw_good: Mapping[str, str], raw_bad: Mapping[str, str], changes: Iterable[OptionChange]) -> list[OptionChange]:
    """The options the files as written differ in that are not `changes` (the difference between
    the two files after `make olddefconfig`): one side lacked the option, or asked for a value
    Kconfig does not allow, and olddefconfig gave both sides the same value."""
    kept = {c.option for c in changes}
    return [c for c in diff(raw_good, raw_bad) if c.option not in kept]


def render(option: str, value: str) -> str:
    return f"# {option} is not set" if value == NOT_SET else f"{option}={value}"


def apply(text: str, settings: Mapping[str, str]) -> str:
    """`text` with each option of `settings` given its value: its line rewritten in place, or
    appended when the file lacks it. Every other line is kept as it is."""
    left = dict(settings)
    lines = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m and m.group(1) in settings:
            option = m.group(1)
            if option in left:
                lines.append(render(option, left.pop(option)))
            continue  # a second line for the same option: the first one rewritten wins
        lines.append(raw)
    lines += [render(option, value) for option, value in left.items()]
    return "\n".join(lines) + "\n"


def definitions(grep_lines: Iterable[str], arch: str = "x86") -> dict[str, str]:
    """Option -> the Kconfig file defining it, from `git grep` lines ("<commit>:<path>:config X").
    An option defined in several files keeps the first of: not under arch/, under arch/<arch>/,
    any other, each in path order."""
    def rank(path: str) -> tuple[int, str]:
        if not path.startswith("arch/"):
            return 0, path
        return (1 if path.startswith(f"arch/{arch}/") else 2), path

    best: dict[str, tuple[int, str]] = {}
    for line in grep_lines:
        m = _DEFINITION.match(line.rstrip("\n"))
        if not m:
            continue
        option, here = "CONFIG_" + m.group("name"), rank(m.group("path"))
        if option not in best or here < best[option]:
            best[option] = here
    return {option: path for option, (_rank, path) in best.items()}
