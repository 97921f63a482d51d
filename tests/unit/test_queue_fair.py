"""The turn order of a lab's slots among campaigns and of the queue among workers
(orchestrator/queue/fair.py), as pure functions."""

from __future__ import annotations

import datetime as dt

from orchestrator.queue.fair import Queued, Waiter, may_take, next_campaign, turn_order

T0 = dt.datetime(2026, 11, 25, 20, 0)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def test_a_long_campaign_that_asks_again_after_its_boot_comes_after_one_that_waited_longer():
    long_ = Waiter("long", priority=0, submitted=at(0), since=at(100))  # asked again right after its boot
    short = Waiter("short", priority=0, submitted=at(50), since=at(60))
    assert [w.owner for w in turn_order([long_, short])] == ["short", "long"]
    assert may_take("short", [long_, short], free=1) and not may_take("long", [long_, short], free=1)


def test_a_higher_priority_goes_first_however_long_the_others_waited():
    old = Waiter("old", priority=0, submitted=at(0), since=at(0))
    urgent = Waiter("urgent", priority=5, submitted=at(90), since=at(99))
    assert [w.owner for w in turn_order([old, urgent])] == ["urgent", "old"]


def test_equal_waits_go_by_submission_then_by_owner_so_every_pool_computes_the_same_order():
    a = Waiter("b-pool", priority=0, submitted=at(1), since=at(5))
    b = Waiter("a-pool", priority=0, submitted=at(2), since=at(5))
    c = Waiter("c-pool", priority=0, submitted=at(2), since=at(5))
    assert [w.owner for w in turn_order([c, b, a])] == ["b-pool", "a-pool", "c-pool"]


def test_two_free_slots_serve_the_first_two_waiters_and_no_slot_serves_none():
    ws = [Waiter(f"p{i}", 0, at(i), at(i)) for i in range(3)]
    assert [may_take(w.owner, ws, free=2) for w in ws] == [True, True, False]
    assert not any(may_take(w.owner, ws, free=0) for w in ws)


def test_a_pool_that_registered_no_wait_comes_after_every_waiter():
    ws = [Waiter("p0", 0, at(0), at(0))]
    assert not may_take("stranger", ws, free=1) and may_take("stranger", ws, free=2)


def test_the_queue_starts_the_highest_priority_then_the_first_submitted():
    queued = [Queued(1, 0, at(0)), Queued(2, 3, at(10)), Queued(3, 3, at(5)), Queued(4, -1, at(-5))]
    assert next_campaign(queued) == Queued(3, 3, at(5))
    assert next_campaign([]) is None
