"""Pure Kconfig text handling: parse .config / fragment lines, check requested options stuck."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
NOT_SET = "n"


def parse_config(text: str) -> dict[str, str]:
    """Option -> value; `# CONFIG_X is not set` and `CONFIG_X=n` read as "n". Later lines win."""
    options: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if m := _SET.match(line):
            options[m.group(1)] = m.group(2)
        elif m := _UNSET.match(line):
            options[m.group(1)] = NOT_SET
    return options


def requested_options(texts: Iterable[str]) -> dict[str, str]:
    """What a sequence of fragments asks for, later fragments overriding earlier ones."""
    wanted: dict[str, str] = {}
    for text in texts:
        wanted.update(parse_config(text))
    return wanted


def unmet(wanted: Mapping[str, str], final: Mapping[str, str]) -> list[str]:
    """One description per requested option the final .config does not have as asked."""
    problems = []
    for option, value in wanted.items():
        got = final.get(option, NOT_SET)
        if got == value:
            continue
        if value == NOT_SET:
            problems.append(f"{option} is forced to {got} (asked: not set)")
        elif option not in final:
            problems.append(f"{option}={value} is absent (no such option in this kernel, or its dependencies are off)")
        else:
            shown = "not set" if got == NOT_SET else got
            problems.append(f"{option}={value} became {shown} (an unmet dependency or a select/range rule)")
    return problems


def has_modules(final: Mapping[str, str]) -> bool:
    return final.get("CONFIG_MODULES") == "y" and any(v == "m" for v in final.values())
