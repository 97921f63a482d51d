"""`vmbisect submit` and `vmbisect worker` at the command line, and the queue's cancel and
requeue (orchestrator/queue/state.py), on SQLite with real git: a refused file is one line
and queues nothing (the whole submission is refused), a SQLite store refuses a worker while a
worker of another machine beats in it, a running campaign cancelled stops before its next boot
and leaves no guest."""

from __future__ import annotations

import os
import random
import signal
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.errors import UserError
from orchestrator.queue.rows import now
from orchestrator.queue.state import cancel, lab_state, requeue
from orchestrator.store import Store, WorkerRow
from tests.queueharness import campaigns, lab_file, spawn_worker, wait_for_boots


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("VMBISECT_LEASE_TTL_S", "2")
    return f"sqlite:///{tmp_path / 'v.db'}", lab_file(tmp_path / "lab.yaml", slots=1)


def running(url: str, lab: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
            seed: int) -> tuple[int, Path, BaseProcess]:
    """A campaign submitted and a worker running it, three boots in: its id, the watch
    directory, the worker's process. Each boot lasts 0.3 s: a fake campaign of fast boots could
    end before the test stops it (one did: done where it should have been queued again)."""
    made = campaigns(tmp_path, 1, random.Random(seed))
    assert main(["submit", str(made.files[0]), "--store", url]) == 0
    cid = int(capsys.readouterr().out.split()[1])
    watch = tmp_path / "watch"
    proc = spawn_worker(url, lab, watch, tmp_path / "data", 3.0, pace_s=0.3)
    wait_for_boots(watch, proc, 3)
    return cid, watch, proc


