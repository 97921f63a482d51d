"""The one error a host's failure raises: an InfraError that names the host.

A scheduler that catches HostFailed marks that host down and puts the work in flight back in
its queue for another slot; the kernel under test is never blamed for it.
"""

from __future__ import annotations

from orchestrator.errors import InfraError


class HostFailed(InfraError):
    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"host {host}: {message}")
        self.host = host
        self.reason = message
