"""`vmbisect report ID [--format md|html|json]`: the culprit report of a campaign."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from orchestrator.commands.argtypes import campaign_id, output_file
from orchestrator.commands.bisect import add_store_option
from orchestrator.commands.compare import FORMATS
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
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.bisect.adapters import choose_workload
    from orchestrator.bisect.session import campaign_workdir
    from orchestrator.commands import compare
    from orchestrator.report import collect, render_json, render_markdown
    from orchestrator.report_html import render_html
    from orchestrator.specs import BisectSpec, CompareSpec, VerifySpec, stored
    from orchestrator.store import Store

    store = Store(a.store)
    row = store.campaign(a.id)
    spec = stored(row)
    if isinstance(spec, CompareSpec):
        _emit(compare.report(store, a.id, spec, a.format), a.output)
        return 0
    if isinstance(spec, VerifySpec):
        result = row.result or {}
        _emit(json.dumps(result, indent=2) if a.format == "json" else "\n".join(result.get("verdict", [])), a.output)
        return 0
    assert isinstance(spec, BisectSpec)
    renderers = {"md": render_markdown, "html": render_html, "json": render_json}
    campaign = spec.campaign
    gb = GitBisect(campaign.repository, campaign_workdir(store, a.id))
    gb.prepare()
    report = collect(store, a.id, campaign.metric.name, choose_workload(campaign).direction, gb.info)
    _emit(renderers[a.format](report), a.output)
    return 0


def _emit(text: str, output: Path | None) -> None:
    if output:
        try:
            output.write_text(text)
        except OSError as exc:
            raise UserError(f"output: cannot write {output}: {exc.strerror}") from None
    else:
        print(text)