def test_a_refused_file_is_one_line_naming_it_and_nothing_of_the_submission_is_queued(env, tmp_path, capsys):
    url, _lab = env
    made = campaigns(tmp_path, 2, random.Random(1))
    bad = tmp_path / "bad.yaml"
    bad.write_text(made.files[1].read_text().replace("threshold: -5%", "threshold: +5%"))
    assert main(["submit", str(made.files[0]), str(bad), "--store", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (len(err) == 1 and err[0].startswith(f"vmbisect: {bad}: metric.threshold")
            and err[0].endswith("; nothing was submitted")), err
    assert Store(url).campaigns() == [] and lab_state(Store(url)).queue == []


def test_submit_refuses_an_unknown_revision_and_a_priority_out_of_range_before_recording(env, tmp_path, capsys):
    url, _lab = env
    made = campaigns(tmp_path, 1, random.Random(2))
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(made.files[0].read_text().replace("good: ", "good: nosuchtag #"))
    assert main(["submit", str(wrong), "--store", url]) == 2
    assert "good: 'nosuchtag' is not a commit in" in capsys.readouterr().err
    assert main(["submit", str(made.files[0]), "--priority", "100000", "--store", url]) == 2
    assert "--priority" in capsys.readouterr().err
    assert Store(url).campaigns() == []


def test_a_sqlite_store_refuses_a_worker_while_a_worker_of_another_machine_beats_in_it(env, capsys):
    url, lab = env
    store = Store(url)
    with store.session() as s, s.begin():
        s.add(WorkerRow(name="far:1/0", machine="far-away", pid=1, pid_started="1", last_beat=now(), timeout_s=60))
    assert main(["worker", "--lab", str(lab), "--once", "--store", url]) == 2
    err = capsys.readouterr().err
    assert "is SQLite, one machine's store, and worker far:1/0 on machine far-away uses it" in err
    assert "postgresql://" in err and len(err.strip().splitlines()) == 1


def test_cancel_and_requeue_say_in_one_line_when_a_campaign_is_not_theirs_to_change(env):
    url, _lab = env
    store = Store(url)
    done = store.new_campaign("d", {})
    store.set_state(done, "done")
    with pytest.raises(UserError, match=f"campaign {done} is done; only a queued, running or paused one"):
        cancel(store, done)
    with pytest.raises(UserError, match=f"campaign {done} is done; only a paused, failed or cancelled one"):
        requeue(store, done)
    with pytest.raises(UserError, match="no campaign with id 999"):
        cancel(store, 999)
    foreground = store.new_campaign("f", {})  # `vmbisect bisect`: running, never queued
    with pytest.raises(UserError, match="runs in the foreground .* stop it with Ctrl-C where it runs"):
        cancel(store, foreground)


def test_a_running_campaign_cancelled_stops_before_its_next_boot_leaves_no_guest_and_can_be_queued_again(
        env, tmp_path, capsys):
    url, lab = env
    cid, watch, proc = running(url, lab, tmp_path, capsys, seed=4)
    store = Store(url)
    assert [(q.state, q.worker is not None) for q in lab_state(store).queue] == [("running", True)]
    cancel(store, cid)
    proc.join(60)
    assert proc.exitcode == 0, "the worker had nothing left (--once)"
    log = next(watch.glob("worker-*.log")).read_text()
    assert f"campaign {cid} stopped before its next boot: cancelled" in log
    assert f"campaign {cid} ended: cancelled" in log
    assert list((watch / "guests").iterdir()) == [], "no guest left"
    assert store.campaign(cid).state == "cancelled"
    assert all(s.owner is None for s in lab_state(store).slots), "its slot given back"
    boots_before = len(store.boots(cid))
    requeue(store, cid)
    assert [q.state for q in lab_state(store).queue] == ["queued"]
    proc = spawn_worker(url, lab, watch, tmp_path / "data", 3.0)
    proc.join(120)
    assert store.campaign(cid).state == "done"
    assert len(store.boots(cid)) > boots_before, "it went on from what it had measured"


def test_a_worker_told_to_stop_queues_its_campaign_again_at_a_boot_boundary_and_the_next_finishes_it(
        env, tmp_path, capsys):
    url, lab = env
    cid, watch, proc = running(url, lab, tmp_path, capsys, seed=6)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGINT)  # what the command's SIGTERM handler turns SIGTERM into
    proc.join(60)
    assert proc.exitcode == 0
    store = Store(url)
    assert [(q.state, q.worker) for q in lab_state(store).queue] == [("queued", None)]
    assert list((watch / "guests").iterdir()) == [] and store.lock_owner(cid) is None
    assert "stopped at a boot boundary and queued again" in next(watch.glob("worker-*.log")).read_text()
    proc = spawn_worker(url, lab, watch, tmp_path / "data", 3.0)
    proc.join(120)
    assert store.campaign(cid).state == "done"


def test_a_settings_file_is_queued_as_its_kind_and_the_cli_cancels_and_requeues_with_the_morning_view_saying_how(
        env, tmp_path, capsys, monkeypatch):
    from tests.integration.test_setbisect_kind import settings_file

    monkeypatch.setenv("COLUMNS", "200")  # the morning view's table on one line a row
    url, _lab = env
    path, _raw = settings_file(tmp_path)
    assert main(["submit", str(path), "--store", url]) == 0
    assert capsys.readouterr().out.startswith("campaign 1 (sched, settings) queued, priority 0")
    assert [(q.campaign_id, q.kind, q.state) for q in lab_state(Store(url)).queue] == [(1, "settings", "queued")]
    assert main(["cancel", "1", "--store", url]) == 0
    assert Store(url).campaign(1).state == "cancelled"
    capsys.readouterr()
    assert main(["status", "--since", "1h", "--store", url]) == 0
    morning = capsys.readouterr().out
    assert "cancelled" in morning and "vmbisect requeue 1" in morning, morning
    assert main(["cancel", "1", "--store", url]) == 2
    assert "campaign 1 is cancelled; only a queued, running or paused one" in capsys.readouterr().err
    assert main(["requeue", "1", "--store", url]) == 0
    assert Store(url).campaign(1).state == "queued"
    assert main(["cancel", "x", "--store", url]) == 2
    assert "expected a campaign id" in capsys.readouterr().err
