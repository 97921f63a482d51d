"""The mail of an ended campaign (orchestrator/notify/message.py), built without a server: the
subject for each way a campaign ends, hostile commit subjects kept inside the subject, long
and non-ASCII lines of a report, the headers a list and a thread need."""

from __future__ import annotations

import datetime as dt
import email
import email.policy

import pytest

from orchestrator.notify.message import MAX_LINE_OCTETS, Ended, build, fold_long_lines, one_line
from orchestrator.results import BisectOutcome, BisectResult, CompareResult, StopKind, Stopped, VerifyResult
from tests.mailparts import attached

NOW = dt.datetime(2026, 11, 25, 6, 30, tzinfo=dt.timezone.utc)
CULPRIT = "0123456789abcdef0123456789abcdef01234567"


def ended(result, subject="", report="# vmbisect campaign nightly: found\n", **kw) -> Ended:  # type: ignore[no-untyped-def]
    state = result.stop.value if isinstance(result, Stopped) else "done"
    return Ended(**{"campaign_id": 12, "name": "nightly-fio", "kind": "bisect", "state": state, "result": result,
                    "culprit_subject": subject, "report": report, "store_key": "abc123", **kw})


def received(e: Ended, to=("perf@example.org",)) -> email.message.EmailMessage:  # type: ignore[no-untyped-def]
    """The message as a reader gets it: flattened to bytes and parsed back."""
    raw = build(e, "vmbisect@lab.example.org", to, NOW).as_bytes()
    return email.message_from_bytes(raw, policy=email.policy.default)  # type: ignore[return-value]


def subject(msg: email.message.EmailMessage) -> str:
    """The subject as RFC 5322 unfolds it: the email package moves a value that fits one line
    of its own to a continuation line (`Subject:` CRLF SP value), which its parser reads back
    with that space in front."""
    return str(msg["Subject"]).lstrip(" ")


FOUND = BisectResult(BisectOutcome.FOUND, culprit=CULPRIT, parent="f" * 40)


@pytest.mark.parametrize("result, subject_line, expected", [
    (FOUND, "blk-mq: do not sleep in the submit path", "[vmbisect] nightly-fio: blk-mq: do not sleep in the submit path"),
    (FOUND, "", "[vmbisect] nightly-fio: culprit 0123456789ab"),
    (Stopped(StopKind.REFUSED, "good v6.1 is not good: 7900 IO/s against bad's 8000", "good_not_good"), "",
     "[vmbisect] nightly-fio: refused: good v6.1 is not good: 7900 IO/s against bad's 8000"),
    (Stopped(StopKind.FAILED, "bad v6.2 does not build: error: expected ';'"), "",
     "[vmbisect] nightly-fio: failed: bad v6.2 does not build: error: expected ';'"),
    (BisectResult(BisectOutcome.INCONCLUSIVE, candidates=("a" * 40, "b" * 40, "c" * 40)), "",
     "[vmbisect] nightly-fio: inconclusive, 3 candidates"),
    (BisectResult(BisectOutcome.ONLY_SKIPPED, candidates=("a" * 40,)), "",
     "[vmbisect] nightly-fio: only skipped commits left, 1 candidate"),
    (VerifyResult(CULPRIT, "f" * 40, "confirmed", ("confirmed: 0123456789ab costs 12.0% read_iops",)), "",
     "[vmbisect] nightly-fio: confirmed: 0123456789ab costs 12.0% read_iops"),
    (CompareResult(("bfq is 25.0% slower than none (significant)",)), "",
     "[vmbisect] nightly-fio: bfq is 25.0% slower than none (significant)"),
])
def test_the_subject_names_the_campaign_and_how_it_ended(result, subject_line, expected):
    assert subject(received(ended(result, subject_line))) == expected


@pytest.mark.parametrize("title", ["sched/fair: Rücksicht auf die Last – 调度 ✓",
                                   "blk-mq: Warteschlange früher prüfen",  # folded between two encoded words
                                   "Ünïcödé " * 30])
def test_a_non_ascii_subject_is_encoded_and_reads_back_whole(title):
    msg = received(ended(FOUND, title))
    assert subject(msg) == f"[vmbisect] nightly-fio: {one_line(title)}"
    raw = build(ended(FOUND, title), "v@example.org", ("a@example.org",), NOW).as_bytes()
    headers = raw.split(b"\r\n\r\n", 1)[0]
    assert headers.isascii() and b"=?utf-8?" in headers, "non-ASCII headers travel as RFC 2047 encoded words"
    assert all(len(line) <= 78 for line in headers.split(b"\r\n"))


@pytest.mark.parametrize("hostile", [
    "fix\r\nBcc: everyone@example.org",
    "fix\nTo: everyone@example.org\n\nbody injected",
    "fix\u2028Bcc: everyone@example.org",
    "fix\x00\x1b[31m red\x85Bcc: x@example.org",
])
def test_a_commit_subject_with_line_breaks_stays_inside_the_subject(hostile):
    msg = received(ended(FOUND, hostile))
    assert msg["Bcc"] is None and msg.get_all("To") == ["perf@example.org"]
    line = subject(msg)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line and "\x00" not in line
    assert "everyone@example.org" in line or "x@example.org" in line
    assert "body injected" not in msg.get_content().split("-" * 72)[0].split("Culprit:")[0]


