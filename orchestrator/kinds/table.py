"""The kind table: every campaign kind, by the store's `kind` column, and the lookups that go
through it (a stored campaign resolved once, its spec, result, status line, metric, report,
estimate)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestrator.errors import UserError
from orchestrator.kinds import bisect_kind, compare_kind, config_kind, settings_kind, verify_kind
from orchestrator.kinds.kind import Kind, StoredCampaign
from orchestrator.kinds.specs import CampaignSpec
from orchestrator.results import Result, read

if TYPE_CHECKING:
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow, CampaignRow, Store

KINDS: dict[str, Kind[Any]] = {k.name: k for k in (
    bisect_kind.KIND, verify_kind.KIND, compare_kind.KIND, settings_kind.KIND, config_kind.KIND)}

# Campaign files with a `kind:` key (none: a commit bisection, kinds/bisect_kind.py from_file): the
# file's kind -> the kind it starts.
FILES: dict[str, Kind[Any]] = {name: k for k in KINDS.values() if k.file is not None for name in (k.name, *k.aliases)}


def kind_of(name: str) -> Kind[Any]:
    if name not in KINDS:
        raise UserError(f"kind: unknown campaign kind {name!r}; known: {', '.join(KINDS)}")
    return KINDS[name]


def load(kind: str, data: Mapping[str, Any]) -> Any:
    """The typed spec of a stored campaign of `kind`."""
    return kind_of(kind).spec.from_dict(data)


def stored(row: CampaignRow) -> Any:
    """The typed spec of a campaign row."""
    return load(row.kind, json.loads(row.spec or "{}"))


def open_campaign(store: Store, campaign_id: int) -> StoredCampaign:
    """Campaign `campaign_id` read from the store once: its row, kind and typed spec."""
    return resolved(store, store.campaign(campaign_id))


def resolved(store: Store, row: CampaignRow) -> StoredCampaign:
    """The stored campaign of a row already read."""
    return StoredCampaign(store, row, kind_of(row.kind), stored(row))


def record(store: Store, name: str, spec: CampaignSpec) -> int:
    """A new campaign of the spec's kind; its id."""
    return store.new_campaign(name, spec.to_dict(), spec.KIND)


def read_result(kind: str, state: str, data: Mapping[str, Any] | None) -> Result | None:
    """The typed result of a campaign of `kind` in `state` (None while it runs without one)."""
    return read(kind_of(kind).result, state, data)


def result_of(row: Any) -> Result | None:
    return read_result(row.kind, row.state, row.result)


def status_line(row: Any) -> str:
    """What the campaign ended with, in one line ("" while it runs without a result)."""
    result = result_of(row)
    return result.line() if result is not None else ""


def metric_of(row: Any) -> str | None:
    """The metric a campaign judges by (None when it names none, or its stored spec no longer
    reads: the list still shows the campaign)."""
    try:
        spec = stored(row)
    except UserError:
        return None
    return KINDS[row.kind].metric(spec)


def report(store: Store, campaign_id: int, fmt: str) -> str:
    """The campaign's report made now: md, html or json."""
    campaign = open_campaign(store, campaign_id)
    return campaign.kind.report(campaign, fmt)


def estimate(store: Store, row: CampaignRow, boots: list[BootRow]) -> Estimate:
    """The dashboard's estimate of the boots a running campaign has left."""
    from orchestrator.report.estimate import Estimate

    try:
        campaign = resolved(store, row)
        return campaign.kind.left(campaign, boots)
    except UserError as exc:  # a stored spec that no longer reads or plans: the page still shows the rest
        return Estimate(None, f"no estimate: {exc}")
