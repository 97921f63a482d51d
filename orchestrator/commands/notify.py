"""`vmbisect notify [ID ...] [--again]`: mail the campaigns that ended (docs/mail.md), and
`on_end`, the end hook (kinds/run.py END_HOOKS; cli.main registers it) that mails a
campaign once it ends as done, refused or failed (not paused: it goes on).

Exactly once: the store keeps each campaign's mail (Store.claim_mail); a campaign run again
after its mail was sent is not mailed again, and a mail that failed (the server down) is sent
at the next campaign's end, or by `vmbisect notify` (every failed one; or the campaigns named).
A mail that fails never fails its campaign: one line on stderr naming the server and why."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.commands.argtypes import campaign_id
from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import InfraError, UserError, VmbisectError

if TYPE_CHECKING:
    from email.message import EmailMessage

    from orchestrator.hosts.labfile import Lab
    from orchestrator.kinds.kind import StoredCampaign
    from orchestrator.notify.config import Smtp
    from orchestrator.notify.message import Ended
    from orchestrator.store import Store


# A mail that failed this often (an address every server refuses) is no longer tried at each
# campaign's end; `vmbisect notify` still tries it.
RETRIES_AT_ENDS = 10


def add_parser(sub: Any) -> None:
    p = sub.add_parser("notify", help="mail the report of ended campaigns (the ones whose mail failed by default)")
    p.add_argument("ids", metavar="ID", nargs="*", type=campaign_id,
                   help="campaigns to mail if not mailed yet (default: every one whose mail failed)")
    p.add_argument("--again", action="store_true", help="mail the named campaigns again, even if mailed before")
    add_store_option(p)


def run(a: argparse.Namespace) -> int:
    from orchestrator.kinds.run import REPORTED
    from orchestrator.kinds.table import open_campaign
    from orchestrator.store import Store

    store = Store(a.store)
    if a.again and not a.ids:
        raise UserError("--again: name the campaigns to mail again (vmbisect notify ID --again)")
    for cid in a.ids:
        campaign = open_campaign(store, cid)
        if campaign.row.state not in REPORTED:
            raise UserError(f"id: campaign {cid} is {campaign.row.state}; it is mailed when it ends "
                            f"({', '.join(REPORTED)})")
        if not recipients_of(campaign):
            raise UserError(f"notify: campaign {cid} names no one to mail and its lab file has no notify: "
                            "(docs/mail.md)")
    ids = a.ids or store.unsent_mails()
    failed = mail(store, ids, again=a.again)
    for cid in a.ids:
        sent = store.mail(cid)
        if sent is not None and sent.state == "sent" and cid not in failed:
            print(f"campaign {cid}: mailed {sent.updated:%Y-%m-%d %H:%M} UTC to {sent.recipients}: {sent.subject} "
                  f"(Message-ID {sent.message_id})")
    if not ids:
        print("no mail waits to be sent")
    if failed:
        raise InfraError(f"mail of campaign{'s' if len(failed) > 1 else ''} {', '.join(map(str, failed))} not sent; "
                         "see above")
    return 0


def on_end(campaign: StoredCampaign, lab: Lab | None = None) -> None:
    """The end hook: mail the campaign that ended (done, refused or failed) on `lab` (a queue
    worker's, whose `notify:` serves the campaigns without their own), and every mail that failed
    before (the server is likely back), up to RETRIES_AT_ENDS attempts each."""
    from orchestrator.kinds.run import REPORTED

    if campaign.row.state not in REPORTED:
        return
    store = campaign.store
    mail(store, [campaign, *(c for c in store.unsent_mails(below=RETRIES_AT_ENDS) if c != campaign.id)], lab=lab)


def recipients_of(campaign: StoredCampaign, lab: Lab | None = None) -> tuple[str, ...]:
    """The campaign file's `notify:` list, or else its lab file's (a comparison has no campaign
    file: its lab's), or else the `notify:` of `lab`, the lab a queue worker ran it on; failing
    all of them, whom an earlier attempt of its mail was addressed to (a worker's lab is not
    known to `vmbisect notify`, which retries it)."""
    from orchestrator.hosts.labfile import load_lab
    from orchestrator.notify.recipients import recipients

    spec, kind = campaign.spec, campaign.kind
    lab_file, _host = kind.lab(spec)
    lab_notify = load_lab(lab_file).notify if lab_file is not None else lab.notify if lab is not None else None
    chosen = recipients(kind.notify(spec), lab_notify)
    if chosen:
        return chosen
    earlier = campaign.store.mail(campaign.id)
    return tuple(a for a in earlier.recipients.split(", ") if a) if earlier is not None else ()


def ended_of(campaign: StoredCampaign) -> Ended:
    """What the mail says of the campaign: its result, the culprit's subject line (read from
    git as it is, nothing cloned), the Markdown report `execute` wrote (or made now), the files
    written beside it and its takeovers."""
    from orchestrator.kinds.run import report_files
    from orchestrator.kinds.table import result_of
    from orchestrator.notify.message import Ended
    from orchestrator.queue import takeovers

    store, row = campaign.store, campaign.row
    result = result_of(row)
    files = report_files(row)
    try:
        text = files[0].read_text(encoding="utf-8") if files[0].exists() else campaign.kind.report(campaign, "md")
    except Exception as exc:  # noqa: BLE001 - the mail goes without its report; the body says so
        print(f"vmbisect: campaign {row.id}: the mail goes without its report: {exc}", file=sys.stderr)
        text = ""
    named = result.named_commit() if result is not None else ""
    subject = _commit_subject(campaign, named) if named else ""
    return Ended(row.id, row.name, row.kind, row.state, result, subject, text,
                 tuple(sorted(campaign.kind.files(campaign).items())) if text else (), store.key,
                 takeovers.summary(takeovers.of(store, row.id)))


def _commit_subject(campaign: StoredCampaign, commit: str) -> str:
    """The commit's subject line, read from the campaign's clone or its repository as they are
    ("" when git cannot say)."""
    try:
        return campaign.clone().subject(commit)
    except Exception as exc:  # noqa: BLE001 - the subject then names the commit's hash instead
        print(f"vmbisect: campaign {campaign.id}: no subject line for {commit[:12]}: {exc}", file=sys.stderr)
        return ""


def mail(store: Store, ids: Sequence[int | StoredCampaign], again: bool = False, lab: Lab | None = None) -> list[int]:
    """Mail each campaign of `ids` (an id, or a campaign already read) not mailed yet (or
    `again`) that names someone (recipients_of, with the lab it ran on), in one SMTP session; the
    ids whose mail failed (each said in one line on stderr, and kept to retry)."""
    from orchestrator.kinds.table import open_campaign
    from orchestrator.notify.config import load_smtp
    from orchestrator.notify.message import build
    from orchestrator.notify.smtp import MailError, send

    claimed: list[tuple[int, EmailMessage]] = []
    failed: list[int] = []
    smtp: Smtp | None = None  # the config file is read once a campaign names someone to mail
    for one in ids:
        cid = one if isinstance(one, int) else one.id
        try:
            campaign = open_campaign(store, one) if isinstance(one, int) else one
            to = recipients_of(campaign, lab)
            attempt = store.claim_mail(cid, ", ".join(to), again) if to else None
        except VmbisectError as exc:  # one campaign's stored spec, lab file or store row does not stop the others
            _say(cid, f"mail not sent: {exc}")
            failed.append(cid)
            continue
        if attempt is None:
            continue
        try:
            smtp = smtp or load_smtp() or _no_settings()
            ended = ended_of(campaign)
            claimed.append((cid, build(ended, smtp.sender, to, dt.datetime.now(dt.timezone.utc), attempt)))
        except Exception as exc:  # noqa: BLE001 - kept as failed, sent again at the next end
            store.mail_failed(cid, str(exc))
            _say(cid, f"mail not sent: {exc}")
            failed.append(cid)
    if not claimed or smtp is None:
        return failed
    done: set[int] = set()

    def sent(i: int) -> None:
        cid, msg = claimed[i]
        store.mail_sent(cid, str(msg["Message-ID"]), str(msg["Subject"]))
        done.add(cid)
        _say(cid, f"mailed to {msg['To']} ({msg['Message-ID']})")

    try:
        send(smtp, [m for _c, m in claimed], sent)
    except MailError as exc:
        for cid, _msg in claimed:
            if cid not in done:
                store.mail_failed(cid, str(exc))
                _say(cid, f"mail not sent: {exc}; sent again when a campaign ends, or by: vmbisect notify")
                failed.append(cid)
    finally:
        for cid, _msg in claimed:  # interrupted mid-send: failed, so the next end sends it
            if cid not in done and cid not in failed:
                store.mail_failed(cid, "interrupted while sending")
    return failed


def _no_settings() -> Smtp:
    from orchestrator.notify.config import config_path

    raise UserError(f"smtp: no SMTP settings; write an smtp: section in {config_path()} (docs/mail.md)")


def _say(campaign_id: int, text: str) -> None:
    print(f"vmbisect: campaign {campaign_id}: {text}", file=sys.stderr, flush=True)
