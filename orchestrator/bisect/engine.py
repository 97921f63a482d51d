"""The bisection loop: measure both endpoints, then build -> boot -> measure -> decide per step.

Every build, boot, run, sample and decision goes to the store as it happens, and the git
bisect log after every mark, so `resume` can pick up after a crash: samples already taken are
reused, never taken twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.decide import Decision, Verdict, decide
from orchestrator.bisect.endpoints import EndpointCheck, check_endpoints
from orchestrator.bisect.gitlog import BisectState
from orchestrator.campaign import Campaign
from orchestrator.errors import BootFailed, BuildFailed, KernelFault, UserError, WorkloadFailed
from orchestrator.ports import BuiltKernel, KernelBuilder, Measurer
from orchestrator.store import Decided, Store


@dataclass(frozen=True)
class Event:
    """Progress: `phase` is build, boot, measure, decide, endpoints or done."""

    phase: str
    commit: str = ""
    step: int = 0
    steps_left: int = 0
    samples: int = 0
    message: str = ""
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Outcome:
    kind: str
    culprit: str = ""
    candidates: tuple[str, ...] = ()
    endpoints: EndpointCheck | None = None
    steps: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


class CampaignRefused(UserError):
    """The endpoints do not allow a meaningful bisection; the message says why."""


class EndpointFailed(CampaignRefused):
    """The good or bad endpoint does not build, boot or run the workload: no step can be judged
    against it. The campaign is stored as failed with this message as its reason."""

    WHAT = {BuildFailed: "does not build", BootFailed: "does not boot"}

    def __init__(self, role: str, commit: str, fault: KernelFault) -> None:
        what = next((w for cls, w in self.WHAT.items() if isinstance(fault, cls)), "fails the workload")
        super().__init__(f"campaign refused: the {role} endpoint {commit[:12]} {what}: {fault}")
        self.fault = fault


class Engine:
    def __init__(
        self,
        campaign: Campaign,
        direction: str,
        vcs: GitBisect,
        builder: KernelBuilder,
        measurer: Measurer,
        store: Store,
        on_event: Callable[[Event], None] = lambda e: None,
    ) -> None:
        self.c = campaign
        self.direction = direction
        self.vcs = vcs
        self.builder = builder
        self.measurer = measurer
        self.store = store
        self.on_event = on_event
        self._start = time.monotonic()
        self._kernels: dict[str, BuiltKernel] = {}
        self._step = 0

    def run(self, campaign_id: int) -> Outcome:
        """Start (or resume) the campaign stored under `campaign_id`."""
        c = self.c
        self.vcs.prepare()
        good = self.vcs.resolve(c.good, "good")
        bad = self.vcs.resolve(c.bad, "bad")
        try:
            check = self._check_endpoints(campaign_id, good, bad)
        except EndpointFailed as exc:
            self.store.set_state(campaign_id, "failed", {"reason": str(exc)})
            raise
        if not check.ok:
            self.store.set_state(campaign_id, "refused", {"reason": check.message})
            raise CampaignRefused(f"campaign refused: {check.message}")
        if not any(d.role == "good" for d in self.store.decisions(campaign_id)):
            for commit, role in ((good, "good"), (bad, "bad")):
                n = len(self._samples(campaign_id, commit))
                self.store.add_decision(campaign_id, Decided(commit, role, role, check.message, 1.0, n))
        log = self.store.campaign(campaign_id).bisect_log
        state = self.vcs.replay(log, self._scratch(campaign_id)) if log else self.vcs.start(good, bad, c.first_parent)
        self._step = sum(1 for d in self.store.decisions(campaign_id) if d.role == "step")
        while state.kind == "testing":
            commit = self.vcs.current()
            self._step += 1
            decision = self._judge(campaign_id, commit, good, bad, state)
            self._emit("decide", commit, decision.samples, f"{decision.verdict}: {decision.reason}", state.steps_left)
            self.store.add_decision(campaign_id, decision)
            state = self.vcs.mark(commit, decision.verdict)
            self.store.set_bisect_log(campaign_id, self.vcs.log())
        outcome = self._finish(campaign_id, state, check)
        self._emit("done", outcome.culprit, message=outcome.kind)
        return outcome

    def _scratch(self, campaign_id: int) -> Path:
        return self.vcs.repo.parent / f"bisect-{campaign_id}.log"

    def _emit(self, phase: str, commit: str = "", samples: int = 0, message: str = "", steps_left: int = 0) -> None:
        self.on_event(Event(phase, commit, self._step, steps_left, samples, message,
                            time.monotonic() - self._start))

    def _samples(self, campaign_id: int, commit: str) -> list[float]:
        return self.store.samples(campaign_id, self.c.metric.name).get(commit, [])

    def _check_endpoints(self, campaign_id: int, good: str, bad: str) -> EndpointCheck:
        c = self.c
        need = c.repetitions.min
        while True:
            good_s = self._endpoint(campaign_id, good, "good", need)
            bad_s = self._endpoint(campaign_id, bad, "bad", need)
            check = check_endpoints(good_s, bad_s, self.direction, c.metric.threshold, c.repetitions.max, c.alpha)
            self._emit("endpoints", message=check.message)
            if check.problem in ("", "good_not_good", "bad_not_bad") or need >= c.repetitions.max:
                return check
            need = min(c.repetitions.max, max(check.reps_needed, need + c.runs_per_boot))

    def _endpoint(self, campaign_id: int, commit: str, role: str, need: int) -> list[float]:
        try:
            return self._collect(campaign_id, commit, need)
        except KernelFault as exc:
            raise EndpointFailed(role, commit, exc) from exc

    def _kernel(self, campaign_id: int, commit: str) -> BuiltKernel:
        if commit not in self._kernels:
            self._emit("build", commit)
            started = time.monotonic()
            try:
                kernel = self.builder.build(commit)
            except BuildFailed as exc:
                self.store.add_build(campaign_id, commit, "failed", error=str(exc)[:2000],
                                     duration_s=time.monotonic() - started)
                raise
            self.store.add_build(campaign_id, commit, "ok", image=str(kernel.path), sha256=kernel.sha256,
                                 cache_hit=kernel.cache_hit, duration_s=kernel.duration_s)
            self._kernels[commit] = kernel
        return self._kernels[commit]

    def _collect(self, campaign_id: int, commit: str, need: int) -> list[float]:
        """Samples of the campaign metric at `commit` until there are `need`; boots as needed."""
        have = self._samples(campaign_id, commit)
        while len(have) < need:
            kernel = self._kernel(campaign_id, commit)
            self._emit("boot", commit, len(have))
            boot_id = self.store.start_boot(campaign_id, commit)
            try:
                with self.measurer.boot(kernel) as session:
                    self.store.end_boot(boot_id, "ok", session.boot_seconds)
                    for _ in range(min(self.c.runs_per_boot, need - len(have))):
                        self._emit("measure", commit, len(have))
                        result = session.run()
                        if self.c.metric.name not in result.metrics:
                            raise WorkloadFailed(f"metric {self.c.metric.name!r} missing from the results; "
                                                 f"got {', '.join(sorted(result.metrics))}")
                        self.store.add_run(campaign_id, boot_id, commit, result.metrics, result.raw)
                        have = self._samples(campaign_id, commit)
            except BootFailed as exc:
                self.store.end_boot(boot_id, "failed", 0.0, f"{exc}\n{exc.detail}"[:4000])
                raise
        return have

    def _references(self, campaign_id: int, good: str, bad: str, step_samples: int) -> tuple[list[float], list[float]]:
        """The reference samples, topped up to as many as the step has: a step measured many
        times must not be judged against references measured a few times."""
        return (self._collect(campaign_id, good, step_samples),
                self._collect(campaign_id, bad, step_samples))

    def _judge(self, campaign_id: int, commit: str, good: str, bad: str, state: BisectState) -> Decided:
        c = self.c
        need = c.repetitions.min
        try:
            while True:
                samples = self._collect(campaign_id, commit, need)
                good_s, bad_s = self._references(campaign_id, good, bad, len(samples))
                d: Decision = decide(good_s, bad_s, samples, len(samples) < c.repetitions.max, c.alpha)
                if d.verdict is not Verdict.MORE:
                    return Decided(commit, "step", d.verdict.value, d.reason, d.confidence, len(samples))
                self._emit("decide", commit, len(samples), f"{d.verdict.value}: {d.reason}", state.steps_left)
                need = min(c.repetitions.max, len(samples) + c.runs_per_boot)
        except BuildFailed as exc:
            return Decided(commit, "step", "skip", f"build failed: {exc}"[:2000], 1.0, 0)
        except BootFailed as exc:
            verdict = "bad" if c.skip_policy.boot_failure == "bad" else "skip"
            return Decided(commit, "step", verdict, f"boot failed: {exc}"[:2000], 1.0, 0)
        except WorkloadFailed as exc:
            return Decided(commit, "step", "skip", f"workload failed: {exc}"[:2000], 1.0, 0)

    def _finish(self, campaign_id: int, state: BisectState, check: EndpointCheck) -> Outcome:
        notes: list[str] = []
        if state.kind == "found":
            parent = self.vcs.parent(state.culprit)
            for commit in (parent, state.culprit):
                try:
                    self._collect(campaign_id, commit, self.c.repetitions.min)
                except (BuildFailed, BootFailed, WorkloadFailed) as exc:
                    notes.append(f"{commit[:12]} could not be measured for the report: {exc}")
            kernels = [self._kernels.get(x) for x in (parent, state.culprit)]
            if all(kernels) and kernels[0].sha256 == kernels[1].sha256:  # type: ignore[union-attr]
                notes.append("suspicious: the culprit's kernel image is identical to its parent's")
            result = {"kind": "found", "culprit": state.culprit, "parent": parent, "notes": notes}
        else:
            result = {"kind": "only_skipped", "candidates": list(state.candidates), "notes": notes}
        self.store.set_state(campaign_id, "done", result)
        return Outcome(state.kind, state.culprit, state.candidates, check, self._step, tuple(notes))
