"""Kernel module indexes (modules.dep, .builtin, .softdep, .alias) and load-order resolution.

Module names use `_` and `-` interchangeably, as the kernel does; they are normalized to `_`.
Soft dependencies count: ext4 and libcrc32c name "crc32c" as a soft "pre" dependency, and without
a crc32c module loaded first, xfs cannot load and ext4 cannot mount a checksummed filesystem
(there is no modprobe in the guest to fetch it on demand). Soft dependency names are resolved
the way modprobe does: a module of that name, else nothing if it is built in, else every module
with a matching alias.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from orchestrator.errors import InfraError, UserError

COMPRESSION_SUFFIXES: Mapping[str, str] = {".xz": "xz", ".zst": "zst", ".gz": "gz"}
_WILDCARDS = frozenset("*?[")


def normalize_name(name: str) -> str:
    return name.replace("-", "_")


def split_compression(relpath: str) -> tuple[str, str]:
    """("kernel/fs/xfs/xfs.ko", "xz") for "kernel/fs/xfs/xfs.ko.xz"; codec "" if uncompressed."""
    stem, dot, suffix = relpath.rpartition(".")
    codec = COMPRESSION_SUFFIXES.get(dot + suffix, "")
    return (stem if codec else relpath), codec


def module_name(relpath: str) -> str:
    """Module name of a path from modules.dep or modules.builtin ("crc32c-intel.ko.xz" -> crc32c_intel)."""
    plain, _ = split_compression(relpath)
    base = plain.rpartition("/")[2]
    if not base.endswith(".ko") or base == ".ko":
        raise InfraError(f"not a kernel module path: {relpath}")
    return normalize_name(base[:-3])


def _alias_normalize(alias: str) -> str:
    if "[" not in alias:
        return alias.replace("-", "_")
    out: list[str] = []
    in_brackets = False
    for char in alias:
        if char == "[":
            in_brackets = True
        elif char == "]":
            in_brackets = False
        out.append("_" if char == "-" and not in_brackets else char)
    return "".join(out)


@dataclass(frozen=True)
class SoftDeps:
    pre: tuple[str, ...] = ()
    post: tuple[str, ...] = ()


@dataclass(frozen=True)
class Aliases:
    """modules.alias: exact aliases by name, and wildcard patterns with their literal prefix."""

    exact: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    patterns: Sequence[tuple[str, str, str]] = ()

    def modules_for(self, name: str) -> set[str]:
        key = _alias_normalize(name)
        found = set(self.exact.get(key, ()))
        found.update(
            module
            for prefix, pattern, module in self.patterns
            if key.startswith(prefix) and fnmatchcase(key, pattern)
        )
        return found


@dataclass(frozen=True)
class ModuleIndex:
    """What a kernel release offers. `files` maps a module name to its path below the release dir."""

    files: Mapping[str, str]
    deps: Mapping[str, tuple[str, ...]]
    builtin: frozenset[str] = frozenset()
    softdeps: Mapping[str, SoftDeps] = field(default_factory=dict)
    aliases: Aliases = Aliases()

    def offers(self, name: str) -> bool:
        """Whether the release has `name`, as a module or built in."""
        wanted = normalize_name(name)
        return wanted in self.files or wanted in self.builtin

    def lookup(self, name: str) -> tuple[str, ...]:
        """Modules that satisfy a soft dependency on `name` (empty when built in or unknown)."""
        wanted = normalize_name(name)
        if wanted in self.files:
            return (wanted,)
        if wanted in self.builtin:
            return ()
        return tuple(sorted(self.aliases.modules_for(name) & self.files.keys()))


@dataclass(frozen=True)
class Resolution:
    """`order`: module names to load, dependencies first. `builtin`: wanted names built in."""

    order: tuple[str, ...]
    builtin: tuple[str, ...]


def _lines(text: str) -> list[tuple[int, str]]:
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def parse_modules_dep(
    text: str, source: str = "modules.dep"
) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """(name -> relative path, name -> names of its dependencies) from modules.dep text."""
    files: dict[str, str] = {}
    dep_paths: dict[str, list[str]] = {}
    for number, line in _lines(text):
        path, sep, rest = line.partition(":")
        if not sep or not path:
            raise InfraError(f"{source} line {number}: expected 'module.ko: dependencies', got {line!r}")
        name = module_name(path)
        if name not in files:
            files[name] = path
            dep_paths[name] = rest.split()
    by_path = {path: name for name, path in files.items()}
    deps: dict[str, tuple[str, ...]] = {}
    for name, paths in dep_paths.items():
        unknown = [p for p in paths if p not in by_path]
        if unknown:
            raise InfraError(f"{source}: {files[name]} depends on {unknown[0]}, which has no entry")
        deps[name] = tuple(by_path[p] for p in paths)
    return files, deps


def parse_modules_builtin(text: str) -> frozenset[str]:
    return frozenset(module_name(line) for _, line in _lines(text))


def parse_modules_softdep(text: str, source: str = "modules.softdep") -> dict[str, SoftDeps]:
    """Soft dependencies per module; names before any "pre:"/"post:" are ignored, as kmod does."""
    pre: dict[str, list[str]] = {}
    post: dict[str, list[str]] = {}
    for number, line in _lines(text):
        words = line.split()
        if words[0] != "softdep" or len(words) < 2:
            raise InfraError(f"{source} line {number}: expected 'softdep module ...', got {line!r}")
        module = normalize_name(words[1])
        current: list[str] | None = None
        for word in words[2:]:
            if word == "pre:":
                current = pre.setdefault(module, [])
            elif word == "post:":
                current = post.setdefault(module, [])
            elif current is not None:
                current.append(word)
    return {
        module: SoftDeps(tuple(pre.get(module, ())), tuple(post.get(module, ())))
        for module in sorted(pre.keys() | post.keys())
    }


def parse_modules_alias(text: str, source: str = "modules.alias") -> Aliases:
    exact: dict[str, list[str]] = {}
    patterns: list[tuple[str, str, str]] = []
    for number, line in _lines(text):
        words = line.split()
        if len(words) != 3 or words[0] != "alias":
            raise InfraError(f"{source} line {number}: expected 'alias pattern module', got {line!r}")
        pattern, module = _alias_normalize(words[1]), normalize_name(words[2])
        cut = min((pattern.find(c) for c in _WILDCARDS if c in pattern), default=-1)
        if cut < 0:
            exact.setdefault(pattern, []).append(module)
        else:
            patterns.append((pattern[:cut], pattern, module))
    return Aliases({k: tuple(v) for k, v in exact.items()}, tuple(patterns))


def resolve(wanted: Sequence[str], index: ModuleIndex, release: str) -> Resolution:
    """Every module needed to load `wanted` (hard and soft dependencies), dependencies first.

    Raises UserError for a wanted name that is neither a module nor built into `release`.
    """
    builtin: list[str] = []
    roots: list[str] = []
    for raw in wanted:
        name = normalize_name(raw)
        if name in index.files:
            roots.append(name)
        elif name in index.builtin:
            builtin.append(name)
        else:
            raise UserError(
                f"kernel module {raw} is neither a module nor built into kernel release {release}"
            )
    before: dict[str, set[str]] = {}
    visited: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in visited:
            continue
        visited.add(name)
        soft = index.softdeps.get(name, SoftDeps())
        pre = [m for s in soft.pre for m in index.lookup(s)]
        post = [m for s in soft.post for m in index.lookup(s)]
        before.setdefault(name, set()).update(index.deps[name], pre)
        for later in post:
            before.setdefault(later, set()).add(name)
        pending.extend([*index.deps[name], *pre, *post])
    return Resolution(_topological(before), tuple(dict.fromkeys(builtin)))


def _topological(before: Mapping[str, set[str]]) -> tuple[str, ...]:
    """Order where every name follows all names in its `before` set; ties broken by name."""
    waiting = {name: {b for b in deps if b != name} for name, deps in before.items()}
    users: dict[str, list[str]] = {name: [] for name in waiting}
    for name, deps in waiting.items():
        for dep in deps:
            users[dep].append(name)
    ready = [name for name, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for user in users[name]:
            waiting[user].discard(name)
            if not waiting[user]:
                heapq.heappush(ready, user)
    if len(order) != len(waiting):
        stuck = sorted(set(waiting) - set(order))
        raise InfraError(f"kernel module dependencies form a cycle among: {', '.join(stuck)}")
    return tuple(order)
