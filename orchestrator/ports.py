"""The engine's ports: small protocols the real adapters and the tests' fakes both satisfy."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class BuiltKernel:
    commit: str
    path: Path
    sha256: str
    cache_hit: bool = False
    duration_s: float = 0.0
    modules_release: str | None = None


@dataclass(frozen=True)
class RunResult:
    metrics: dict[str, float]
    raw: dict[str, Any] = field(default_factory=dict)


class KernelBuilder(Protocol):
    def build(self, commit: str) -> BuiltKernel:
        """Raises BuildFailed (the commit's fault) or InfraError (the host's)."""


class GuestSession(Protocol):
    boot_seconds: float

    def run(self) -> RunResult:
        """One repetition of the workload. Raises WorkloadFailed or InfraError."""


class Measurer(Protocol):
    def boot(self, kernel: BuiltKernel) -> AbstractContextManager[GuestSession]:
        """A booted guest. Raises BootFailed (the kernel's fault) or InfraError."""