def test_a_long_subject_is_cut_and_folded_but_keeps_the_campaign_name():
    msg = build(ended(FOUND, "word " * 200), "v@example.org", ("a@example.org",), NOW)
    raw = msg.as_bytes()
    assert all(len(line) <= 78 for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n"))
    line = subject(email.message_from_bytes(raw, policy=email.policy.default))  # type: ignore[arg-type]
    assert line.startswith("[vmbisect] nightly-fio: word word") and line.endswith("...") and len(line) < 240


def test_the_headers_name_sender_recipients_date_thread_and_campaign():
    msg = received(ended(FOUND, "fix"), to=("a@example.org", "list@vger.example.org"))
    assert msg["From"] == "vmbisect@lab.example.org"
    assert msg["To"] == "a@example.org, list@vger.example.org"
    assert msg["Date"] == "Wed, 25 Nov 2026 06:30:00 +0000"
    assert msg["Message-ID"] == "<vmbisect.abc123.12.1@lab.example.org>"
    assert msg["References"] == "<vmbisect.abc123.12@lab.example.org>"
    assert msg["X-Vmbisect-Campaign"] == "12 (nightly-fio, bisect)" and msg["X-Vmbisect-Outcome"] == "found"
    assert msg["Auto-Submitted"] == "auto-generated"
    assert msg.get_content_type() == "text/plain" and msg.get_content_charset() == "utf-8"
    assert not msg.is_multipart(), "no HTML part: a list takes plain text"


def test_each_attempt_has_its_own_message_id_in_the_same_thread():
    first = build(ended(FOUND), "v@example.org", ("a@example.org",), NOW, attempt=1)
    again = build(ended(FOUND), "v@example.org", ("a@example.org",), NOW, attempt=2)
    assert first["Message-ID"] != again["Message-ID"] and first["References"] == again["References"]


def test_the_body_is_the_report_in_8bit_utf8_with_every_line_a_list_accepts():
    long_row = "| 3 | step | " + "ä" * 700 + " |"  # 1,400 octets: over RFC 5322's 998
    report = f"# vmbisect campaign nightly-fio: found\n\n{long_row}\n\n```\nbisect log\n```\n"
    msg = received(ended(FOUND, "Füx", report, attachments=(("config-0123456789ab", "CONFIG_X=y\n"),)))
    raw = msg.as_bytes()
    assert all(len(line) <= MAX_LINE_OCTETS for line in raw.split(b"\n")), "attachments too"
    body = msg.get_body(("plain",))
    assert body["Content-Transfer-Encoding"] == "8bit", "no quoted-printable or base64: readable in any archive"
    text = body.get_content().replace("\r\n", "\n")
    assert text.startswith("vmbisect campaign 12 (nightly-fio, bisect) ended: found.\n\nCulprit: 0123456789ab Füx\n")
    assert "# vmbisect campaign nightly-fio: found" in text and "```\nbisect log\n```" in text
    assert "[A table wider than 78 columns: in the attached report.md]" in text and "ä" not in text.split("Füx")[1]
    files = attached(msg)
    assert files["config-0123456789ab"] == "CONFIG_X=y\n"
    assert files["report.md"].count("ä") == 700, "the whole report is attached, the long line cut, nothing lost"


def test_the_text_part_keeps_to_78_columns_wrapping_prose_under_its_indent():
    words = " ".join(f"word{i}" for i in range(60))
    report = "\n".join(["# title", "", words, "", f"- {words}", "", f"    {words}", "", "```", "x" * 79, "```", ""])
    text = received(ended(FOUND, "s" * 200, report)).get_body(("plain",)).get_content().replace("\r\n", "\n")
    lines = text.split("\n")
    assert max(len(line) for line in lines) <= 78
    assert " ".join(text.split()).count(words) == 3, "the paragraph, list item and indented line wrapped, every word kept"
    assert any(line.startswith("  word") for line in lines), "a list item goes on under its bullet"
    assert all(w in text for w in words.split()) and "[A block wider than 78 columns: in the attached report.md]" in text


def test_a_plain_ascii_report_goes_as_7bit():
    raw = build(ended(Stopped(StopKind.REFUSED, "good is not good")), "v@example.org", ("a@example.org",),
                NOW).as_bytes()
    assert b"Content-Transfer-Encoding: 7bit" in raw and b"Refused: good is not good" in raw


def test_folding_cuts_at_character_boundaries_and_drops_control_characters():
    text = "é" * 600 + "\nshort\r\x07line"
    folded = fold_long_lines(text, 998).split("\n")
    assert [len(x.encode()) for x in folded] == [998, 202, 9] and folded[2] == "shortline"


@pytest.mark.parametrize("report, times", [
    ("# vmbisect campaign nightly: found\n\nWorkers: taken over once (`vmbisect status ID` says from which worker, "
     "when and why)\n", 1),
    ("# vmbisect comparison nightly\n", 1),
])
def test_a_takeover_is_said_once_in_the_mail_whether_or_not_the_report_says_it(report, times):
    text = received(ended(FOUND, report=report, taken_over="taken over once")).get_body(("plain",)).get_content()
    assert text.count("Workers: taken over once") == times
