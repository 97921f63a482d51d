"""The record every campaign kind fills once (orchestrator/kinds/table.py lists them), and what
a kind's run is given."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from orchestrator.kinds.specs import CampaignSpec
from orchestrator.results import Answer

if TYPE_CHECKING:
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.notify.recipients import Notify
    from orchestrator.ports import Event
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow, CampaignRow, Store

OnEvent = Callable[["Event"], None]
S = TypeVar("S", bound=CampaignSpec)


@dataclass(frozen=True)
class Run:
    """What a kind's run gets from `execute` (orchestrator/kinds/run.py): the stored campaign,
    the open guest pool, where progress goes."""

    store: Store
    campaign_id: int
    spec: Any
    pool: GuestPool
    on_event: OnEvent


@dataclass(frozen=True, kw_only=True)
class Kind(Generic[S]):
    """One campaign kind, every path a campaign of it takes, each field named where the kind is
    declared (no field is given by its place) and typed by the kind's spec `S`:

    `name`: the store's `kind` column; `spec`/`result`: its typed spec and answer (each with
    `to_dict`/`from_dict`); `check`: what can be checked before it (re)runs, without building or
    booting; `lab`: its lab file and the host it is pinned to; `notify`: who its campaign file
    names to mail (None: its lab file's list); `progress`: where its progress goes by default
    (store, id, spec, as_json); `run`: measure to the end on the pool given, store the result,
    and say what to print; `report`: md, html or json; `metric`: the metric its counts are of;
    `left`: the dashboard's boots-left estimate of a running one; `file`: the checked spec of a
    campaign file with `kind: <name>` (or one of `aliases`), None when no file starts one."""

    name: str
    spec: type[S]
    result: type[Answer]
    check: Callable[[S], None]
    lab: Callable[[S], tuple[Path | None, str | None]]
    notify: Callable[[S], Notify | None]
    progress: Callable[[Store, int, S, bool], AbstractContextManager[OnEvent]]
    run: Callable[[Run], str]
    report: Callable[[Store, int, S, str], str]
    metric: Callable[[S], str | None]
    left: Callable[[Store, CampaignRow, S, list[BootRow]], Estimate]
    file: Callable[[Any, Path], S] | None = None
    aliases: tuple[str, ...] = ()
