"""The judge (orchestrator/measure/judge.py) on the real SQLite store with the fake guests: two
judgements in flight at once on two slots, the stray-boot rule, a comparison's boots."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from orchestrator.backends.quiet import BootLoad, HostState
from orchestrator.errors import WorkloadFailed
from orchestrator.measure.evidence import boots_by_host
from orchestrator.measure.judge import Judge
from orchestrator.report.bisection import excluded
from orchestrator.stats import pooled_boot_variance, step_odds
from orchestrator.store import Store
from tests.fakes import STALL, FakeBuilder, FakeMeasurer, FakeSession

QUIET = HostState(0, 0, 0.1, 0.0, True)
BUSY = HostState(2_000_000, 0, 3.0, 120.0, False)


class TwoSlots(FakeMeasurer):
    """Guests that wait for each other: every boot stays up until a second guest is up too, so a
    test passes only when two judgements really measure at the same time."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.up = threading.Barrier(2, timeout=10)
        self.lock = threading.Lock()
        self.now = self.most = 0

    @contextmanager
    def boot(self, kernel: Any, append: str | None = None) -> Iterator[FakeSession]:
        with super().boot(kernel, append) as session:
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            self.up.wait()
            try:
                yield session
            finally:
                with self.lock:
                    self.now -= 1


