"""Checks of values read from YAML (campaign files, lab files): each raises a one-line
UserError naming the field's path and saying what it got, in the file's terms."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from orchestrator.errors import UserError

MAX_TEXT = 4096
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 16
MAX_VALUES = 10_000


def read_file(path: Path, what: str, size_hint: str, expected: str) -> Any:
    """A YAML file (`what`: campaign, lab) as plain data, or a one-line UserError: unreadable,
    too large, not UTF-8, not YAML, empty (`expected` says what it should hold), nested too
    deep, too many values or an alias that refers to itself (`size_hint` says why not)."""
    try:
        with path.open("rb") as f:
            blob = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UserError(f"{what}: cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:  # a NUL in the path
        raise UserError(f"{what}: cannot read {path!r}: {exc}") from exc
    if len(blob) > MAX_FILE_BYTES:
        raise UserError(f"{what}: {path} is larger than {MAX_FILE_BYTES >> 20} MiB; {size_hint}")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{what}: {path} is not UTF-8 text (byte 0x{blob[exc.start]:02x} at offset "
                        f"{exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{what}: {path} is not valid YAML{where}") from exc
    except RecursionError:
        raise UserError(f"{what}: {path} nests deeper than {MAX_DEPTH} levels") from None
    except Exception as exc:  # noqa: BLE001 - whatever PyYAML's constructors raise is the file's fault
        # A 5,000-digit number (ValueError), a date like 2020-13-45, `!!timestamp 1` (AttributeError).
        first = str(exc).splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{what}: {path} has a value YAML cannot convert: {first}") from None
    if data is None:
        raise UserError(f"{what}: {path} is empty; expected {expected}")
    check_tree(data, what, size_hint)
    return data


def check_tree(data: Any, what: str, size_hint: str) -> None:
    """Reject what would make a loader recurse or loop: alias loops (`&a [*a]`), nesting beyond
    MAX_DEPTH, more than MAX_VALUES values (billion laughs through aliases). Paths in the
    errors start at the top-level keys (`what` for the top itself)."""
    seen = 0
    stack: list[tuple[Any, int, frozenset[int], str]] = [(data, 0, frozenset(), what)]
    while stack:
        value, depth, parents, path = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise UserError(f"{what}: more than {MAX_VALUES} values; {size_hint}")
        if not isinstance(value, (dict, list)):
            continue
        if id(value) in parents:
            raise UserError(f"{path}: refers to itself (a YAML alias loop)")
        if depth >= MAX_DEPTH:
            raise UserError(f"{path}: nests deeper than {MAX_DEPTH} levels")
        inner = parents | {id(value)}
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            if isinstance(key, (dict, list)):
                raise UserError(f"{path}: a key must be text, got {kind(key)}")
            where = str(key) if path == what else f"{path}.{key}"
            stack.append((child, depth + 1, inner, where))


def kind(value: Any) -> str:
    """What a YAML value is, in the file's terms: nothing, true/false, a number, text, a list, a mapping."""
    if value is None:
        return "nothing (null or an empty value)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return f"the number {shown(value)}"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def shown(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > 128:
        return "a number of more than 38 digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise UserError(f"{path}: expected a mapping of keys to values, got {kind(value)}")
    return value


def items(value: Any, path: str, what: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        raise UserError(f"{path}: expected a list of {what}, got {kind(value)}")
    if len(value) > limit:
        raise UserError(f"{path}: at most {limit} entries, got {len(value)}")
    return value


def known(data: Mapping[str, Any], path: str, allowed: list[str]) -> None:
    for key in data:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise UserError(f"{where}: unknown key; valid keys: {', '.join(allowed)}")


def text(value: Any, path: str, limit: int = MAX_TEXT) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{path}: expected text, got {kind(value)}")
    text = str(value)
    if len(text) > limit:
        raise UserError(f"{path}: at most {limit} characters, got {len(text)}")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise UserError(f"{path}: contains a control character (NUL, newline, tab, escape...)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{path}: contains a lone surrogate (\\ud800-\\udfff), not text") from None
    return text
