"""The record every campaign kind fills once (orchestrator/kinds/table.py lists them), the
stored campaign its paths are handed (read from the store once, where a run, a report or a mail
starts), and what a kind's run is given."""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from orchestrator.kinds.specs import CampaignSpec
from orchestrator.results import Answer

if TYPE_CHECKING:
    from orchestrator.backends.git_bisect import GitBisect
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.notify.recipients import Notify
    from orchestrator.ports import Event
    from orchestrator.report.estimate import Estimate
    from orchestrator.store import BootRow, CampaignRow, Store

OnEvent = Callable[["Event"], None]
S = TypeVar("S", bound=CampaignSpec)


@dataclass(frozen=True)
class StoredCampaign:
    """One campaign as the store holds it, resolved once (kinds/table.py `open_campaign`) and
    handed down: the store, its row, its kind and its typed spec."""

    store: Store
    row: CampaignRow
    kind: Kind[Any]
    spec: Any

    @property
    def id(self) -> int:
        return self.row.id

    def clone(self, note: Callable[[str], None] = lambda _m: None) -> GitBisect:
        """The campaign's clone of its repository (a kind whose campaign file names one:
        bisect, verify, config), from the one clone factory (bisect/workdir.py); its `prepare`
        makes or refreshes it."""
        from orchestrator.bisect.workdir import clone

        return clone(self.store, self.id, self.spec.campaign.repository, note)

    def read_again(self) -> StoredCampaign:
        """The same campaign with its row as the store holds it now (the state and result a run
        wrote)."""
        return dataclasses.replace(self, row=self.store.campaign(self.id))


def no_files(campaign: StoredCampaign) -> dict[str, str]:
    """A kind that writes no file beside its reports."""
    return {}


@dataclass(frozen=True)
class Run:
    """What a kind's run gets from `execute` (orchestrator/kinds/run.py): the stored campaign,
    the open guest pool, where progress goes."""

    campaign: StoredCampaign
    pool: GuestPool
    on_event: OnEvent

    @property
    def store(self) -> Store:
        return self.campaign.store

    @property
    def campaign_id(self) -> int:
        return self.campaign.id

    @property
    def spec(self) -> Any:
        return self.campaign.spec


@dataclass(frozen=True, kw_only=True)
class Kind(Generic[S]):
    """One campaign kind, every path a campaign of it takes, each field named where the kind is
    declared (no field is given by its place) and typed by the kind's spec `S`:

    `name`: the store's `kind` column; `spec`/`result`: its typed spec and answer (each with
    `to_dict`/`from_dict`); `check`: what can be checked before it (re)runs, without building or
    booting; `lab`: its lab file and the host it is pinned to; `notify`: who its campaign file
    names to mail (None: its lab file's list); `progress`: where its progress goes by default
    (the campaign, as_json); `run`: measure to the end on the pool given, store the result,
    and say what to print; `report`: md, html or json; `files`: the files written beside its
    reports (name -> text; a bisection's Reproduce files); `metric`: the metric its counts are
    of; `left`: the dashboard's boots-left estimate of a running one; `file`: the checked spec of a
    campaign file with `kind: <name>` (or one of `aliases`), None when no file starts one."""

    name: str
    spec: type[S]
    result: type[Answer]
    check: Callable[[S], None]
    lab: Callable[[S], tuple[Path | None, str | None]]
    notify: Callable[[S], Notify | None]
    progress: Callable[[StoredCampaign, bool], AbstractContextManager[OnEvent]]
    run: Callable[[Run], str]
    report: Callable[[StoredCampaign, str], str]
    files: Callable[[StoredCampaign], dict[str, str]]
    metric: Callable[[S], str | None]
    left: Callable[[StoredCampaign, list[BootRow]], Estimate]
    file: Callable[[Any, Path], S] | None = None
    aliases: tuple[str, ...] = ()
