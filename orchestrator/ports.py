"""The one measurement layer's ports: what the schedulers (the bisect engine, the compare runner,
verify) see of kernels, guests and progress. The real parts (orchestrator/measure/kernels.py,
orchestrator/measure/guests.py, wired in orchestrator/wiring.py) and the tests' fakes
(tests/fakes.py) both satisfy them.

    KernelBuilder.build(commit) -> Build            a kernel artifact and how it was obtained
    Measurer.check(kernel)                          the kernel has what the workload needs
    with Measurer.boot(kernel) as session:          a guest of that kernel on a free slot
        session.run(params, nice) -> RunResult      one repetition of the workload
    on_event(Event)                                 progress, one type for every scheduler
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol

from orchestrator.workloads.result import RunResult

__all__ = ["Build", "Event", "GuestSession", "KernelArtifact", "KernelBuilds", "Measurer", "RunResult"]


@dataclass(frozen=True)
class KernelArtifact:
    """A kernel to boot: its image, the image's sha256 (its content address on every host),
    optionally the release whose modules go into the guest image, found under `modules_dir`
    (default /lib/modules) as `<modules_dir>/<release>/`, what it is for people
    (`description`), and the commit it was built from ("" for a file or a stored kernel)."""

    image: Path
    sha256: str
    release: str | None = None
    modules_dir: Path | None = None
    description: str = ""
    commit: str = ""


@dataclass(frozen=True)
class Build:
    """A kernel the builder made or found in its cache, how long that took and how it was
    obtained (`how`: cached, incremental, ccache, cold; "" unknown)."""

    kernel: KernelArtifact
    cache_hit: bool = False
    duration_s: float = 0.0
    how: str = ""

    def words(self) -> str:
        """The build for people: `built in 8.2 min (cold)`, `from the build cache`."""
        if self.cache_hit:
            return "from the build cache"
        took = f"{self.duration_s:.0f} s" if self.duration_s < 120 else f"{self.duration_s / 60:.1f} min"
        return f"built in {took}" + (f" ({self.how})" if self.how else "")


@dataclass(frozen=True)
class Event:
    """Progress of any scheduler. `phase`: build, built (the message says how), boot, measure,
    booted (the message gives the boot's median), decide, endpoints, recheck, confirm or done;
    `commit` what is measured (a commit, or a comparison's variants); `step` and `steps_left`
    the scheduler's own count (bisection steps, a comparison's boots); `samples` runs so far;
    `message` one line for people."""

    phase: str
    commit: str = ""
    step: int = 0
    steps_left: int = 0
    samples: int = 0
    message: str = ""
    elapsed_s: float = 0.0


class KernelBuilds(Protocol):
    def build(self, commit: str) -> Build:
        """Raises BuildFailed (the commit's fault) or InfraError (the host's)."""


class GuestSession(Protocol):
    boot_seconds: float
    host: str  # the lab host that measures (one name for every run of this guest)
    guest: Any  # the booted guest (exec, agent, hello) for settings a scheduler applies in it

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        """One repetition of the workload (with `params` instead of the measurer's, with
        its commands at nice value `nice` when given). Raises WorkloadFailed or InfraError."""


class Measurer(Protocol):
    host: str | None  # the host every guest goes to; None until the first guest picks one

    def move_on(self) -> bool:
        """After HostFailed of the host the measurer is tied to: forget it, so the next guest
        boots on any host that is up (True), unless that host was asked for (False)."""

    def check(self, kernel: KernelArtifact) -> None:
        """WorkloadFailed when the kernel's known .config lacks what the workload needs."""

    def boot(self, kernel: KernelArtifact, append: str | None = None) -> AbstractContextManager[GuestSession]:
        """A booted guest (with `append` instead of the measurer's kernel command line).
        Raises BootFailed (the kernel's fault), HostFailed or another InfraError."""
