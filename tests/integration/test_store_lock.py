"""One controller per campaign: the lock row in the store, on SQLite and on a real PostgreSQL.
A second controller (a real other process) is refused naming the owner; a SIGKILLed owner's
lock is stale and taken over; a lock from another host is only taken over when asked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.store import CampaignLocked, LockRow, Store
from tests.integration.gitrepo import Repo

HOLDER = """
import sys, time
from orchestrator.store import Store
store = Store(sys.argv[1])
store.acquire(int(sys.argv[2]))
print("locked", flush=True)
time.sleep(600)
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'v.db'}"
    return request.getfixturevalue("postgres_url")


def hold_in_another_process(url: str, campaign_id: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, url, str(campaign_id)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_controller_is_refused_and_a_killed_owners_lock_is_taken_over(url):
    store = Store(url)
    cid = store.new_campaign("locked", {})
    holder = hold_in_another_process(url, cid)
    try:
        with pytest.raises(CampaignLocked, match=rf"campaign {cid} is being run by pid {holder.pid} on this host$"):
            store.acquire(cid)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with store.lock(cid) as me:
        assert store.lock_owner(cid) == me and me.pid == os.getpid()
    assert store.lock_owner(cid) is None


def test_a_lock_held_from_another_host_is_taken_only_when_asked(url):
    store = Store(url)
    cid = store.new_campaign("remote", {})
    with store._session() as s, s.begin():
        s.add(LockRow(campaign_id=cid, host="lab-7", pid=4242, pid_started="1"))
    with pytest.raises(CampaignLocked, match="pid 4242 on host lab-7; if it is gone, resume with --take-over"):
        store.acquire(cid)
    me = store.acquire(cid, take_over=True)
    assert store.lock_owner(cid) == me
    store.release(cid, me)


def test_resume_of_a_campaign_another_controller_runs_is_one_line_exit_2(tmp_path, capsys):
    repo = Repo(tmp_path / "linux")
    good, bad = repo.commit("one"), repo.commit("two")
    url = f"sqlite:///{tmp_path / 'v.db'}"
    store = Store(url)
    cid = store.new_campaign("busy", {"name": "busy", "repository": str(repo.path), "good": good, "bad": bad,
                                      "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1}},
                                      "metric": {"name": "read_iops", "threshold": "-10%"},
                                      "guest": {"disks": {"count": 1}}})
    holder = hold_in_another_process(url, cid)
    try:
        started = time.monotonic()
        assert main(["resume", str(cid), "--store", url]) == 2
        err = capsys.readouterr().err
        assert err == f"vmbisect: id: campaign {cid} is being run by pid {holder.pid} on this host\n"
        assert time.monotonic() - started < 30
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_an_infrastructure_error_pauses_the_campaign_and_resume_continues_it(tmp_path, capsys, monkeypatch):
    from orchestrator import wiring
    from orchestrator.errors import InfraError

    repo = Repo(tmp_path / "linux")
    good, bad = repo.commit("one"), repo.commit("two")
    url = f"sqlite:///{tmp_path / 'v.db'}"
    cid = Store(url).new_campaign("paused", {"name": "paused", "repository": str(repo.path), "good": good,
                                             "bad": bad, "workload": {"name": "fio", "params": {"rw": "randread"}},
                                             "metric": {"name": "read_iops", "threshold": "-10%"},
                                             "guest": {"disks": {"count": 1}}})

    def libvirt_gone(*_a, **_k):
        raise InfraError("cannot connect to libvirt at qemu:///system: Failed to connect socket")

    monkeypatch.setattr(wiring, "run_campaign", libvirt_gone)
    assert main(["resume", str(cid), "--store", url, "--json"]) == 3
    assert capsys.readouterr().err.splitlines()[-1] == (
        "vmbisect: cannot connect to libvirt at qemu:///system: Failed to connect socket; "
        f"campaign {cid} paused, continue with: vmbisect resume {cid}")
    row = Store(url).campaign(cid)
    assert row.state == "paused" and "Failed to connect socket" in row.result["reason"]
    assert Store(url).lock_owner(cid) is None

    seen = []
    monkeypatch.setattr(wiring, "run_campaign", lambda *a, **k: seen.append(Store(url).campaign(cid).state) or (
        _ for _ in ()).throw(InfraError("again")))
    assert main(["resume", str(cid), "--store", url, "--json"]) == 3
    assert seen == ["running"], "resume of a paused campaign runs it again"
