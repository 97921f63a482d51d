"""Comparison variants from `NAME=ITEM,ITEM,...`: what kernel a variant boots and which guest
settings it applies before its runs. Pure parsing and validation; nothing runs here.

Items (each `key:value`):
    commit:REV        build REV of --repo with the --config recipe
    kernel:REF        a bzImage path, or a kernel stored by `vmbisect build` (name or sha256 prefix)
    modules:RELEASE   put this host release's modules into the initramfs (distribution kernels)
    append:WORDS      extra kernel command line; write a comma inside as `\\,`
    sched:NAME        the I/O scheduler of every data disk (none, mq-deadline, bfq, kyber)
    sysfs:PATH=VALUE  write VALUE to /sys/PATH before the runs; `{disk}` in PATH means every data disk
    nice:N            the workload's commands (and their children) start at nice value N (-20..19)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orchestrator.errors import UserError, choices_error

KEYS = ("commit", "kernel", "modules", "append", "sched", "sysfs", "nice")
SCHEDULERS = ("none", "mq-deadline", "bfq", "kyber")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,39}")
_SYSFS_PATH = re.compile(r"[A-Za-z0-9_.:{}-]+(/[A-Za-z0-9_.:{}-]+)*")
_REV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/^~@{}+-]*")


@dataclass(frozen=True)
class Variant:
    name: str
    commit: str | None = None
    kernel: str | None = None
    modules: str | None = None
    append: str = ""
    sched: str | None = None
    sysfs: tuple[tuple[str, str], ...] = field(default=())
    nice: int | None = None

    def boot_key(self) -> tuple[str | None, str | None, str | None, str]:
        """Variants with equal keys run in the same guest: same kernel, modules and command line."""
        return (self.commit, self.kernel, self.modules, self.append)

    def source(self) -> str:
        """Where its kernel comes from, in words: "commit REV" or "kernel REF"."""
        return f"commit {self.commit}" if self.commit else f"kernel {self.kernel}"

    def describe(self) -> str:
        return ", ".join([self.source(), *self.settings()])

    def settings(self) -> list[str]:
        """What this variant sets besides its kernel, in words."""
        parts = []
        if self.modules:
            parts.append(f"modules {self.modules}")
        if self.append:
            parts.append(f"append '{self.append}'")
        if self.sched:
            parts.append(f"sched={self.sched}")
        parts += [f"/sys/{p}={v}" for p, v in self.sysfs]
        if self.nice is not None:
            parts.append(f"nice {self.nice}")
        return parts


def _split_items(text: str) -> list[str]:
    """Split on commas that are not escaped as `\\,`."""
    items, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] == ",":
            current.append(",")
            i += 2
            continue
        if text[i] == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    items.append("".join(current))
    return items


def parse_variant(text: str, default_kernel: str | None = None, default_modules: str | None = None,
                  default_append: str = "") -> Variant:
    """One `--variant NAME=SPEC`; the defaults come from --kernel, --initrd-modules-from, --append."""
    name, sep, spec = text.partition("=")
    where = f"variant {name}"
    if not sep or not _NAME.fullmatch(name):
        raise UserError(f"variant: expected NAME=ITEM,... with NAME of letters, digits and ._+- (at most 40), "
                        f"got {text!r}")
    fields: dict[str, object] = {"sysfs": []}
    for item in _split_items(spec) if spec else []:
        key, colon, value = item.partition(":")
        if not colon:
            raise UserError(f"{where}: expected key:value items, got {item!r}; valid keys: {', '.join(KEYS)}")
        if key not in KEYS:
            raise choices_error(f"{where}: key", key, KEYS)
        if key == "sysfs":
            fields["sysfs"].append(parse_sysfs(where, value))  # type: ignore[attr-defined]
            continue
        if key in fields:
            raise UserError(f"{where}: {key} given twice")
        fields[key] = _value(where, key, value)
    if "commit" in fields and "kernel" in fields:
        raise UserError(f"{where}: give commit or kernel, not both")
    if "commit" not in fields and "kernel" not in fields:
        if default_kernel is None:
            raise UserError(f"{where}: no kernel; add commit:REV or kernel:PATH, or give --kernel for every variant")
        fields["kernel"] = default_kernel
    fields.setdefault("modules", default_modules)
    fields.setdefault("append", default_append)
    fields["sysfs"] = tuple(fields["sysfs"])  # type: ignore[arg-type]
    return Variant(name=name, **fields)  # type: ignore[arg-type]


def _value(where: str, key: str, value: str) -> object:
    if not value:
        raise UserError(f"{where}: {key} needs a value")
    if key == "commit" and not _REV.fullmatch(value):
        raise UserError(f"{where}: commit {value!r} is not a revision (letters, digits, ._/^~@{{}}+-)")
    if key == "sched" and value not in SCHEDULERS:
        raise choices_error(f"{where}: sched", value, SCHEDULERS)
    if key == "nice":
        try:
            nice = int(value)
        except ValueError:
            raise UserError(f"{where}: nice must be an integer from -20 to 19, got {value!r}") from None
        if not -20 <= nice <= 19:
            raise UserError(f"{where}: nice must be an integer from -20 to 19, got {nice}")
        return nice
    return value


def parse_sysfs(where: str, value: str) -> tuple[str, str]:
    """`PATH=VALUE` of a sysfs write (PATH under /sys, `{disk}` its one placeholder) as (path,
    value), or a UserError naming `where`."""
    path, eq, setting = value.partition("=")
    path = path.removeprefix("/sys/").strip("/")
    if not eq or not setting:
        raise UserError(f"{where}: sysfs expects PATH=VALUE, got {value!r}")
    if not _SYSFS_PATH.fullmatch(path) or ".." in path.split("/"):
        raise UserError(f"{where}: sysfs path {path!r} must be a plain path under /sys (letters, digits, ._:-, "
                        f"{{disk}})")
    if "{" in path.replace("{disk}", ""):
        raise UserError(f"{where}: sysfs path {path!r}: the only placeholder is {{disk}}")
    return path, setting


def parse_variants(texts: list[str], default_kernel: str | None = None, default_modules: str | None = None,
                   default_append: str = "") -> tuple[Variant, ...]:
    """Every --variant; at least two, names unique. The first is the baseline."""
    if len(texts) < 2:
        raise UserError(f"variant: a comparison needs at least two --variant NAME=SPEC, got {len(texts)}")
    variants = tuple(parse_variant(t, default_kernel, default_modules, default_append) for t in texts)
    seen: set[str] = set()
    for v in variants:
        if v.name in seen:
            raise UserError(f"variant: name {v.name!r} used twice")
        seen.add(v.name)
    return variants


def boot_groups(variants: tuple[Variant, ...]) -> list[list[Variant]]:
    """Variants sharing a guest, in first-seen order: settings switch between runs, no reboot."""
    groups: dict[tuple[str | None, str | None, str | None, str], list[Variant]] = {}
    for v in variants:
        groups.setdefault(v.boot_key(), []).append(v)
    return list(groups.values())
