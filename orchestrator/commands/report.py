"""`vmbisect report ID [--format md|html|json]`: the culprit report of a campaign."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.commands.argtypes import campaign_id, output_file
from orchestrator.commands.compare import FORMATS
from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError, choices_error


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="the report of a campaign: culprit of a bisection, tables of a comparison")
    p.add_argument("id", type=campaign_id, help="campaign id")
    p.add_argument("--format", default="md", help="md, html or json")
    p.add_argument("--output", type=output_file, help="write to this file instead of standard output")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    if a.format not in FORMATS:
        raise choices_error("format", a.format, FORMATS)
    from orchestrator.kinds.table import report
    from orchestrator.store import Store

    _emit(report(Store(a.store, create=False), a.id, a.format), a.output)
    return 0


def _emit(text: str, output: Path | None) -> None:
    if output:
        try:
            output.write_text(text)
        except OSError as exc:
            raise UserError(f"output: cannot write {output}: {exc.strerror}") from None
    else:
        print(text)
