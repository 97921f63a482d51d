"""Guest settings as sysfs writes: the argument lists that make them and the checks that they
stuck. Pure; compare/runner.py runs them through the agent.

A value reaches the guest as an argument of a fixed shell line (`echo "$1" > "$2"`), never as
shell text, so no variant field is ever parsed by a shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from orchestrator.compare.variant import Variant

WRITE_SCRIPT = 'echo "$1" > "$2"'
_SELECTED = re.compile(r"\[([^\]]+)\]")


def write_argv(path: str, value: str) -> list[str]:
    return ["sh", "-c", WRITE_SCRIPT, "vmbisect-set", value, path]


def wanted(variant: Variant, disks: Sequence[str]) -> dict[str, str]:
    """/sys path -> value this variant sets, `{disk}` expanded to every data disk."""
    out: dict[str, str] = {}
    if variant.sched is not None:
        out |= {f"/sys/block/{d}/queue/scheduler": variant.sched for d in disks}
    for path, value in variant.sysfs:
        targets = [path.replace("{disk}", d) for d in disks] if "{disk}" in path else [path]
        out |= {f"/sys/{t}": value for t in targets}
    return out


def current(content: str) -> str:
    """What a sysfs attribute is set to: the bracketed choice of a list attribute
    (`none [bfq] mq-deadline` -> bfq), else the stripped content."""
    m = _SELECTED.search(content)
    return m.group(1) if m else content.strip()


def choices(content: str) -> list[str]:
    """The values a list attribute offers (`none [bfq] mq-deadline` -> none, bfq, mq-deadline)."""
    return [w.strip("[]") for w in content.split()] if _SELECTED.search(content) else []


def is_tunable(path: str) -> bool:
    """A scheduler's tunable (queue/iosched/): it exists only while its scheduler is the disk's,
    and a scheduler switched in starts with its tunables at their defaults."""
    return "/queue/iosched/" in path


def plan_writes(group_paths: Mapping[str, str | None], variant_wants: Mapping[str, str]) -> dict[str, str]:
    """Values to write before a variant's run in a shared guest, schedulers first (a
    scheduler's tunables exist only under it): its own settings, and every other path the
    group touches back at the value it had before the group first wrote it (None: not read yet,
    a tunable no variant has set, left alone)."""
    order = sorted(group_paths, key=lambda path: not path.endswith("/queue/scheduler"))
    return {path: variant_wants.get(path, group_paths[path] or "") for path in order
            if path in variant_wants or group_paths[path] is not None}
