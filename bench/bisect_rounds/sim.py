"""One simulated campaign driven by the pure search core (orchestrator.bisect.posterior and
rounds, the endpoint stop rule, stats.step_odds) with a simulated measurement and a simulated
clock: NOT the engine.

The guests follow bench/bisect_accuracy.py's nested noise model (a boot's level is the commit's
value times a per-boot offset, the between-boot CoV; each run adds the within-boot CoV; the host
may slow down linearly). Each slot is a lab host with its own references and noise pool: a step
is judged only against its own host's references, as the engine does; the evidence of one
kernel image measured on several hosts is the sum of the hosts' (independent) evidence, each
host's latest for that image, as the store keeps it.

The clock is vmbisect's lab: every kernel is built once and pushed to the hosts that boot it;
builds run one at a time on the controller's build CPUs, as the engine's builder does (the first
cold, later ones incremental), or with `builders` = 0 one at a time on each host's (a what-if).
Without build-ahead a round's kernels are built when the round starts, nothing while guests run
(this 2-core machine: builds and guests would share cores). With build-ahead, while a round measures, the hosts' build CPUs build the next
round's picks for each way the round can end (rounds.ahead), likelier first, as many as fit.
Two ways to hand out work: rounds as barriers (a round ends when its slowest slot does; both
clocks follow one run, the decisions do not depend on the clock) or `refill` (a slot that
frees starts the next pick of the posterior recomputed then, the commits still measured on
other slots counted as in flight; the decisions follow the clock, so each clock is its own run).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from orchestrator.bisect.posterior import Dag, llr_of
from orchestrator.bisect.rounds import (
    NOMINATE,
    REVISIT_ERROR,
    TOTAL_CAP,
    VISIT_ERROR,
    Act,
    Move,
    Target,
    Visit,
    ahead,
    next_boot,
    next_move,
    visit,
)
from orchestrator.campaign.file import Threshold
from orchestrator.measure.endpoints import Next, check_endpoints, endpoints_next
from orchestrator.measure.judge import REFRESH_AFTER  # the drift guard's, as the engine's
from orchestrator.measure.pairs import pair, settled
from orchestrator.stats import Boot, StepOdds, pooled_boot_variance, step_odds

# Durations (seconds). Builds: docs/kernel-builds.md (make bench-build, 2 cores, 2026-11-22): cold
# 552 s; "fresh build directory, warm ccache" 83.9 s stands for a build after a jump across the
# range (a one-file change is 12.3 s, a wide header change about a cold build). A boot of the
# demo: 25.0 s for 18 s of fio (docs/boot-time.md, "Per-boot cost"). A push of a kernel and its
# initrd to a lab host: 2 s, assumed (a few MB over a LAN; not measured here).
# The engine's cap on a reference's boots from the steps' choice (orchestrator/bisect/search.py
# REFERENCE_BOOTS, times max_boots_per_commit); the drift guard's come on top.
REFERENCE_BOOTS = 2
# The confirmation and the revert, one pair a slot, on at most this many slots at once.
CONFIRM_SLOTS = 4
DURATIONS = {"cold_build": 552.0, "build": 83.9, "boot": 25.0, "push": 2.0}


@dataclass(frozen=True)
class Case:
    name: str
    between: float
    within: float
    drop: float
    threshold: float
    drift: float = 0.0  # relative slowdown over 75 boots of a host
    noops: float = 0.0


CASES = [
    Case("between 8%, within 2%, -15%", 0.08, 0.02, 0.15, -0.10),
    Case("between 3%, within 10%, -15%", 0.03, 0.10, 0.15, -0.10),
    Case("run noise 3% only, -10%", 0.0, 0.03, 0.10, -0.05),
    Case("8%/2%, -15%, host slows 10% over 75 boots", 0.08, 0.02, 0.15, -0.10, drift=0.10),
    Case("8%/2%, -15%, 30% no-op commits", 0.08, 0.02, 0.15, -0.10, noops=0.30),
]


@dataclass
class Params:
    slots: int = 1
    commits: int = 1000
    runs_per_boot: int = 3
    boots_per_commit: int = 2
    max_boots: int = 8
    alpha: float = 0.05
    error: float = 0.01
    nominate: float = NOMINATE
    visit_error: float = VISIT_ERROR
    revisit_error: float = REVISIT_ERROR
    pair_error: float = 0.01
    refresh_after: int = REFRESH_AFTER
    builders: int = 1  # kernels built at once: 1 = the controller's build CPUs, as the engine; 0 = one a host
    reevaluate: bool = True  # every measured commit's llr against the references as they are now
    refill: bool = False  # slots refilled as they free (else rounds as barriers)
    ahead: bool = True  # with refill: the one clock's build-ahead (barriers run both clocks)


@dataclass
class Slot:
    """One host: its boots by kernel (seq counts its boots)."""

    rng: random.Random
    boots: dict[str, list[Boot]] = field(default_factory=dict)
    seq: int = 0
    last_ref: int = 0


class Clock:
    """The lab's time: its builders (each cold first, incremental after), kernels built once and
    pushed, and whether builds run while guests do (build-ahead)."""

    def __init__(self, builders: int, ahead: bool) -> None:
        self.ahead = ahead
        self.free = [0.0] * builders
        self.warm = [False] * builders
        self.ready: dict[str, float] = {}
        self.now = 0.0

    def build(self, kernel: str, at: float) -> float:
        """When `kernel` is on the hosts: built (now or before) and pushed."""
        if kernel not in self.ready:
            b = min(range(len(self.free)), key=lambda i: max(at, self.free[i]) + DURATIONS[
                "build" if self.warm[i] else "cold_build"])
            start = max(at, self.free[b])
            self.free[b] = start + DURATIONS["build" if self.warm[b] else "cold_build"]
            self.warm[b] = True
            self.ready[kernel] = self.free[b]
        return self.ready[kernel] + DURATIONS["push"]

    def prefetch(self, kernels: list[str], at: float, until: float) -> None:
        """Build-ahead: `kernels` in order, each on the first free builder, while one is free
        before `until`."""
        if not self.ahead:
            return
        for kernel in kernels:
            if kernel in self.ready:
                continue
            if min(max(at, f) for f in self.free) >= until:
                return
            self.build(kernel, at)


@dataclass(frozen=True)
class Trial:
    right: bool
    wrong_confident: bool
    low: bool
    boots: int
    rounds: int
    wall: float  # without build-ahead (barriers), or the run's clock (refill)
    wall_ahead: float
    refused: bool = False
    skipped: bool = False


@dataclass
class Flight:
    """A visit being measured: its slot, commit, when it ends and what it found."""

    slot: int
    commit: str
    end: float
    llr: float | None
    untestable: bool


class Campaign:
    def __init__(self, case: Case, p: Params, seed: int) -> None:
        self.case, self.p = case, p
        rng = random.Random(seed)
        n = p.commits + 1
        self.shas = [hashlib.sha1(f"{seed} {i}".encode()).hexdigest() for i in range(n)]
        self.image = list(range(n))  # a no-op commit has its parent's image
        for i in range(1, n):
            if rng.random() < case.noops:
                self.image[i] = self.image[i - 1]
        real = [i for i in range(1, n) if self.image[i] == i]
        self.culprit = rng.choice(real)
        self.index = {s: i for i, s in enumerate(self.shas)}
        self.commits_of: dict[str, list[str]] = {}
        for i in range(1, n):
            self.commits_of.setdefault(self.shas[self.image[i]], []).append(self.shas[i])
        self.good, self.bad = self.shas[0], self.shas[-1]
        self.dag = Dag(self.shas[1:], {s: (self.shas[i - 1],) for i, s in enumerate(self.shas) if i})
        self.slots = [Slot(random.Random(seed * 1000 + k)) for k in range(p.slots)]
        self.point: dict[str, float] = {}
        self.untestable: set[str] = set()
        self.built: set[str] = set()
        self.llrs: dict[tuple[int, str], float] = {}  # (slot, image) -> its latest llr, as stored
        self.fresh: dict[tuple[int, str], tuple[int, float]] = {}  # re-evaluated: (slot's seq then, llr)
        self.measured: set[str] = set()  # commits whose image was booted (the others inherit)
        self.rounds = 0
        self.boots = 0
        builders = p.builders or p.slots
        self.clocks = [Clock(builders, p.ahead)] if p.refill else [Clock(builders, False), Clock(builders, True)]

    # ---- the simulated guest ---------------------------------------------------------------

    def value(self, key: str) -> float:
        commit = key.rsplit(":", 1)[-1]
        if commit.startswith("revert-"):
            return 100.0 if commit == f"revert-{self.shas[self.culprit]}" else 100.0 * (1 - self.case.drop)
        return 100.0 * (1 - self.case.drop) if self.index[commit] >= self.culprit else 100.0

    def boot(self, slot: Slot, key: str) -> None:
        c = self.case
        level = self.value(key) * (1 + slot.rng.gauss(0, c.between)) * (1 - c.drift / 75 * slot.seq)
        runs = tuple(max(1e-6, level * (1 + slot.rng.gauss(0, c.within))) for _ in range(self.p.runs_per_boot))
        slot.boots.setdefault(key, []).append(Boot(slot.seq, runs))
        slot.seq += 1
        self.boots += 1

    # ---- the search ------------------------------------------------------------------------

    def odds(self, slot: Slot, key: str) -> StepOdds | None:
        others = [bs for x, bs in slot.boots.items() if x not in (self.good, self.bad, key)]
        ss, df = pooled_boot_variance(others)
        return step_odds(slot.boots.get(self.good, []), slot.boots.get(self.bad, []), slot.boots.get(key, []),
                         ss, df)

    def image_of(self, commit: str) -> str:
        return self.shas[self.image[self.index[commit]]]

    def evidence(self) -> dict[str, float]:
        """Every commit with a measured image: the sum over the hosts of each host's llr for that
        image (boots and references of their own: independent evidence). With `reevaluate`,
        from all its boots against the host's references and noise as they are now (every boot
        informs every decision), else as stored at the end of its latest visit."""
        by_image: dict[str, float] = {}
        for (k, image), llr in self.llrs.items():
            if self.p.reevaluate:
                slot = self.slots[k]
                seq, cached = self.fresh.get((k, image), (-1, 0.0))
                if seq != slot.seq:
                    o = self.odds(slot, image)
                    cached = llr_of(o.p_bad) if o is not None else llr
                    self.fresh[(k, image)] = (slot.seq, cached)
                llr = cached
            by_image[image] = by_image.get(image, 0.0) + llr
        return {c: by_image[self.image_of(c)] for c in self.measured if self.image_of(c) in by_image}

    def impossible(self) -> set[str]:
        """Built commits whose image is their parent's (known once both are built)."""
        return {c for c in self.built if c in self.index and self.index[c] > 0 and self.image_of(c) == self.image_of(
            self.shas[self.index[c] - 1]) and self.shas[self.index[c] - 1] in self.built}

    def ready(self) -> list[str]:
        """Commits whose kernel is built or building (the build-ahead clock's; barriers take the
        same decisions for both clocks)."""
        return [c for image in self.clocks[-1].ready if image in self.commits_of for c in self.commits_of[image]]

    def move(self, busy: set[str] | None = None) -> Move:
        """The next move; with `busy` (refill), one pick for the slot that freed."""
        p = self.p
        return next_move(self.dag, self.evidence(), 1 if busy is not None else p.slots, p.error, self.untestable,
                         self.point, self.impossible(), busy or (), nominate=p.nominate,
                         confirmed={c: 1 for c in self.point}, total=p.slots if busy is not None else None,
                         ready=self.ready())

    # ---- measuring ------------------------------------------------------------------------

    def refresh(self, slot: Slot) -> None:
        """The drift guard (the judge's): both references again when REFRESH_AFTER boots passed
        since either's last one, the one that went first last time second."""
        latest = min(slot.boots[ref][-1].seq for ref in (self.good, self.bad))
        if slot.seq - 1 - latest < self.p.refresh_after:
            return
        order = (self.good, self.bad) if slot.last_ref % 2 == 0 else (self.bad, self.good)
        for ref in order:
            self.boot(slot, ref)
        slot.last_ref += 1

    def endpoints(self, k: int) -> tuple[int, bool]:
        """Slot k's own references, booted in A B B A pairs until its stop rule says (the engine
        checks every host at once and starts when all have); (boot pairs, refused)."""
        slot, p = self.slots[k], self.p
        n = 0
        while True:
            for ref in ((self.good, self.bad) if n % 2 == 0 else (self.bad, self.good)):
                self.boot(slot, ref)
            n += 1
            check = check_endpoints(slot.boots[self.good], slot.boots[self.bad], "higher",
                                    Threshold("relative", self.case.threshold), p.runs_per_boot, p.max_boots,
                                    p.alpha, p.error)
            step = endpoints_next(check, n, 2 * p.max_boots, early=True)  # as the engine's commit search
            if step is not Next.MORE:
                return n, step is Next.REFUSE

    def measure(self, k: int, commit: str) -> tuple[int, float | None, bool]:
        """One visit of slot k to `commit`: boots (to it, or to a reference when the step's
        decision is limited by the references) until the visit ends; (boots, llr, untestable)."""
        slot, p = self.slots[k], self.p
        key = self.image_of(commit)
        self.built.add(commit)
        self.measured.add(commit)
        have = len(slot.boots.get(key, []))
        first = not any(key in s.boots for s in self.slots)
        cap = min(have + p.max_boots, TOTAL_CAP * p.max_boots)
        min_boots = p.boots_per_commit if first else have + 1
        error = p.visit_error if first else p.revisit_error
        before = self.boots
        while True:
            n = len(slot.boots.get(key, []))
            o = self.odds(slot, key) if n else None
            v = visit(o, n, min_boots, cap, error)
            if v is not Visit.MORE:
                break
            self.refresh(slot)
            target = Target.STEP if n < min_boots else next_boot(slot.boots[self.good], slot.boots[self.bad],
                                                                 slot.boots.get(key, []))
            chosen = {Target.STEP: key, Target.GOOD: self.good, Target.BAD: self.bad}[target]
            if chosen != key and len(slot.boots[chosen]) >= REFERENCE_BOOTS * p.max_boots:
                chosen = key  # the engine's cap on the references' boots from the steps' choice
            self.boot(slot, chosen)
        llr = llr_of(o.p_bad) if o is not None else None
        return self.boots - before, llr, v is Visit.APART or (v is Visit.UNCLEAR and n >= TOTAL_CAP * p.max_boots)

    def publish(self, f: Flight) -> None:
        if f.llr is not None:
            self.llrs[(f.slot, self.image_of(f.commit))] = f.llr
        if f.untestable:
            self.untestable.add(f.commit)

    def confirm(self, culprit: str, tag: str, at: float, mass: float) -> None:
        """The culprit against its parent and bad with the culprit reverted against bad, on
        fresh boots of their own (keys tagged), each pair interleaved (A B B A): one slot takes
        turns; with more slots, up to CONFIRM_SLOTS of them each measure one pair (confirmation,
        revert, confirmation, revert) side by side, until their summed evidence settles it
        (measure.pairs.settled); the sum goes to the culprit's posterior. Advances every clock."""
        p = self.p
        parent = self.shas[self.index[culprit] - 1]
        revert = f"revert-{culprit}"
        self.built |= {parent, culprit}
        used = range(min(len(self.slots), CONFIRM_SLOTS))
        sides = [(k, f"{tag}:a:{self.image_of(parent)}", f"{tag}:b:{self.image_of(culprit)}", 1) if j % 2 == 0 else
                 (k, f"{tag}:a:{self.bad}", f"{tag}:b:{revert}", -1)
                 for j, k in enumerate(used if len(used) > 1 else [0, 0])]
        gaps = []
        for k, _a, _b, sign in sides:
            slot = self.slots[k]
            gaps.append(sign * (sum(x.value for x in slot.boots[self.bad]) / len(slot.boots[self.bad])
                                - sum(x.value for x in slot.boots[self.good]) / len(slot.boots[self.good])))
        n = 0
        while True:
            states = []
            for (k, ka, kb, _sign), gap in zip(sides, gaps):
                slot = self.slots[k]
                if len(slot.boots.get(ka, [])) < p.max_boots:
                    for x in ((ka, kb) if n % 2 == 0 else (kb, ka)):
                        self.boot(slot, x)
                ss, df = pooled_boot_variance([bs for x, bs in slot.boots.items() if x not in (ka, kb)])
                states.append(pair(slot.boots[ka], slot.boots[kb], gap, ss, df, p.pair_error))
            n += 1
            if n >= 2 and settled(states, p.max_boots, p.pair_error, llr_of(mass)):
                break
        self.point[culprit] = self.point.get(culprit, 0.0) + sum(s.log_bf for s in states)
        per_slot = [0] * len(self.slots)
        for (k, *_rest), state in zip(sides, states):
            per_slot[k] += 2 * state.boots
        boot = DURATIONS["boot"]
        for clock in self.clocks:
            t0 = max(at, clock.now)
            first = max(t0, clock.build(parent, t0), clock.build(culprit, t0))
            clock.prefetch([revert], t0, first + boot)  # builds while the first pair boots
            second = max(t0, clock.build(revert, t0 if clock.ahead else first))
            if len(used) > 1:
                clock.now = max((second if j % 2 else first) + per_slot[k] * boot for j, k in enumerate(used))
            else:  # one slot: the revert's boots wait for its build
                clock.now = max(first, second) + per_slot[0] * boot

    # ---- rounds as barriers -----------------------------------------------------------------

    def barrier_round(self, picks: tuple[str, ...]) -> None:
        """The picks measured in parallel, pick j on slot j; the round ends with its slowest slot.
        With build-ahead, while it measures, the builders build the next round's picks."""
        before = self.evidence()
        flights = []
        for k, commit in enumerate(picks):
            boots, llr, untestable = self.measure(k, commit)
            flights.append((boots, Flight(k, commit, 0.0, llr, untestable)))
        nxt = [c for _p, o in ahead(self.dag, before, picks, len(self.slots), self.p.nominate, self.untestable,
                                    self.impossible(), self.ready()) for c in o]
        for clock in self.clocks:
            start = clock.now
            ends = [max(start, clock.build(self.image_of(f.commit), start)) + boots * DURATIONS["boot"]
                    for boots, f in flights]
            clock.now = max(ends)
            clock.prefetch([self.image_of(c) for c in nxt], start, clock.now)
        for _b, f in flights:
            self.publish(f)
        self.rounds += 1

    def run_barriers(self) -> Move:
        for _ in range(400):
            m = self.move()
            if m.act is Act.CONFIRM:
                self.confirm(m.culprit, f"confirm{len(self.point)}", 0.0, m.mass)
                continue
            if m.act is not Act.SEARCH or not m.picks:
                return m
            self.barrier_round(m.picks)
        return m

    # ---- slots refilled as they free --------------------------------------------------------

    def run_refill(self) -> Move:
        clock = self.clocks[0]
        free = [clock.now] * len(self.slots)
        flying: list[Flight] = []
        for _ in range(4000):
            t = min(free)
            k = free.index(t)
            for f in [f for f in flying if f.end <= t]:
                self.publish(f)
                flying.remove(f)
            busy = {f.commit for f in flying}
            m = self.move(busy)
            if m.act is not Act.SEARCH or not m.picks:
                if flying:  # wait for what is in flight: it may change the answer
                    free[k] = min(f.end for f in flying)
                    continue
                if m.act is Act.CONFIRM:
                    clock.now = t
                    self.confirm(m.culprit, f"confirm{len(self.point)}", t, m.mass)
                    free = [clock.now] * len(self.slots)
                    continue
                return m
            commit = m.picks[0]
            boots, llr, untestable = self.measure(k, commit)
            start = max(t, clock.build(self.image_of(commit), t))
            flying.append(Flight(k, commit, start + boots * DURATIONS["boot"], llr, untestable))
            free[k] = flying[-1].end
            self.rounds += 1
            nxt = [c for _p, o in ahead(self.dag, self.evidence(), sorted(busy | {commit}, key=self.index.__getitem__),
                                        len(self.slots), self.p.nominate, self.untestable, self.impossible(),
                                        self.ready()) for c in o]
            clock.prefetch([self.image_of(c) for c in nxt], t, min(f.end for f in flying))
        return m

    # ---- the campaign ---------------------------------------------------------------------

    def run(self) -> Trial:
        p = self.p
        ends = [self.endpoints(k) for k in range(len(self.slots))]
        first = [self.image_of(c) for c in self.move().picks]
        for clock in self.clocks:
            ready = max(clock.build(self.good, 0.0), clock.build(self.bad, 0.0))
            clock.now = ready + 2 * max(e[0] for e in ends) * DURATIONS["boot"]
            clock.prefetch(first, 0.0, clock.now)  # the first picks build while the endpoints boot
        if ends[0][1]:  # the home host's check refuses the campaign (another host's would leave the lab)
            return Trial(False, False, True, self.boots, 0, self.clocks[0].now, self.clocks[-1].now, refused=True)
        m = self.run_refill() if p.refill else self.run_barriers()
        if p.refill:  # visits, in waves of S: the rounds a barrier would have needed at best
            self.rounds = -(-self.rounds // p.slots)
        found = m.act is Act.DONE
        right = found and m.culprit == self.shas[self.culprit]
        confident = found and m.mass >= 0.95
        return Trial(right, confident and not right, not confident, self.boots, self.rounds, self.clocks[0].now,
                     self.clocks[-1].now, skipped=bool(self.untestable))