def test_two_judgements_in_flight_on_two_slots_store_every_boot_once(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("two slots", {})
    measurer = TwoSlots(value_of=lambda commit: 100.0 if commit == "a" * 40 else 50.0, between=0.02)
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 3)
    threads = [threading.Thread(target=judge.interleave, args=([key], 4)) for key in ("a" * 40, "b" * 40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert measurer.most == 2, "the two judgements never measured at the same time"
    boots = store.boots(cid)
    assert sorted(b.commit[0] for b in boots) == ["a"] * 4 + ["b"] * 4 and all(b.status == "ok" for b in boots)
    assert len(list(store.runs(cid))) == 8 * 3
    assert judge.boots() == store.boot_samples(cid, "iops", judge.on)  # the cache holds what the store holds
    assert {b.seq for bs in judge.boots().values() for b in bs} == set(range(8))


class OneBusyBoot(FakeMeasurer):
    """The `busy_boot`-th guest starts on a host that had not settled and reads `factor` x."""

    def __init__(self, busy_boot: int, factor: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.busy_boot, self.factor = busy_boot, factor

    @contextmanager
    def boot(self, kernel: Any, append: str | None = None) -> Iterator[FakeSession]:
        with super().boot(kernel, append) as session:
            busy = self.boots == self.busy_boot
            session.host_state = BUSY if busy else QUIET  # type: ignore[attr-defined]
            session.phases = {"to_agent": 2.5}  # type: ignore[attr-defined]
            if busy:
                session.value *= self.factor
            yield session


def judged(tmp_path, busy_boot: int, factor: float) -> tuple[Store, int, Judge]:  # type: ignore[no-untyped-def]
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("stray", {})
    measurer = OneBusyBoot(busy_boot, factor, value_of=lambda commit: 100.0 if commit == "a" * 40 else 80.0,
                           between=0.02, seed=4)
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 2)
    judge.interleave(["a" * 40, "b" * 40], 5)
    return store, cid, judge


def test_a_busy_boot_that_strays_is_kept_in_the_store_and_left_out_of_the_evidence(tmp_path):
    store, cid, judge = judged(tmp_path, busy_boot=4, factor=0.5)
    assert len(judge.boots()["a" * 40]) == 6 and len(judge.evidence()["a" * 40]) == 5  # booted once more
    facts = [b.facts for b in store.boots(cid)]
    assert facts[3]["host_state"]["quiet"] is False and facts[0]["phases"] == {"to_agent": 2.5}
    assert [b.busy for b in store.boot_samples(cid, "iops")["a" * 40]][1] is True


def test_a_busy_boot_within_the_noise_stays_evidence(tmp_path):
    _, _, judge = judged(tmp_path, busy_boot=4, factor=1.0)
    assert len(judge.evidence()["a" * 40]) == len(judge.boots()["a" * 40]) == 5


class OneOverlappedBoot(FakeMeasurer):
    """The `overlapped`-th guest has other work on its CPUs for a third of its time, reading as
    usual: the load the provider measures when the guest ends."""

    def __init__(self, overlapped: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.overlapped = overlapped

    @contextmanager
    def boot(self, kernel: Any, append: str | None = None) -> Iterator[FakeSession]:
        with super().boot(kernel, append) as session:
            outside = 40.0 if self.boots == self.overlapped else 0.5
            yield session
            session.load = BootLoad(60.0, 2, 110.0, outside)  # type: ignore[attr-defined]


def test_a_boot_other_work_overlapped_is_stored_with_its_load_and_left_out_whatever_it_read(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("overlap", {})
    measurer = OneOverlappedBoot(3, value_of=lambda commit: 100.0 if commit == "a" * 40 else 80.0, between=0.02)
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 2)
    judge.interleave(["a" * 40, "b" * 40], 4)
    facts = [b.facts for b in store.boots(cid)]
    assert all(f["whole"] for f in facts) and facts[2]["load"]["taken"] == 0.3333
    assert len(judge.boots()["b" * 40]) == 5 and len(judge.evidence()["b" * 40]) == 4  # booted once more


def test_a_boot_cut_by_a_killed_controller_is_not_counted_and_its_commit_gets_a_fresh_boot(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("cut", {})
    killed = FakeMeasurer(value_of=lambda commit: 100.0, crash_after=5)  # the 3rd boot's 2nd run never comes
    with pytest.raises(KeyboardInterrupt):
        Judge(cid, store, FakeBuilder(), killed, "iops", 2).interleave(["a" * 40], 4)
    assert [len(list(r for r in store.runs(cid) if r.boot_id == b.id)) for b in store.boots(cid)] == [2, 2, 1]
    resumed = Judge(cid, store, FakeBuilder(), FakeMeasurer(value_of=lambda commit: 100.0), "iops", 2)
    assert len(resumed.evidence()["a" * 40]) == 2, "the cut boot is no boot"
    resumed.interleave(["a" * 40], 4)
    assert len(store.boots(cid)) == 5 and [len(b.runs) for b in resumed.evidence()["a" * 40]] == [2, 2, 2, 2]


def test_the_evidence_kept_between_decisions_follows_every_boot_added_and_a_callers_change_does_not_reach_it(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("kept", {})
    judge = Judge(cid, store, FakeBuilder(), FakeMeasurer(value_of=lambda commit: 100.0), "iops", 3)
    judge.interleave(["a" * 40], 2)
    first = judge.evidence()
    assert [len(b.runs) for b in first["a" * 40]] == [3, 3]
    first["a" * 40].clear()
    assert len(judge.evidence()["a" * 40]) == 2, "the caller's copy, not the judge's"
    judge.interleave(["a" * 40, "b" * 40], 3)
    again = judge.evidence()
    assert len(again["a" * 40]) == 3 and len(again["b" * 40]) == 3


def stalling(tmp_path, stalls: int) -> tuple[Store, int, Judge, list[tuple[str, str]]]:  # type: ignore[no-untyped-def]
    """A judge of 3 runs a boot whose guests of commit a run 1 run, then stall in the 2nd
    `stalls` times; the events it emitted (phase, message)."""
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("stall", {})
    events: list[tuple[str, str]] = []
    measurer = FakeMeasurer(value_of=lambda commit: 100.0, stalls={"a" * 40: stalls})
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 3,
                  emit=lambda phase, key, samples, message: events.append((phase, message)))
    return store, cid, judge, events


def test_a_run_that_stalls_once_is_stored_with_the_guest_as_it_stalled_and_the_commit_booted_again(tmp_path):
    store, cid, judge, events = stalling(tmp_path, 1)
    judge.boot_once("a" * 40)
    first, second = store.boots(cid)
    assert (first.status, second.status) == ("stalled", "ok") and first.host == "local"
    assert first.error.startswith("fio timed out\n") and "\n".join(STALL) in first.error
    runs = [r.boot_id for r in store.runs(cid)]
    assert runs == [first.id] + [second.id] * 3, "the run before the stall is kept"
    assert [len(b.runs) for b in judge.evidence()["a" * 40]] == [3], "the stalled boot is no evidence"
    assert ("stalled", "a run stalled in the guest (fio timed out): booting it again") in events
    assert [p for p, _ in events].count("boot") == 2 and [p for p, _ in events].count("booted") == 1
    # the report counts it as a boot on its host, cut short, and the status lists it by its status
    assert boots_by_host(store, cid, "iops")[2] == "local (2 boots, 1 with a run stalled in the guest)"
    assert excluded(store, cid, "iops").cut_short == (first.id,)


def test_a_run_that_stalls_in_the_second_guest_too_fails_the_commits_workload(tmp_path):
    store, cid, judge, events = stalling(tmp_path, 2)
    with pytest.raises(WorkloadFailed, match="^fio timed out") as failed:
        judge.boot_once("a" * 40)
    assert failed.value.timed_out and failed.value.detail_label == "the guest when the run was stopped"
    assert [b.status for b in store.boots(cid)] == ["stalled", "stalled"]
    assert [p for p, _ in events].count("stalled") == 1 and "booted" not in [p for p, _ in events]


def test_a_candidates_odds_are_computed_once_until_a_run_is_added_and_equal_the_odds_from_scratch(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'j.db'}")
    cid = store.new_campaign("odds", {})
    good, bad, step, other = "a" * 40, "b" * 40, "c" * 40, "d" * 40
    measurer = FakeMeasurer(value_of=lambda commit: 80.0 if commit in (bad, step) else 100.0, between=0.05, seed=3)
    judge = Judge(cid, store, FakeBuilder(), measurer, "iops", 3)
    judge.interleave([good, bad, step, other], 3)
    odds = judge.odds(good, bad, step)
    boots = judge.evidence()
    ss, df = pooled_boot_variance([bs for key, bs in boots.items() if key not in (good, bad, step)])
    assert odds == step_odds(boots[good], boots[bad], boots[step], ss, df) and df == 2
    assert judge.odds(good, bad, step) is odds and judge.booted(step) == 3
    judge.boot_once(other)
    again = judge.odds(good, bad, step)
    boots = judge.evidence()
    ss, df = pooled_boot_variance([bs for key, bs in boots.items() if key not in (good, bad, step)])
    assert again is not odds and again == step_odds(boots[good], boots[bad], boots[step], ss, df) and df == 3
