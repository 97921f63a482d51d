"""The runs of the confirmation's boots of a culprit and its parent, read from the store, and the
table of everything that changed between them (orchestrator/explain/changed.py).

The confirmation boots both sides afresh, interleaved, from the boot stored with its
`measuring` decision (role confirm, `since`: orchestrator/bisect/confirmation.py), and the revert's
own `measuring` decision, when there is one, marks where its boots begin. `since` counts boots
as the judge numbered them: every whole boot of the campaign with runs of the bisected metric, on the
host that measured the culprit (and, unless the campaign ever moved, boots stored without a
host), in the order they started, stray ones included (Store.boot_samples). The stray boots
the judge leaves out of every decision (stats.stray_boots) are left out here too."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from orchestrator.decisions import Basis, Decided, Role
from orchestrator.explain.changed import Changed, RunRecord, changed
from orchestrator.stats import Boot, stray_boots


class Stored(Protocol):
    """What this module reads of orchestrator.store.Store."""

    def decisions(self, campaign_id: int) -> list[Decided]: ...
    def boots(self, campaign_id: int) -> Sequence[Any]: ...  # rows with id, commit, status, host, facts
    def runs(self, campaign_id: int) -> Iterable[Any]: ...  # rows with boot_id, commit, raw
    def boot_samples(self, campaign_id: int, metric: str, host: str | None = None,
                     legacy: bool = True) -> dict[str, list[Boot]]: ...


def confirmation_window(decisions: Sequence[Decided], culprit: str) -> tuple[int, int] | None:
    """The boots of the culprit's last confirmation, as [first, end) in the judge's numbering
    (end: where its revert's boots begin, or open); None when it never started."""
    start = next((i for i in range(len(decisions) - 1, -1, -1) if decisions[i].role is Role.CONFIRM
                  and decisions[i].commit == culprit and decisions[i].basis is Basis.MEASURING), None)
    if start is None:
        return None
    end = next((d.since for d in decisions[start + 1:] if d.role is Role.REVERT and d.basis is Basis.MEASURING
                and d.commit == culprit), None)
    return decisions[start].since, end if end is not None else 1 << 62


def records(raw_runs: Iterable[Any]) -> list[RunRecord]:
    """Stored runs (RunRow: boot_id, commit, raw = RunResult.to_json()) as RunRecords."""
    out = []
    for run in raw_runs:
        metrics = (run.raw or {}).get("metrics") or {}
        out.append(RunRecord(run.boot_id, run.commit, {
            name: (float(m["value"]), str(m.get("unit", "")), str(m.get("direction", "none")))
            for name, m in metrics.items() if isinstance(m, dict) and "value" in m}))
    return out


def confirmation_runs(store: Stored, campaign_id: int, metric: str, culprit: str, parent: str) -> list[RunRecord]:
    """The runs of the confirmation's boots of `culprit` and `parent` ([] without one), the boots
    numbered as the judge numbers them (Store.boot_samples: whole boots only, so a boot cut short
    by a controller that stopped shifts nothing)."""
    decisions = store.decisions(campaign_id)
    window = confirmation_window(decisions, culprit)
    if window is None:
        return []
    rows = store.boots(campaign_id)
    host = next((b.host for b in reversed(rows) if b.commit == culprit and b.status == "ok"), "")
    moved = any(d.role is Role.HOST for d in decisions)
    boots = store.boot_samples(campaign_id, metric, host or None, legacy=not moved)
    stray = stray_boots(boots)
    first, end = window
    chosen = {b.id for commit in (culprit, parent) for b in boots.get(commit, [])
              if first <= b.seq < end and b.seq not in stray}
    return [r for r in records(store.runs(campaign_id)) if r.boot in chosen]


def collect(store: Stored, campaign_id: int, metric: str, culprit: str, parent: str,
            alpha: float = 0.05) -> Changed | None:
    """Everything that changed on the confirmation's boots; None without a confirmation measured
    on both sides."""
    runs = confirmation_runs(store, campaign_id, metric, culprit, parent)
    if not {r.commit for r in runs} >= {culprit, parent}:
        return None
    return changed(parent, culprit, runs, metric, alpha)
