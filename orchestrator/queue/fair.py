"""Fair shares of a lab's slots among campaigns, as pure functions.

A slot is given one boot at a time (the schedulers lease a slot per boot and give it back
after), so a long campaign asks again after each boot and queues behind campaigns that waited
longer: the highest priority first, then the pool that has waited longest, then the campaign
submitted first. A pool may take a free slot when fewer pools are ahead of it in that order than
slots are free on the machine; the others wait their turn. The same order picks which queued
campaign a worker starts next.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Waiter:
    """A pool waiting for a slot: whose campaign, how urgent, since when."""

    owner: str
    priority: int
    submitted: dt.datetime
    since: dt.datetime


def turn_order(waiters: Iterable[Waiter]) -> list[Waiter]:
    """Who gets the next free slot first: priority (higher first), then how long each has
    waited (a campaign that just had a boot asks anew and comes after those that waited), then
    submission, then the owner's name (a total order: every pool computes the same)."""
    return sorted(waiters, key=lambda w: (-w.priority, w.since, w.submitted, w.owner))


def may_take(owner: str, waiters: Iterable[Waiter], free: int) -> bool:
    """Whether `owner` may take one of `free` free slots now: fewer waiters than that are ahead
    of it. An owner that is not among the waiters (it registered no wait) comes last."""
    order = turn_order(waiters)
    ahead = next((i for i, w in enumerate(order) if w.owner == owner), len(order))
    return ahead < free


@dataclass(frozen=True)
class Queued:
    """A campaign waiting in the queue for a worker."""

    campaign_id: int
    priority: int
    submitted: dt.datetime


def next_campaign(queued: Iterable[Queued]) -> Queued | None:
    """The queued campaign a free worker starts: highest priority, then first submitted."""
    order = sorted(queued, key=lambda q: (-q.priority, q.submitted, q.campaign_id))
    return order[0] if order else None
