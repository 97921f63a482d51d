"""Guest settings as sysfs writes: the argument lists that make them and the checks that they
stuck (pure), and `GuestSettings`, which makes a variant's in one guest through its agent (a
comparison's variants, a set bisection's candidates, the profile boots).

A value reaches the guest as an argument of a fixed shell line (`echo "$1" > "$2"`), never as
shell text, so no variant field is ever parsed by a shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.compare.variant import Variant
from orchestrator.errors import UserError, WorkloadFailed
from orchestrator.workloads import runner as workload_runner

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


class GuestSettings:
    """Applies variants' sysfs settings in one guest, restoring what other variants changed."""

    def __init__(self, guest: Any, group: tuple[Variant, ...]) -> None:
        self.guest = guest
        disks = workload_runner.data_disks(guest)
        self.wants = {v.name: wanted(v, disks) for v in group}
        paths = dict.fromkeys(p for w in self.wants.values() for p in w)
        # a scheduler's tunable is read once its scheduler is in (apply), not at boot
        self.original: dict[str, str | None] = {
            p: None if is_tunable(p) else current(self._read(p, group[0].name)) for p in paths}
        self.applied: str | None = None

    def _read(self, path: str, variant: str) -> str:
        try:
            return self.guest.agent.get(path).decode(errors="replace")
        except WorkloadFailed as exc:  # the agent's error response, e.g. no such file
            raise UserError(f"variant {variant}: cannot read {path} in this guest ({exc})") from None

    def _exists(self, path: str) -> bool:
        try:
            self.guest.agent.get(path)
        except WorkloadFailed:
            return False
        return True

    def apply(self, variant: Variant) -> None:
        if self.applied == variant.name:
            return
        for path, value in plan_writes(self.original, self.wants[variant.name]).items():
            if is_tunable(path) and self.original[path] is None:
                self.original[path] = current(self._read(path, variant.name))
            elif path not in self.wants[variant.name] and is_tunable(path) and not self._exists(path):
                continue  # its scheduler was switched out, and the value went with it
            result = self.guest.exec(write_argv(path, value), timeout_s=30.0)
            content = self._read(path, variant.name)
            if not result.succeeded or current(content) != value:
                offered = choices(content)
                hint = f"; valid choices: {', '.join(offered)}" if offered else f"; it reads {content.strip()!r}"
                raise UserError(f"variant {variant.name}: cannot set {path} to {value!r}{hint}")
        self.applied = variant.name
