"""The bisection simulator's in-memory store gives the engine what the SQLite store gives it:
one seeded campaign (between-boot noise, no-op commits, a drifting host, confirmation and
revert) run on both ends with the same decisions, samples, bisect log and result."""

from __future__ import annotations

import hashlib

from orchestrator.bisect.engine import Engine
from orchestrator.campaign.file import parse_campaign
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer, FakeVcs, MemoryStore


def campaign_on(store, seed: int):  # type: ignore[no-untyped-def]
    shas = [hashlib.sha1(f"commit {i}".encode()).hexdigest() for i in range(200)]
    noops = [set(shas[i:i + 5]) for i in range(0, 200, 5)]  # runs of one image; 125 starts one

    def value(commit: str) -> float:
        if commit.startswith("revert-"):
            return 100.0
        return 85.0 if shas.index(commit) >= 125 else 100.0

    c = parse_campaign({"name": "sim", "repository": "/nonexistent", "good": shas[0], "bad": shas[-1],
                        "workload": "sim", "metric": {"name": "iops", "direction": "higher", "threshold": "-10%"}})
    cid = store.new_campaign("sim", {})
    measurer = FakeMeasurer(value, 0.02, seed, between=0.08, drift=-0.0005)
    outcome = Engine(c, "higher", FakeVcs(shas), FakeBuilder(same_image=noops), measurer, store).run(cid)
    return outcome, store, cid


def test_the_engine_decides_the_same_on_the_memory_store_as_on_sqlite():
    for seed in (1, 3):
        memory, sqlite = campaign_on(MemoryStore(), seed), campaign_on(Store("sqlite://"), seed)
        (out_m, m, cid_m), (out_s, s, cid_s) = memory, sqlite
        decisions = m.decisions(cid_m)  # the campaign went through what the bench measures
        assert any(d.reason.startswith("same image as") for d in decisions) and "revert" in m.campaign(cid_m).result
        assert out_m == out_s
        assert m.decisions(cid_m) == s.decisions(cid_s)
        assert m.boot_samples(cid_m, "iops") == s.boot_samples(cid_s, "iops")
        assert m.campaign(cid_m).bisect_log == s.campaign(cid_s).bisect_log
        assert m.campaign(cid_m).result == s.campaign(cid_s).result
        assert ([(b.commit, b.status, b.sha256) for b in m.builds(cid_m)]
                == [(b.commit, b.status, b.sha256) for b in s.builds(cid_s)])


def boots_of_a_cut_campaign(store):  # type: ignore[no-untyped-def]
    """A whole boot, one cut by a SIGKILL after 1 run of 2 (its guest up, never ended), a boot a
    failed host lost, and a whole boot that other work overlapped; 2 runs per boot asked."""
    cid = store.new_campaign("cut", {})
    up = {"host_state": {"dirty_kib": 0, "writeback_kib": 0, "load1": 0.1, "waited_s": 0.0, "quiet": True},
          "phases": {"to_agent": 2.8}}
    for commit, runs, end in (("a", 2, "whole"), ("a", 1, "cut"), ("b", 2, "lost"), ("b", 2, "overlapped")):
        boot = store.start_boot(cid, commit)
        store.end_boot(boot, "ok", 3.0, host="local", facts=up)
        for i in range(runs):
            store.add_run(cid, boot, commit, {"iops": 100.0 + i}, {})
        if end == "lost":
            store.end_boot(boot, "lost", 0.0, "host local failed", host="local")
        elif end != "cut":
            load = {"seconds": 60.0, "cpus": 2, "qemu_s": 110.0, "outside_s": 40.0 if end == "overlapped" else 1.0,
                    "taken": 0.3333 if end == "overlapped" else 0.0083}
            store.end_boot(boot, "ok", 3.0, host="local", facts={**up, "whole": True, "load": load})
    return store.boot_samples(cid, "iops", runs_per_boot=2), store.boot_samples(cid, "iops")


def test_a_boot_cut_after_1_run_of_2_is_no_boot_on_sqlite_and_on_the_memory_store():
    memory, sqlite = boots_of_a_cut_campaign(MemoryStore()), boots_of_a_cut_campaign(Store("sqlite://"))
    assert memory == sqlite
    asked, inferred = sqlite
    assert asked == inferred, "a reader that does not know runs_per_boot (status, report) counts the same"
    assert [len(b.runs) for b in asked["a"]] == [2], "the cut boot is not counted"
    assert [(b.seq, b.taken, b.to_agent_s) for b in asked["b"]] == [(1, 0.3333, 2.8)], "nor the lost one"
