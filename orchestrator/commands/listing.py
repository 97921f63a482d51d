"""How a listing command writes its rows: a table for people (rich on a terminal; off a terminal,
plain columns as wide as their widest value: nothing cut, no ellipsis, no wrapping), JSON for
scripts (every field, typed), TSV where the listing is one table (one row a line; a tab, newline
or backslash inside a value is written \\t, \\n, \\\\)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

FORMATS = ("table", "json", "tsv")


def add_format_option(p: Any, formats: Sequence[str] = FORMATS) -> None:
    p.add_argument("--format", choices=formats, default="table",
                   help="table for people (full values when not on a terminal), json for scripts"
                        + (", tsv: one row a line" if "tsv" in formats else ""))


def cell(value: Any) -> str:
    """A value as a table shows it: None as -, the rest as str."""
    return "-" if value is None or value == "" else str(value)


def plain(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest value, two spaces apart, no value cut; trailing blanks dropped."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return ["  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip() for line in [list(headers), *rows]]


def escape_tsv(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def tsv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["\t".join(escape_tsv(v) for v in line) for line in [list(headers), *rows]]


def to_json(value: Any) -> str:
    return json.dumps(value, indent=2, default=str)


def write_table(title: str, headers: Sequence[str], records: Sequence[Mapping[str, Any]], fmt: str,
                out: TextIO | None = None) -> None:
    """`records` (one mapping a row, keyed by `headers`) in format `fmt`."""
    out = out if out is not None else sys.stdout
    if fmt == "json":
        print(to_json([dict(r) for r in records]), file=out)
        return
    rows = [[cell(r[h]) for h in headers] for r in records]
    if fmt == "tsv":
        print("\n".join(tsv(headers, rows)), file=out)
    elif out.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        table = Table(title=Text(title))
        for h in headers:
            table.add_column(h)
        for row in rows:
            table.add_row(*map(Text, row))  # values as text, never rich markup
        Console(file=out).print(table)
    else:
        print("\n".join([title, *plain(headers, rows)]), file=out)
