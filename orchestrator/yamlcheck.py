"""Checks of values read from YAML (campaign files, lab files): each raises a one-line
UserError naming the field's path and saying what it got, in the file's terms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orchestrator.errors import UserError

MAX_TEXT = 4096


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
