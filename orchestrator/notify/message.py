"""An ended campaign -> the mail that says so: pure, no clock, no network (the caller gives the
time and the attempt). Plain text a maintainer can forward to a list: the campaign's Markdown
report as the body, reflowed to 78 columns (prose wrapped; a table or code block wider than
that is left to the attached report.md, the whole report), UTF-8 (8bit, no quoted-printable,
no base64, no HTML part), no line over RFC 5322's 998 octets; the report's files (the
culprit's .config, the campaign file) attached as text; the subject names the campaign and its answer
(`[vmbisect] <name>: <culprit's subject line>`, `[vmbisect] <name>: refused: <why>`), folded
and RFC 2047-encoded by the email package, with every control character of a commit subject or
a reason flattened to a space first (no header can be injected). Message-ID is unique per
attempt; References names the campaign's thread, X-Vmbisect-Campaign its id."""

from __future__ import annotations

import datetime as dt
import re
import textwrap
import unicodedata
from dataclasses import dataclass
from email.header import Header
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import format_datetime

from orchestrator.results import Result

WIDTH = 78  # columns of the text part (RFC 5322 2.1.1's recommendation)
REPORT_FILE = "report.md"
MAX_SUBJECT = 120  # characters of the answer in the subject; the body has all of it
MAX_LINE_OCTETS = 998  # RFC 5322 2.1.1, without CRLF
# C0 and C1 controls, DEL, and Unicode's own line and paragraph separators: none may reach a header.
_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u0085]+")


class _Policy(EmailPolicy):
    """email.policy.SMTP (CRLF line ends, headers folded at 78), except that a non-ASCII header
    value is encoded whole by email.header.Header: Python 3.11's folder drops the space between
    two encoded words it splits a line at (`früher prüfen` arrives as `früherprüfen`)."""

    def fold(self, name: str, value: str) -> str:
        return self._encoded(name, value) or super().fold(name, value)

    def fold_binary(self, name: str, value: str) -> bytes:
        encoded = self._encoded(name, value)
        return encoded.encode("ascii") if encoded else super().fold_binary(name, value)

    def _encoded(self, name: str, value: str) -> str:
        if str(value).isascii():
            return ""
        words = Header(str(value), "utf-8", header_name=name).encode(linesep=self.linesep,
                                                                      maxlinelen=self.max_line_length)
        return f"{name}: {words}{self.linesep}"


POLICY = _Policy(linesep="\r\n")


@dataclass(frozen=True)
class Ended:
    """What the mail says of a campaign that ended: its id, name, kind and state, its typed
    result, the culprit's subject line ("" unless a bisection found one), the Markdown report
    ("" when none could be made), the files that go with it, and the store's key (Store.key: two
    stores' campaign 7 are different campaigns)."""

    campaign_id: int
    name: str
    kind: str
    state: str
    result: Result | None
    culprit_subject: str = ""
    report: str = ""
    attachments: tuple[tuple[str, str], ...] = ()  # (file name, text): the files of the report's Reproduce section
    store_key: str = "local"
    taken_over: str = ""  # orchestrator/queue/takeovers.py summary ("" never taken over)


def one_line(text: str, limit: int = MAX_SUBJECT) -> str:
    """Text for a header: line breaks and control characters as single spaces, trimmed to `limit`."""
    flat = " ".join(_BREAKS.sub(" ", unicodedata.normalize("NFC", text)).split())
    return flat if len(flat) <= limit else flat[:limit - 3].rstrip() + "..."


def answer(e: Ended) -> str:
    """The campaign's answer in a few words: the culprit's subject, why it stopped, the outcome."""
    r = e.result
    if r is None:
        return e.state
    return (e.culprit_subject or r.words(e.state)) if r.named_commit() else r.words(e.state)


def subject(e: Ended) -> str:
    return f"[vmbisect] {one_line(e.name, 64)}: {one_line(answer(e))}"


def _outcome(e: Ended) -> str:
    return e.result.outcome_word(e.state) if e.result is not None else e.state


def body(e: Ended) -> str:
    """A few lines of what ended and what is attached, then the Markdown report, reflowed to WIDTH."""
    head = [f"vmbisect campaign {e.campaign_id} ({e.name}, {e.kind}) ended: {_outcome(e)}.", ""]
    named = e.result.named_commit() if e.result is not None else ""
    why = e.result.why() if e.result is not None else ""
    if named:
        head += [f"Culprit: {named[:12]} {one_line(e.culprit_subject, 900)}".rstrip(), ""]
        steps = e.result.regression_steps() if e.result is not None else ()
        head += [*steps, ""] if steps else []
    elif why:
        head += [why, ""]
    if e.taken_over and f"Workers: {e.taken_over}" not in e.report:  # said once: a bisection's report has it
        head += [f"Workers: {e.taken_over} (`vmbisect status {e.campaign_id}` says from which, when, why).", ""]
    attached = [name for name, _ in attachments(e)]
    if attached:
        head += ["Attached: " + ", ".join(attached) + ".", ""]
    report = e.report or f"No report could be made; `vmbisect report {e.campaign_id}` says why."
    text = "\n".join([reflow("\n".join(head))[0], "-" * 72, "", reflow(report.rstrip("\n"))[0], ""])
    return "\n".join([text, "-- ", *_wrap(f"Sent by vmbisect when campaign {e.campaign_id} ended; on the controller, "
                                         f"`vmbisect report {e.campaign_id}` shows it again."), ""])


