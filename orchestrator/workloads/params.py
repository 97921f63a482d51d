"""Parameter types of workload definitions: parse a user's text into a typed value or raise a
one-line UserError naming the parameter and its valid values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orchestrator.errors import UserError, choices_error

TYPES = ("int", "size", "enum", "bool", "count")
_SIZE = re.compile(r"(\d+)([kmg]?)(i?b)?", re.IGNORECASE)
_SIZE_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30}
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

ParamValue = int | str | bool


def parse_size(text: str) -> int | None:
    """'4k' -> 4096, '64K' -> 65536, '1m' -> 1048576, '512' -> 512; None when not a size."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        return None
    return int(m.group(1)) << _SIZE_SHIFT[m.group(2).lower()]


def format_size(n: int) -> str:
    for suffix, shift in (("g", 30), ("m", 20), ("k", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


@dataclass(frozen=True)
class ParamDef:
    """One parameter: `type` is int, size (bytes, '4k' style), enum, bool or count (an
    integer or 'all'); `min`/`max` bound int, size and count; `choices` lists enum values."""

    name: str
    type: str
    default: ParamValue
    help: str = ""
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] = ()

    def valid(self) -> str:
        if self.type == "enum":
            return ", ".join(self.choices)
        if self.type == "bool":
            return "true, false"
        lo = "" if self.min is None else (format_size(self.min) if self.type == "size" else str(self.min))
        hi = "" if self.max is None else (format_size(self.max) if self.type == "size" else str(self.max))
        span = f"{lo}..{hi}"
        if self.type == "size":
            return f"a size in bytes like 512, 4k, 64k, 1m within {span}"
        if self.type == "count":
            return f"all, or an integer within {span}"
        return f"an integer within {span}"

    def parse(self, value: Any, field: str) -> ParamValue:
        """A typed value from text (CLI) or YAML (already int/bool); UserError when invalid."""
        text = str(value).strip()
        if self.type == "enum":
            if text not in self.choices:
                raise choices_error(field, value, self.choices)
            return text
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            if text.lower() in _TRUE + _FALSE:
                return text.lower() in _TRUE
            raise choices_error(field, value, self.valid())
        if self.type == "count" and text == "all":
            return "all"
        number = parse_size(text) if self.type == "size" else _parse_int(text)
        if number is None or (self.min is not None and number < self.min) or (
                self.max is not None and number > self.max):
            raise choices_error(field, value, self.valid())
        return number


def _parse_int(text: str) -> int | None:
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def param_def(name: str, raw: dict[str, Any], where: str) -> ParamDef:
    """A ParamDef from its YAML mapping; the default is checked against its own rules."""
    kind = raw.get("type")
    if kind not in TYPES:
        raise choices_error(f"{where}: params.{name}.type", kind, TYPES)
    mins, maxs = raw.get("min"), raw.get("max")
    p = ParamDef(
        name=name,
        type=kind,
        default=raw.get("default", ""),
        help=str(raw.get("help", "")),
        min=None if mins is None else int(parse_size(str(mins)) or 0),
        max=None if maxs is None else int(parse_size(str(maxs)) or 0),
        choices=tuple(str(c) for c in raw.get("choices", ())),
    )
    if "default" not in raw:
        raise UserError(f"{where}: params.{name} has no default")
    return ParamDef(**{**p.__dict__, "default": p.parse(raw["default"], f"{where}: params.{name}.default")})
