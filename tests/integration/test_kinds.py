"""The one run path of every campaign kind (orchestrator/kinds/run.py), on a stored
comparison over fake guests and a real SQLite store: the pool is closed, the reports are
written under the data directory, the end hooks are called, a host fault pauses the campaign
with a typed reason, and `run_stored` answers with cli.main's exit codes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrator import paths, wiring
from orchestrator.cli import _parser, main
from orchestrator.commands.compare import spec_from_args
from orchestrator.errors import InfraError
from orchestrator.kinds import run as kinds
from orchestrator.kinds.table import read_result as read
from orchestrator.kinds.table import record
from orchestrator.results import CompareResult, StopKind, Stopped
from orchestrator.store import Store
from tests.fakes import FakeKernels, FakeMeasurer


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, int, SimpleNamespace, list[int]]:
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"k")
    spec = spec_from_args(_parser().parse_args(["compare", "--workload", "fio", "--disks", "2", "--kernel", str(kernel),
                                                "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                                                "--reps", "2"]))
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    pool = SimpleNamespace(closed=False)
    pool.close = lambda: setattr(pool, "closed", True)
    monkeypatch.setattr(wiring, "open_pool", lambda lab, *_store_and_id: pool)
    ended: list[int] = []
    monkeypatch.setattr(kinds, "END_HOOKS", [lambda campaign, lab: ended.append(campaign.id)])
    return store, record(store, "nightly/scsi", spec), pool, ended


def test_a_stored_campaign_runs_to_its_end_with_its_pool_closed_its_reports_written_and_the_hooks_called(
        stored, monkeypatch, capsys):
    store, cid, pool, ended = stored
    monkeypatch.setattr(wiring, "comparison", lambda plan, pool, host=None: (FakeKernels(), FakeMeasurer()))
    assert kinds.run_stored(store, cid, on_event=lambda e: None) == 0
    row = store.campaign(cid)
    assert row.state == "done" and isinstance(read(row.kind, row.state, row.result), CompareResult)
    md, page = kinds.report_files(row)
    assert md.parent == paths.data_dir() / "reports" and md.name == f"nightly_scsi-{cid}.md"
    assert "bfq" in md.read_text() and page.read_text().startswith("<!DOCTYPE html>")
    assert pool.closed and ended == [cid] and store.lock_owner(cid) is None
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["status", "--since", "1h", "--store", str(store.engine.url)]) == 0
    assert str(md) in capsys.readouterr().out, "the morning view says where the report is"


def test_a_host_fault_pauses_the_campaign_with_a_typed_reason_exit_3_pool_closed_hooks_called(stored, monkeypatch,
                                                                                               capsys):
    store, cid, pool, ended = stored

    def libvirt_gone(plan, pool, host=None):  # type: ignore[no-untyped-def]
        raise InfraError("cannot connect to libvirt: Failed to connect socket")

    monkeypatch.setattr(wiring, "comparison", libvirt_gone)
    assert kinds.run_stored(store, cid, on_event=lambda e: None) == 3
    row = store.campaign(cid)
    assert read(row.kind, row.state, row.result) == Stopped(StopKind.PAUSED, "cannot connect to libvirt: Failed to "
                                                            "connect socket")
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"campaign {cid} paused, continue with: vmbisect resume "
                                                             f"{cid}")
    assert pool.closed and ended == [cid] and store.lock_owner(cid) is None
    assert not kinds.report_files(row)[0].exists(), "a paused campaign goes on; its report comes when it ends"


def test_a_failing_end_hook_is_one_line_and_changes_nothing_else(stored, monkeypatch, capsys):
    store, cid, pool, ended = stored
    monkeypatch.setattr(wiring, "comparison", lambda plan, pool, host=None: (FakeKernels(), FakeMeasurer()))

    def mail_down(_campaign: object, _lab: object) -> None:
        raise OSError("smtp: connection refused")

    monkeypatch.setattr(kinds, "END_HOOKS", [mail_down, lambda campaign, lab: ended.append(campaign.id)])
    assert kinds.run_stored(store, cid, on_event=lambda e: None) == 0
    assert f"vmbisect: campaign {cid}: end hook mail_down: smtp: connection refused" in capsys.readouterr().err
    assert ended == [cid] and store.campaign(cid).state == "done"