def attachments(e: Ended) -> tuple[tuple[str, str], ...]:
    """The files the mail carries: the whole report when its text part had to leave a table or
    block out, then the files of its Reproduce section."""
    moved = bool(e.report) and reflow(e.report)[1]
    return ((REPORT_FILE, e.report),) * moved + e.attachments


def _wrap(text: str, indent: str = "", hang: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + hang,
                         break_on_hyphens=False) or [indent.rstrip()]


def _block(block: list[str], what: str) -> tuple[list[str], bool]:
    """A table or code block as it is when it fits, else a line saying where it is (and True)."""
    if all(len(line) <= WIDTH for line in block):
        return block, False
    return _wrap(f"[{what} wider than {WIDTH} columns: in the attached {REPORT_FILE}]"), True


def reflow(markdown: str) -> tuple[str, bool]:
    """Markdown text with no line over WIDTH columns: paragraphs and list items wrapped, an
    indented line (a commit, a command) wrapped under its indent, a table or fenced block that
    does not fit replaced by a line naming the attachment that has it (then True)."""
    out: list[str] = []
    moved = False
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines) - 1)
            kept, left = _block(lines[i:end + 1], "A block")
            out, moved = out + kept, moved or left
            i = end + 1
            continue
        if line.startswith("|"):
            end = next((j for j in range(i, len(lines)) if not lines[j].startswith("|")), len(lines))
            kept, left = _block(lines[i:end], "A table")
            out, moved = out + kept, moved or left
            i = end
            continue
        if len(line) <= WIDTH:
            out.append(line)
        else:
            indent = line[:len(line) - len(line.lstrip())]
            bullet = re.match(r"[-*] |\d+\. ", line.lstrip())
            out += _wrap(line.strip(), indent, " " * len(bullet.group(0)) if bullet else "  " if indent else "")
        i += 1
    return "\n".join(out), moved


def fold_long_lines(text: str, limit: int = MAX_LINE_OCTETS) -> str:
    """Every line at most `limit` UTF-8 octets: a longer one (a table row of a huge reason) is
    cut at character boundaries into several. Carriage returns and other controls but tab go."""
    out: list[str] = []
    for line in text.split("\n"):
        line = re.sub("[\x00-\x08\x0b-\x1f\x7f]", "", line)
        while len(line.encode("utf-8")) > limit:
            cut = limit
            while len(line[:cut].encode("utf-8")) > limit:
                cut -= 1
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return "\n".join(out)


def message_id(e: Ended, domain: str, attempt: int) -> str:
    return f"<vmbisect.{e.store_key}.{e.campaign_id}.{attempt}@{domain}>"


def thread_id(e: Ended, domain: str) -> str:
    """The campaign's thread: every mail of it (a resend) refers to it."""
    return f"<vmbisect.{e.store_key}.{e.campaign_id}@{domain}>"


def build(e: Ended, sender: str, to: tuple[str, ...], now: dt.datetime, attempt: int = 1) -> EmailMessage:
    """The mail of ended campaign `e` from `sender` to `to`, dated `now` (timezone-aware), the
    `attempt`-th made for it (a Message-ID of its own)."""
    domain = sender.rpartition("@")[2] or "localhost"
    msg = EmailMessage(policy=POLICY)
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    msg["Subject"] = subject(e)
    msg["Date"] = format_datetime(now)
    msg["Message-ID"] = message_id(e, domain, attempt)
    msg["References"] = thread_id(e, domain)
    msg["X-Vmbisect-Campaign"] = f"{e.campaign_id} ({one_line(e.name, 64)}, {e.kind})"
    msg["X-Vmbisect-Outcome"] = _outcome(e)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: no vacation replies to a robot
    text = fold_long_lines(body(e))
    msg.set_content(text, subtype="plain", charset="utf-8", cte="7bit" if text.isascii() else "8bit")
    for name, content in attachments(e):
        if name.endswith(".sh"):  # byte for byte (base64): the saved file runs as it is, LF line ends
            msg.add_attachment(content.encode("utf-8"), maintype="application", subtype="x-sh", filename=name)
            continue
        content = fold_long_lines(content)
        msg.add_attachment(content, subtype="markdown" if name.endswith(".md") else "plain", charset="utf-8",
                           cte="7bit" if content.isascii() else "8bit", filename=name)
    return msg
