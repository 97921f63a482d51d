"""Slots of a lab leased in the store (orchestrator/queue/leases.py) through the real GuestPool:
pools in several processes never hold one host CPU at once (PostgreSQL and SQLite); a freed
slot goes to the longest-waiting campaign of the highest priority; a killed holder's slot is
free again once its lease expires; a cancelled campaign's pool is refused its next slot; the
dashboard's view shows who holds what."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from multiprocessing import get_context
from pathlib import Path

import pytest

from orchestrator.hosts.labfile import Lab, load_lab
from orchestrator.hosts.pool import GuestPool
from orchestrator.queue.leases import CampaignStopped, DbLeases
from orchestrator.queue.rows import now
from orchestrator.queue.state import cancel, lab_state
from orchestrator.store import QueueRow, Store
from tests.queueharness import claim, drop, lab_file


def no_launcher(host: object) -> object:
    raise AssertionError("nothing is launched in these tests")


def queued(store: Store, priority: int = 0) -> int:
    cid = store.new_campaign("lease", {})
    with store.session() as s, s.begin():
        s.add(QueueRow(campaign_id=cid, priority=priority, submitted=now()))
    return cid


def pool(store: Store, lab: Lab, cid: int, ttl_s: float = 5.0) -> GuestPool:
    leases = DbLeases(store, cid, ttl_s=ttl_s)
    leases.poll_s = 0.05
    return GuestPool(lab, no_launcher, leases)  # type: ignore[arg-type]


def churn(url: str, lab_path: str, watch: str, seconds: float, seed: int) -> None:
    """Take a slot, hold its CPUs a random moment, give it back, for `seconds`."""
    store = Store(url)
    p = pool(store, load_lab(Path(lab_path)), queued(store))
    rng = random.Random(seed)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        lease = p.acquire()
        keys = [f"cpus/{c}" for c in lease.slot.cpus]
        for key in keys:
            claim(Path(watch), key)
        with (Path(watch) / "taken").open("a") as f:
            f.write(f"{os.getpid()} {lease.slot.index}\n")
        time.sleep(rng.uniform(0.01, 0.1))
        for key in keys:
            drop(Path(watch), key)
        p.release(lease)
    p.close()


@pytest.fixture(params=["postgresql", "sqlite"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'v.db'}"
    return str(request.getfixturevalue("postgres_url"))


def test_pools_in_three_processes_never_hold_one_host_cpu_at_once(url, tmp_path):
    lab = lab_file(tmp_path / "lab.yaml", slots=2)
    Store(url)  # the tables, before three processes race to make them
    ctx = get_context("fork")
    procs = [ctx.Process(target=churn, args=(url, str(lab), str(tmp_path), 4.0, i)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert not (tmp_path / "violations").exists(), (tmp_path / "violations").read_text()
    taken = (tmp_path / "taken").read_text().splitlines()
    assert len({line.split()[0] for line in taken}) == 3, "every process had slots"
    assert len(taken) >= 20
    assert all(s.owner is None for s in lab_state(Store(url)).slots), "every lease given back"


def test_a_freed_slot_goes_to_the_campaign_that_waited_longest_not_back_to_the_long_one(postgres_url, tmp_path):
    store = Store(postgres_url)
    lab = load_lab(lab_file(tmp_path / "lab.yaml", slots=1, host="longshort"))
    long_, short = pool(store, lab, queued(store)), pool(store, lab, queued(store))
    first = long_.acquire()
    order: list[str] = []

    def short_campaign() -> None:
        lease = short.acquire()
        order.append("short")
        short.release(lease)

    waiter = threading.Thread(target=short_campaign)
    waiter.start()
    time.sleep(0.5)  # the short campaign waits
    long_.release(first)
    again = long_.acquire()  # the long one asks again at once, after its boot
    order.append("long")
    long_.release(again)
    waiter.join(10)
    assert order == ["short", "long"]
    long_.close()
    short.close()


def test_a_higher_priority_campaign_gets_the_freed_slot_before_one_that_waited_longer(postgres_url, tmp_path):
    store = Store(postgres_url)
    lab = load_lab(lab_file(tmp_path / "lab.yaml", slots=1, host="priority"))
    holder, low, high = (pool(store, lab, queued(store, p)) for p in (0, 0, 5))
    held = holder.acquire()
    got: list[str] = []
    lock = threading.Lock()

    def wait(name: str, p: GuestPool) -> None:
        lease = p.acquire()
        with lock:
            got.append(name)
        time.sleep(0.2)
        p.release(lease)

    threads = [threading.Thread(target=wait, args=("low", low))]
    threads[0].start()
    time.sleep(0.4)
    threads.append(threading.Thread(target=wait, args=("high", high)))
    threads[1].start()
    time.sleep(0.4)
    holder.release(held)
    for t in threads:
        t.join(10)
    assert got == ["high", "low"]
    for p in (holder, low, high):
        p.close()


def _hold_and_wait(url: str, lab_path: str, ready: str) -> None:
    store = Store(url)
    p = pool(store, load_lab(Path(lab_path)), queued(store), ttl_s=1.5)
    p.acquire()
    Path(ready).touch()
    time.sleep(600)


def test_a_killed_holder_s_slot_is_free_again_once_its_lease_expires(postgres_url, tmp_path):
    lab = lab_file(tmp_path / "lab.yaml", slots=1, host="killed")
    Store(postgres_url)
    proc = get_context("fork").Process(target=_hold_and_wait, args=(postgres_url, str(lab), str(tmp_path / "ready")))
    proc.start()
    while not (tmp_path / "ready").exists():
        time.sleep(0.05)
    store = Store(postgres_url)
    assert [s.owner is not None for s in lab_state(store).slots if s.host == "killed"] == [True]
    time.sleep(1.0)
    assert [s.owner is not None for s in lab_state(store).slots if s.host == "killed"] == [True], (
        "renewed while its holder lives")
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    killed = time.monotonic()
    p = pool(store, load_lab(lab), queued(store))
    p.release(p.acquire())
    assert time.monotonic() - killed >= 0.5, "the slot stayed leased until the dead holder's lease expired"
    p.close()


def test_a_cancelled_campaign_s_pool_is_refused_its_next_slot_and_holds_none(postgres_url, tmp_path):
    store = Store(postgres_url)
    lab = load_lab(lab_file(tmp_path / "lab.yaml", slots=2, host="cancelled"))
    cid = queued(store)
    store.set_state(cid, "running")
    p = pool(store, lab, cid)
    lease = p.acquire()
    assert {s.campaign_id for s in lab_state(store).slots if s.owner and s.host == "cancelled"} == {cid}
    cancel(store, cid)
    p.release(lease)  # the boot in flight ends
    with pytest.raises(CampaignStopped, match=f"campaign {cid} stopped before its next boot: cancelled"):
        p.acquire()
    assert all(s.owner is None for s in lab_state(store).slots if s.host == "cancelled")
    p.close()


def test_a_build_leases_its_cpus_in_the_store_and_gets_them_before_the_guest_that_had_them(url, tmp_path):
    from orchestrator.hosts.buildcpus import BuildCpus

    store = Store(url)
    lab = load_lab(lab_file(tmp_path / "lab.yaml", slots=1, host="buildhost"))
    guests = pool(store, lab, queued(store))
    leases = DbLeases(store, queued(store), ttl_s=5.0)
    leases.poll_s = 0.05
    builds = BuildCpus(lab, leases)
    first = guests.acquire()
    order: list[str] = []

    def build() -> None:
        with builds.hold():
            order.append("build")
            assert {s.host for s in lab_state(store).slots if s.owner is not None} == {"build"}

    builder = threading.Thread(target=build)
    builder.start()
    time.sleep(0.5)  # the build waits for the guest's CPU
    assert order == []
    guests.release(first)
    again = guests.acquire(timeout_s=10)  # the guest's campaign asks again at once, after its boot
    order.append("guest")
    guests.release(again)
    builder.join(10)
    assert order == ["build", "guest"]
    guests.close()
    leases.close()
