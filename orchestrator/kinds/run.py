"""The one run path of every campaign kind. `execute`: the campaign resolved once from the
store (orchestrator/kinds/kind.py StoredCampaign) and handed down, its lock in the store (taken
over from a controller on another host only when asked), the pause on the host's faults (state
paused with a typed reason; `vmbisect resume` goes on), the lab's guest pool opened and closed,
the kind's run (orchestrator/kinds/table.py), and at the end the reports and the kind's files
beside them written to the data directory (reports/<name>-<id>.md and .html: the morning view,
the dashboard and the mail point at them) and every hook in END_HOOKS called with the campaign
as it ended. `run_stored` is the same for a queue worker, with cli.main's exit codes.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable

from orchestrator.kinds.kind import OnEvent, Run, StoredCampaign
from orchestrator.kinds.table import open_campaign
from orchestrator.results import STOPS, StopKind, Stopped
from orchestrator.states import running, stop

if TYPE_CHECKING:
    from orchestrator.hosts.labfile import Lab
    from orchestrator.store import Store

EndHook = Callable[[StoredCampaign, "Lab | None"], None]

# Called once a run of a campaign ends as done, refused, failed or paused (the row's state and
# result say which), after its reports are written; a hook that raises is reported on stderr and
# changes nothing else. cli.main wires the mail sender here.
END_HOOKS: list[EndHook] = []
REPORTED = ("done", "refused", "failed")  # states whose reports are written (a paused one goes on)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C while a campaign runs there."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the block as Ctrl-C does (cleanups run, guests are destroyed) when it runs
    in the main thread (a foreground controller); a worker's runner threads are stopped by the
    worker (orchestrator/queue/worker.py)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _pause(store: Store, campaign_id: int, reason: str) -> None:
    try:
        stop(store, campaign_id, Stopped(StopKind.PAUSED, reason))
    except Exception:  # noqa: BLE001 - the store itself may be what failed; the campaign stays running
        pass


@contextmanager
def paused_on_infra_error(store: Store, campaign_id: int, state: str) -> Iterator[None]:
    """The host's fault (libvirt gone, disk full) pauses the campaign (in `state` now) instead
    of failing it: state "paused" with the reason, and `vmbisect resume ID` continues where it
    stopped. So does a controller stopped by SIGTERM or Ctrl-C, whatever it was doing or waiting
    for (a slot, a build, a boot)."""
    from orchestrator.errors import InfraError, host_fault

    if state == "paused":
        running(store, campaign_id)  # the pause's reason is no longer why
    try:
        try:
            with _sigterm_interrupts():
                yield
        except OSError as exc:  # a full disk under the builder, the image cache or a log file
            fault = host_fault(exc)
            if fault is None:
                raise
            raise fault from exc
    except InfraError as exc:
        _pause(store, campaign_id, str(exc))
        raise InfraError(
            f"{exc}; campaign {campaign_id} paused, continue with: vmbisect resume {campaign_id}") from exc
    except KeyboardInterrupt as exc:
        how = "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C (SIGINT)"
        _pause(store, campaign_id, f"its controller was stopped by {how}; continue with: vmbisect resume {campaign_id}")
        raise


def execute(store: Store, campaign_id: int, *, uri: str = "qemu:///system", lab: Lab | None = None,
            on_event: OnEvent | None = None, as_json: bool = False, take_over: bool = False) -> int:
    """Start or go on with the stored campaign `campaign_id`, whatever its kind, to its end:
    checked again, under its lock, paused on the host's faults, on a guest pool of `lab` (a
    queue worker's, hosts/labfile.py lab_for; None: the campaign's own lab file, or this machine at
    `uri`) that is closed afterwards; progress to `on_event` (None: the
    kind's own view, JSON lines with `as_json`). Its reports are written and END_HOOKS called
    once it ends. Raises what went wrong (cli.main maps it to an exit code); 0 when it ran to
    its answer."""
    campaign = open_campaign(store, campaign_id)
    campaign.kind.check(campaign.spec)
    with store.lock(campaign.id, take_over):
        try:
            said = _run(campaign.read_again(), uri, lab, on_event, as_json)  # its state as the lock found it
        finally:
            ended(campaign.read_again(), lab)
    print(said)
    return 0


def _run(campaign: StoredCampaign, uri: str, lab: Lab | None, on_event: OnEvent | None, as_json: bool) -> str:
    """The kind's run of `campaign` on a guest pool opened for it and closed after it, paused on
    the host's faults."""
    from orchestrator import wiring
    from orchestrator.hosts.labfile import lab_from

    row, kind = campaign.row, campaign.kind
    own_lab, host = kind.lab(campaign.spec)
    with paused_on_infra_error(campaign.store, row.id, row.state):
        print(f"vmbisect: campaign {row.id} ({row.name}, {row.kind}); resume with: vmbisect resume {row.id}",
              file=sys.stderr)
        if lab is not None and host is not None:
            lab.host(host)  # the host the campaign is pinned to is one of the lab given
        pool = wiring.open_pool(lab or lab_from(own_lab, host, uri), campaign.store, row.id)
        try:
            view = nullcontext(on_event) if on_event else kind.progress(campaign, as_json)
            with view as events:
                return kind.run(Run(campaign, pool, events))
        finally:
            pool.close()


def run_stored(store: Store, campaign_id: int, *, lab: Lab | None = None, on_event: OnEvent | None = None,
               take_over: bool = False, uri: str = "qemu:///system") -> int:
    """What a queue worker calls: `execute`, with cli.main's exit codes instead of exceptions
    (0 answered; 2 refused or a user error, the campaign's lock held by another live
    controller included; 3 paused on the host's fault; 4 the kernel failed; 130 interrupted),
    the error's one line on stderr."""
    from orchestrator.exits import exit_code

    return exit_code(lambda: execute(store, campaign_id, uri=uri, lab=lab, on_event=on_event, take_over=take_over))


def report_files(row: Any) -> tuple[Path, Path]:
    """Where a campaign's Markdown and HTML reports are written when it ends."""
    from orchestrator import paths

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", row.name).strip("._") or row.kind
    base = paths.data_dir() / "reports" / f"{name}-{row.id}"
    return base.with_suffix(".md"), base.with_suffix(".html")


def ended(campaign: StoredCampaign, lab: Lab | None = None) -> None:
    """After a run on `lab` (a queue worker's; None: the campaign's own): a campaign that ended
    (its row as the run left it) gets its reports written and END_HOOKS called with that lab; one
    still running (interrupted) gets nothing. Neither a report nor a hook that fails hides why
    the campaign ended: each is one line on stderr."""
    state = campaign.row.state
    if state not in STOPS and state != "done":
        return
    if state in REPORTED:
        try:
            write_reports(campaign)
        except Exception as exc:  # noqa: BLE001 - the campaign's end stands; the report is made again by `report`
            print(f"vmbisect: campaign {campaign.id}: no report written: {exc}", file=sys.stderr)
    for hook in END_HOOKS:
        try:
            hook(campaign, lab)
        except Exception as exc:  # noqa: BLE001 - a hook (the mail) failing does not change the campaign
            print(f"vmbisect: campaign {campaign.id}: end hook {getattr(hook, '__name__', hook)}: {exc}",
                  file=sys.stderr)


def write_reports(campaign: StoredCampaign) -> tuple[Path, Path]:
    """The campaign's Markdown and HTML reports, and the kind's files beside them."""
    from orchestrator.report.reproduce import write_files

    md, page = report_files(campaign.row)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(campaign.kind.report(campaign, "md"))
    page.write_text(campaign.kind.report(campaign, "html"))
    write_files(campaign.kind.files(campaign), md.with_suffix(""))
    print(f"vmbisect: reports {md} and {page}", file=sys.stderr)
    return md, page
