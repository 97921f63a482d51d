"""Candidates as the judge's keys (orchestrator/measure/judge.py): the judge builds a key and
boots its kernel; here a key's "build" is its CandidateMaker's `make` (a kernel built with a
normalised config, or the one kernel of a settings bisection), and its boot is the measurer's
guest with the candidate's command line, its guest settings applied (and read back) before
the first run, its runs under its nice value. The judge stores every boot and run under the
key, as for a commit.

`Candidates` knows which units a key stands for; keys enter it as the search asks for them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from orchestrator.compare.sysfs import GuestSettings
from orchestrator.compare.variant import Variant
from orchestrator.decisions import Basis
from orchestrator.errors import UserError, WorkloadFailed
from orchestrator.ports import Build, GuestSession, KernelArtifact, Measurer, RunResult
from orchestrator.setbisect.model import CandidateMaker, Made, key_of


class Unsettable(WorkloadFailed):
    """A candidate's guest setting does not take in its guest (a scheduler's tunable without that
    scheduler, a value the kernel refuses): the candidate's fault, judged as a skip of its own kind
    (measure/shell.py fault_basis)."""

    basis = Basis.UNSETTABLE


class Candidates:
    """The candidates of one search: key -> units applied, and each one's Made (made once per
    process; a kernel the maker built before comes from its cache). Candidates measured on
    several slots at once are made one at a time: a config bisection builds every candidate in
    one build directory."""

    def __init__(self, maker: CandidateMaker, names: Sequence[str]) -> None:
        self.maker, self.names = maker, tuple(names)
        self.applied: dict[str, frozenset[str]] = {}
        self._made: dict[str, Made] = {}
        self._making = threading.Lock()

    def key(self, applied: frozenset[str]) -> str:
        key = key_of(applied, self.names)
        self.applied.setdefault(key, frozenset(applied))
        return key

    def made(self, key: str) -> Made:
        with self._making:
            if key not in self._made:
                self._made[key] = self.maker.make(self.applied[key])
            return self._made[key]

    def made_here(self, key: str) -> bool:
        """Whether `key` was made by this process (a resumed one makes only what it boots)."""
        return key in self._made

    def build(self, key: str) -> Build:
        """The judge's builder: the candidate's kernel, named by its key (KernelArtifact.commit),
        so the measurer below knows which candidate a boot is for."""
        made = self.made(key)
        return Build(dataclasses.replace(made.kernel, commit=key), made.cache_hit, made.build_s)


class CandidateSession:
    """A guest of one candidate: its settings are applied once, before the first run; every run
    is under the candidate's nice value; everything else is the measurer's session."""

    def __init__(self, session: GuestSession, made: Made, key: str) -> None:
        self._session, self.made, self.key = session, made, key
        self.guest = session.guest
        self._applied = False

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        if not self._applied:
            self.apply()
        return self._session.run(params, self.made.nice if nice is None else nice)

    def apply(self) -> None:
        if self.made.sched is not None or self.made.sysfs:
            variant = Variant(self.key, kernel="-", sched=self.made.sched, sysfs=self.made.sysfs)
            try:
                GuestSettings(self.guest, (variant,)).apply(variant)
            except UserError as exc:
                raise Unsettable(str(exc)) from None
        self._applied = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class CandidateMeasurer:
    """The measurer the judge of a set bisection boots through: `inner`'s guests of a candidate's
    kernel with its command line (KernelArtifact.commit names the candidate, Candidates.build)."""

    def __init__(self, inner: Measurer, candidates: Candidates) -> None:
        self.inner, self.candidates = inner, candidates

    @property
    def host(self) -> str | None:
        return self.inner.host

    @host.setter
    def host(self, value: str | None) -> None:
        self.inner.host = value

    def move_on(self) -> bool:
        return self.inner.move_on()

    def _own(self, kernel: KernelArtifact) -> tuple[Made, KernelArtifact]:
        made = self.candidates.made(kernel.commit)
        return made, made.kernel

    def check(self, kernel: KernelArtifact) -> None:
        self.inner.check(self._own(kernel)[1])

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[CandidateSession]:
        made, own = self._own(kernel)
        with self.inner.boot(own, made.append if append is None else append) as session:
            yield CandidateSession(session, made, kernel.commit)
