"""`vmbisect status` for pipes and scripts: off a terminal every value is written whole (no
truncation, ellipsis or wrapping), `--format json` parses back to every field, `--format tsv`
is one row a line; `status ID` lays each reason out on a line of its own; a takeover on record
shows in `status ID` and `status --since`."""

from __future__ import annotations

import datetime as dt
import json

from orchestrator.cli import main
from orchestrator.commands.status import ended, listing, one
from orchestrator.decisions import Decided, Role
from orchestrator.queue import takeovers
from orchestrator.queue.rows import now
from orchestrator.results import StopKind, Stopped
from orchestrator.store import QueueRow, Store, WorkerRow
from tests.unit.test_cli import stored_bisection

REASON = "the guest " + "very long reason " * 11 + "end"  # 200 characters, spaces inside
CULPRIT = "d5038a13eca72fb216c07eb717169092e92284f1"


def long_store(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """The finished bisection of test_cli (campaign 1) with a 200-character reason, its report
    under a data directory whose path is long, and a failed campaign (2) with a 200-character
    reason; campaign 1 taken over once, its boot in flight lost."""
    data = tmp_path / ("deep-directory-name-" * 6) / "data"
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(data))
    store, cid = stored_bisection(tmp_path)
    store.add_decision(cid, Decided(CULPRIT, Role.STEP, "bad", REASON, 0.9, 3))
    report = data / "reports" / f"scsi-mq-{cid}.md"
    report.parent.mkdir(parents=True)
    report.write_text("report\n")
    other = store.new_campaign("failing", json.loads(store.campaign(cid).spec))
    store.set_state(other, "failed", Stopped(StopKind.FAILED, REASON).to_dict())
    lost_boot = store.start_boot(cid, CULPRIT)  # in flight when its runner was SIGKILLed
    at = now()
    with store.session() as s, s.begin():
        s.add(QueueRow(campaign_id=cid, worker="m:1/0"))
        s.add(WorkerRow(name="m:1/0", machine="m", pid=1, pid_started="1", last_beat=at - dt.timedelta(seconds=31),
                        timeout_s=20.0))
    with store.session() as s, s.begin():
        took = takeovers.record(s, cid, "m:1/0", "m:2/0", at)
    assert took is not None and [b.boot_id for b in took.lost] == [lost_boot]
    return store, cid, report


def test_status_off_a_terminal_writes_a_200_character_reason_and_a_long_path_whole(tmp_path, capsys, monkeypatch):
    store, cid, report = long_store(tmp_path, monkeypatch)
    url = f"sqlite:///{tmp_path / 'v.db'}"
    assert len(REASON) == 200 and len(str(report)) > 150
    for argv, whole in ((["status"], REASON), (["status", str(cid)], f"    reason: {REASON}"),
                        (["status", "--since", "1h"], str(report))):
        capsys.readouterr()
        assert main([*argv, "--store", url]) == 0
        out = capsys.readouterr().out
        assert whole in out.splitlines() or any(whole in line for line in out.splitlines()), (argv, out)
        assert "…" not in out, out


def test_status_of_a_campaign_taken_over_says_from_whom_why_and_the_boot_lost(tmp_path, capsys, monkeypatch):
    store, cid, _ = long_store(tmp_path, monkeypatch)
    assert main(["status", str(cid), "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    out = capsys.readouterr().out
    assert "taken over: taken over once; 1 boot lost" in out
    line = next(x for x in out.splitlines() if " taken over by " in x)
    assert "by m:2/0 from m:1/0 on m: heartbeat lost (silent 31 s, timeout 20 s)" in line, line
    lost = takeovers.of(store, cid)[0].lost[0].boot_id
    assert f"lost: boot {lost} of {CULPRIT[:12]} (0 runs stored)" in line, line
    assert ended(store, dt.timedelta(hours=1))[0]["takeovers"] == "taken over once; 1 boot lost"


def test_status_json_parses_back_to_every_field_of_each_view(tmp_path, capsys, monkeypatch):
    store, cid, _ = long_store(tmp_path, monkeypatch)
    url = f"sqlite:///{tmp_path / 'v.db'}"
    for argv, expected in ((["status"], listing(store)), (["status", "--since", "1h"], ended(store, dt.timedelta(hours=1))),
                           (["status", str(cid)], one(store, cid))):
        capsys.readouterr()
        assert main([*argv, "--format", "json", "--store", url]) == 0
        assert json.loads(capsys.readouterr().out) == expected, argv
    took = one(store, cid)["takeovers"]
    assert len(took) == 1 and takeovers.Takeover.from_dict(took[0]) == takeovers.of(store, cid)[0]


def test_status_tsv_is_one_row_a_line_with_tabs_and_newlines_escaped(tmp_path, capsys, monkeypatch):
    store, cid, _ = long_store(tmp_path, monkeypatch)
    store.set_state(2, "failed", Stopped(StopKind.FAILED, "a\tb\nc").to_dict())
    assert main(["status", "--format", "tsv", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and {len(x.split("\t")) for x in lines} == {9}
    assert "a\\tb\\nc" in lines[2]


def test_status_of_one_campaign_refuses_tsv_in_one_line(tmp_path, capsys, monkeypatch):
    long_store(tmp_path, monkeypatch)
    assert main(["status", "1", "--format", "tsv", "--store", f"sqlite:///{tmp_path / 'v.db'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vmbisect: --format: ") and err.count("\n") == 1, err


def test_a_takeover_is_not_recorded_while_the_previous_runner_still_beats(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("x", {})
    with store.session() as s, s.begin():
        s.add(WorkerRow(name="m:1/0", machine="m", pid=1, pid_started="1", last_beat=now(), timeout_s=20.0))
    with store.session() as s, s.begin():
        assert takeovers.record(s, cid, "m:1/0", "m:2/0", now()) is None
    assert takeovers.of(store, cid) == [] and takeovers.summary([]) == ""


def test_a_table_off_a_terminal_pads_its_columns_and_cuts_no_value():
    import io

    from orchestrator.commands.listing import write_table

    out = io.StringIO()  # not a terminal
    long = "/x" * 150
    write_table("t", ("a", "b"), [{"a": long, "b": "[red]1[/red]"}, {"a": "2", "b": None}], "table", out)
    assert out.getvalue().splitlines() == ["t", "a" + " " * 299 + "  b", f"{long}  [red]1[/red]", "2" + " " * 299 + "  -"]


def test_a_runner_of_this_machine_whose_process_is_gone_is_taken_over_before_its_heartbeat_times_out(tmp_path):
    import socket

    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("x", {})
    at = now()
    with store.session() as s, s.begin():  # pid 1's start time is never this
        s.add(WorkerRow(name="m:1/0", machine=socket.gethostname(), pid=1, pid_started="-1",
                        last_beat=at - dt.timedelta(seconds=5), timeout_s=20.0))
    with store.session() as s, s.begin():
        took = takeovers.record(s, cid, "m:1/0", "m:2/0", at)
    assert took is not None and (took.why, took.silent_s, took.timeout_s) == (takeovers.TakeoverCause.PROCESS_GONE, 5.0, 20.0)
    assert "its process is gone (silent 5 s, timeout 20 s)" in takeovers.line(took)
