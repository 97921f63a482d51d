"""A set bisection's report from its store: the sides' changes (in the order a maintainer would
try them, with the unit each belongs to), every candidate judged with its boots, value and
verdict, the named set, the confirmation and the revert; Markdown, HTML (escaped, the one page
shell) and JSON. Read while it runs, too: the candidates are the search replayed over the
verdicts stored so far."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from html import escape
from typing import Any

from orchestrator.decisions import Basis, Found, Role
from orchestrator.measure.endpoints import level
from orchestrator.measure.evidence import boots_by_host
from orchestrator.render.page import page, table
from orchestrator.results import SetBisectResult, answer_as, stopped, text_of
from orchestrator.setbisect.model import BAD, GOOD, Unit, key_of, label, ordered
from orchestrator.setbisect.setbisection import replay
from orchestrator.stats import relative_change
from orchestrator.store import Store


@dataclass(frozen=True)
class CandidateRow:
    """One candidate (or side): its key, what it is, its boots, value, change against good, the
    verdict and why."""

    key: str
    what: str
    boots: int
    value: float | None
    change: float | None
    verdict: str
    why: str


@dataclass(frozen=True)
class SetReport:
    title: str
    about: tuple[str, ...]  # kernel, workload, metric lines
    changes: tuple[tuple[str, str, str, str], ...]  # change, good, bad, unit
    rows: tuple[CandidateRow, ...]
    state: str
    answer: tuple[str, ...]  # the result's lines (or why it stopped)
    hosts: str


def collect(store: Store, campaign_id: int, units: Sequence[Unit], metric: str, about: Sequence[str],
            kind: str = "settings") -> SetReport:
    row = store.campaign(campaign_id)
    units = ordered(units)
    names = [u.name for u in units]
    decisions = store.decisions(campaign_id)
    boots, _hosts, hosts_line = boots_by_host(store, campaign_id, metric)
    good_level = level(boots[GOOD]) if boots.get(GOOD) else None
    # a candidate's verdict; for one the search never judged (bad - set), the revert's
    latest = {d.commit: d for d in decisions if d.role is Role.REVERT and d.basis is not Basis.MEASURING}
    latest |= {d.commit: d for d in decisions if d.role in (Role.GOOD, Role.BAD, Role.CANDIDATE)}
    asked, _done = replay(units, decisions)
    keys: list[tuple[str, str]] = [(GOOD, "good"), (BAD, "bad")]
    keys += [(k, label(a, names)) for k, a in asked]
    pair = [d for d in decisions if d.role in (Role.CONFIRM, Role.REVERT)]
    result = answer_as(SetBisectResult, row.state, row.result)
    stop = stopped(row.state, row.result)
    if result is not None:
        named = frozenset(result.units)
        out = frozenset(result.revert.units if result.revert is not None else ()) or named  # runner._taken_out
        if named | out <= set(names):  # else the units are not known here (a config campaign's sides not found)
            keys += [(key_of(named, names), label(named, names)),
                     (key_of(frozenset(names) - out, names), label(frozenset(names) - out, names))]
    keys += _ahead(keys, decisions, boots, result is not None, bool(names))
    rows = []
    for key, what in dict.fromkeys(keys):
        bs = boots.get(key, [])
        value = level(bs) if bs else None
        change = relative_change(good_level, value) if value is not None and good_level else None
        d = latest.get(key)
        rows.append(CandidateRow(key, what, len(bs), value, change, d.verdict if d else "", d.reason if d else ""))
    answer: list[str] = []
    if result is not None:
        answer.append(f"named: {' + '.join(result.units)} "
                      f"({'together: no single change moves the metric' if result.found is Found.TOGETHER else 'alone'})")
        answer += [f"- {c}" for c in result.changes]
        answer += [f"confirmation: {text_of(result.confirmation)}", f"revert: {text_of(result.revert)}"]
        answer += [f"note: {n}" for n in result.notes]
    elif stop is not None:
        answer.append(stop.line())
    else:
        answer.append(f"{row.state}: {len(asked)} candidate(s) asked so far")
    if result is None:  # under way
        answer += [f"{d.role.value} ({d.verdict}): {d.reason}" for d in pair if d.basis is Basis.MEASURING]
    changes = tuple((c.name, c.good or "(default)", c.bad or "(default)", u.name if len(u.changes) > 1 else "")
                    for u in units for c in u.changes)
    return SetReport(f"vmbisect {kind} bisection {row.name}", tuple(about), changes, tuple(rows), row.state,
                     tuple(answer), hosts_line)


def _ahead(keys: Sequence[tuple[str, str]], decisions: Sequence[Any], boots: Mapping[str, Any],
           done: bool, units_known: bool = True) -> list[tuple[str, str]]:
    """The candidates other slots measured ahead that the search has not asked (measure/judges.py): judged
    (kept as evidence; their verdict's reason names them), or booted and stopped before a verdict.
    Without the units (a config campaign whose sides are not found) nothing can be replayed: every
    candidate is listed by its key, its reason naming it."""
    seen = {k for k, _what in keys} | {d.commit for d in decisions if d.role in (Role.CONFIRM, Role.REVERT)}
    judged = [d.commit for d in decisions if d.role is Role.CANDIDATE and d.commit not in seen]
    if not units_known:
        return [(k, "a candidate (its units: see why)") for k in judged]
    out = [(k, "measured ahead, " + ("not needed by the search" if done else "not asked yet")) for k in judged]
    return out + [(k, "measured ahead, stopped before a verdict") for k in boots if k not in seen and k not in judged]


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}" if abs(x) >= 100 else f"{x:.4g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _cells(r: CandidateRow) -> list[str]:
    return [r.what, r.key, str(r.boots), _num(r.value), _pct(r.change), r.verdict, r.why]


HEAD_CHANGES = ["change", "good", "bad", "unit"]
HEAD_ROWS = ["candidate", "key", "boots", "value", "vs good", "verdict", "why"]


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(r: SetReport) -> str:
    out = [f"# {_md_cell(r.title)}", "", *[f"- {_md_cell(a)}" for a in r.about], "", "## Answer", ""]
    out += [_md_cell(a) for a in r.answer] + ["", "## The two sides", ""]
    out += ["| " + " | ".join(HEAD_CHANGES) + " |", "|" + "---|" * len(HEAD_CHANGES)]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in r.changes]
    out += ["", "## Candidates (in the order judged; value: geometric mean of boot means)", ""]
    out += ["| " + " | ".join(HEAD_ROWS) + " |", "|" + "---|" * len(HEAD_ROWS)]
    out += ["| " + " | ".join(_md_cell(c) for c in _cells(row)) + " |" for row in r.rows]
    if r.hosts:
        out += ["", f"Boots: {_md_cell(r.hosts)}"]
    return "\n".join(out) + "\n"


def render_html(r: SetReport) -> str:
    about = "".join(f"<li>{escape(a)}</li>" for a in r.about)
    answer = "".join(f"<p>{escape(a)}</p>" for a in r.answer)
    body = (f"<ul>{about}</ul><h2>Answer</h2>{answer}<h2>The two sides</h2>"
            f"{table(HEAD_CHANGES, [list(c) for c in r.changes])}"
            f"<h2>Candidates</h2><p>In the order judged; value: geometric mean of boot means.</p>"
            f"{table(HEAD_ROWS, [_cells(x) for x in r.rows], [['', 'mono', 'num', 'num', 'num', '', ''] for _ in r.rows])}"
            + (f"<p>Boots: {escape(r.hosts)}</p>" if r.hosts else ""))
    return page(r.title, body)


def render_json(r: SetReport) -> str:
    doc: dict[str, Any] = asdict(r)
    doc["changes"] = [dict(zip(HEAD_CHANGES, c)) for c in r.changes]
    return json.dumps(doc, indent=2, default=str)


RENDERERS = {"md": render_markdown, "html": render_html, "json": render_json}

