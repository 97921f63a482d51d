"""The interface every lease backend of a lab's slots implements (orchestrator/hosts/cpulocks.py
flock files, orchestrator/queue/leases.py rows in the store), shared by the guest pool
(orchestrator/hosts/pool.py) and the CPUs kernel builds lease (orchestrator/hosts/buildcpus.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from orchestrator.hosts.labfile import Host, Slot

# How often a pool waiting for a slot another controller holds looks again.
FOREIGN_POLL_S = 1.0


class SlotLeases(Protocol):
    """Leases of slots against other controller processes (orchestrator/hosts/pool.py's docstring).

    waiting(hosts)   the pool looks for a slot of these hosts now (called before each look);
                     may raise to end the wait (a UserError: the campaign is to stop)
    take(host, slot) what holds the slot (give it back with `give`), or None: another
                     controller's guest is on its CPUs, or another campaign's turn comes first
    served()         the wait ended (a slot taken, or acquire gave up)
    close()          every lease given back; the pool is closed
    """

    poll_s: float

    def waiting(self, hosts: Sequence[Host]) -> None: ...

    def take(self, host: Host, slot: Slot) -> Any | None: ...

    def give(self, held: Any) -> None: ...

    def served(self) -> None: ...

    def close(self) -> None: ...
