"""One simulated campaign driven by the pure search core (orchestrator.bisect.posterior and
rounds, the endpoint stop rule, stats.step_odds) with a simulated measurement: NOT the engine.

The guests follow bench/bisect_accuracy.py's nested noise model (a boot's level is the commit's
value times a per-boot offset, the between-boot CoV; each run adds the within-boot CoV; the host
may slow down linearly). Each slot is a lab host with its own references and noise pool: a step
is judged only against its own host's references, as the engine does. Wall time is counted
from measured durations (DURATIONS) with rounds as barriers (a round ends when its slowest slot
does), once with build-ahead and once without, on the same trial."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from orchestrator.bisect.endpoints import Next, check_endpoints, endpoints_next
from orchestrator.bisect.posterior import Dag, Kind, llr_of
from orchestrator.bisect.rounds import TOTAL_CAP, VISIT_ERROR, Target, Visit, ahead, next_boot, pair, plan, visit
from orchestrator.campaign import Threshold
from orchestrator.measure.judge import REFRESH_AFTER  # the drift guard's, as the engine's
from orchestrator.stats import Boot, pooled_boot_variance, step_odds

# Measured durations (seconds), docs/kernel-builds.md (make bench-build, 2 cores, 2026-11-22):
# cold build 552 s; "fresh build directory, warm ccache" 83.9 s stands for a build after a jump
# across the range (a one-file change is 12.3 s, a wide header change about a cold build).
# A boot of the demo: about 23 s for 15 s of fio (issue 19, measured; boot to the agent's hello
# is 3.75 s of it, docs/boot-time.md).
DURATIONS = {"cold_build": 552.0, "build": 83.9, "boot": 23.0}


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
    visit_error: float = VISIT_ERROR
    pair_error: float = 0.01
    refresh_after: int = REFRESH_AFTER


@dataclass
class Slot:
    """One host: its boots by commit (seq counts its boots), its builds, its clock."""

    rng: random.Random
    boots: dict[str, list[Boot]] = field(default_factory=dict)
    built: set[str] = field(default_factory=set)
    seq: int = 0
    last_ref: int = 0


@dataclass(frozen=True)
class Trial:
    right: bool
    wrong_confident: bool
    low: bool
    boots: int
    rounds: int
    wall: float
    wall_ahead: float
    refused: bool = False


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
        self.good, self.bad = self.shas[0], self.shas[-1]
        self.dag = Dag(self.shas[1:], {s: (self.shas[i - 1],) for i, s in enumerate(self.shas) if i})
        self.slots = [Slot(random.Random(seed * 1000 + k)) for k in range(p.slots)]
        self.point: dict[str, float] = {}
        self.untestable: set[str] = set()
        self.measured: set[str] = set()  # commits booted or inherited
        self.wall = self.wall_ahead = 0.0
        self.rounds = 0
        self.ready: list[set[str]] = [set() for _ in self.slots]  # built ahead per slot

    # ---- the simulated guest ---------------------------------------------------------------

    def value(self, key: str) -> float:
        commit = key.rsplit(":", 1)[-1]
        if commit.startswith("revert-"):
            return 100.0 if commit == f"revert-{self.shas[self.culprit]}" else 100.0 * (1 - self.case.drop)
        return 100.0 * (1 - self.case.drop) if self.index[commit] >= self.culprit else 100.0

    def boot(self, slot: Slot, commit: str) -> None:
        c = self.case
        level = self.value(commit) * (1 + slot.rng.gauss(0, c.between)) * (1 - c.drift / 75 * slot.seq)
        runs = tuple(max(1e-6, level * (1 + slot.rng.gauss(0, c.within))) for _ in range(self.p.runs_per_boot))
        slot.boots.setdefault(commit, []).append(Boot(slot.seq, runs))
        slot.seq += 1

    def build(self, k: int, commit: str) -> tuple[float, float]:
        """Seconds to have `commit` built on slot k: (without, with build-ahead)."""
        slot = self.slots[k]
        if commit in slot.built:
            return 0.0, 0.0
        cost = DURATIONS["build"] if slot.built else DURATIONS["cold_build"]
        slot.built.add(commit)
        return cost, (0.0 if commit in self.ready[k] else cost)

    # ---- the search ------------------------------------------------------------------------

    def odds(self, slot: Slot, commit: str):
        others = [bs for x, bs in slot.boots.items() if x not in (self.good, self.bad, commit)]
        ss, df = pooled_boot_variance(others)
        return step_odds(slot.boots.get(self.good, []), slot.boots.get(self.bad, []), slot.boots.get(commit, []),
                         ss, df)

    def image_of(self, commit: str) -> str:
        return self.shas[self.image[self.index[commit]]]

    def evidence(self) -> dict[str, float]:
        """Every measured commit's llr: the sum over the hosts that booted its image (boots and
        references of their own: independent evidence), shared by the commits of one image."""
        by_image: dict[str, float] = {}
        for slot in self.slots:
            for commit in slot.boots:
                if commit in (self.good, self.bad) or commit.startswith("revert-"):
                    continue
                o = self.odds(slot, commit)
                if o is not None:
                    by_image[commit] = by_image.get(commit, 0.0) + llr_of(o.p_bad)
        return {c: by_image[self.image_of(c)] for c in self.measured if self.image_of(c) in by_image}

    def impossible(self) -> set[str]:
        """Built commits whose image is their parent's (known once both are built)."""
        built = set().union(*(s.built for s in self.slots))
        return {c for c in built if c in self.index and self.index[c] > 0 and self.image_of(c) == self.image_of(
            self.shas[self.index[c] - 1]) and self.shas[self.index[c] - 1] in built}

    # ---- measuring ------------------------------------------------------------------------

    def key(self, commit: str) -> str:
        """The boots' key: the commit's kernel image (a no-op commit boots its parent's)."""
        return self.image_of(commit) if commit in self.index else commit

    def refresh(self, slot: Slot) -> int:
        """The drift guard: both references again when REFRESH_AFTER boots passed."""
        if slot.seq - slot.last_ref < self.p.refresh_after:
            return 0
        order = (self.good, self.bad) if slot.last_ref % 2 == 0 else (self.bad, self.good)
        for ref in order:
            self.boot(slot, ref)
        slot.last_ref = slot.seq
        return 2

    def endpoints(self, k: int) -> tuple[int, float, bool]:
        """Slot k's references, booted in A B B A pairs until the stop rule says; (boots, seconds,
        refused)."""
        slot, p = self.slots[k], self.p
        t = self.build(k, self.good)[0] + self.build(k, self.bad)[0]
        for ref in (self.good, self.bad):
            self.ready[k].add(ref)
        n = 0
        while True:
            for ref in ((self.good, self.bad) if n % 2 == 0 else (self.bad, self.good)):
                self.boot(slot, ref)
            n += 1
            check = check_endpoints(slot.boots[self.good], slot.boots[self.bad], "higher",
                                    Threshold("relative", self.case.threshold), p.runs_per_boot, p.max_boots,
                                    p.alpha, p.error)
            step = endpoints_next(check, n, 2 * p.max_boots)
            if step is not Next.MORE:
                slot.last_ref = slot.seq
                return 2 * n, t + 2 * n * DURATIONS["boot"], step is Next.REFUSE

    def measure(self, k: int, commit: str) -> int:
        """One visit of slot k to `commit`: boots (to it, or to a reference when the step's
        decision is limited by the references) until the visit ends; the boots it took."""
        slot, p = self.slots[k], self.p
        key = self.key(commit)
        have = len(slot.boots.get(key, []))
        first = key not in {x for s in self.slots for x in s.boots}
        cap = min(have + p.max_boots, TOTAL_CAP * p.max_boots)
        min_boots = p.boots_per_commit if first else have + 1
        error = p.visit_error if first else p.visit_error / 10
        used = 0
        while True:
            n = len(slot.boots.get(key, []))
            v = visit(self.odds(slot, key) if n else None, n, min_boots, cap, error)
            if v is not Visit.MORE:
                break
            used += self.refresh(slot)
            target = Target.STEP if n < min_boots else next_boot(slot.boots[self.good], slot.boots[self.bad],
                                                                 slot.boots.get(key, []))
            self.boot(slot, {Target.STEP: key, Target.GOOD: self.good, Target.BAD: self.bad}[target])
            used += 1
        if v is Visit.APART or (v is Visit.UNCLEAR and n >= TOTAL_CAP * p.max_boots):
            self.untestable.add(commit)
        return used

    def pair(self, k: int, a: str, b: str, expected_sign: int, tag: str) -> tuple[float, int]:
        """`b` against `a` on fresh boots of their own (keys tagged), interleaved, until the
        sequential rule settles it; (log Bayes factor, boots)."""
        slot, p = self.slots[k], self.p
        ka, kb = f"{tag}:a:{a}", f"{tag}:b:{b}"
        gap = (sum(x.value for x in slot.boots[self.bad]) / len(slot.boots[self.bad])
               - sum(x.value for x in slot.boots[self.good]) / len(slot.boots[self.good]))
        n = 0
        while True:
            for x in ((ka, kb) if n % 2 == 0 else (kb, ka)):
                self.boot(slot, x)
            n += 1
            ss, df = pooled_boot_variance([bs for x, bs in slot.boots.items() if x not in (ka, kb)])
            state = pair(slot.boots[ka], slot.boots[kb], expected_sign * gap, ss / max(1, df), df, p.max_boots,
                         p.pair_error)
            if state.settled:
                return state.log_bf, 2 * n

    def confirm(self, culprit: str, tag: str) -> tuple[int, float, float]:
        """The culprit against its parent and (in parallel on a second slot, else after it when
        the first did not speak against it) bad with the culprit reverted against bad; their
        evidence goes to the culprit's posterior. (boots, seconds, seconds with build-ahead)."""
        parent = self.shas[self.index[culprit] - 1]
        revert = f"revert-{culprit}"
        kr = 1 if len(self.slots) > 1 else 0
        builds = [self.build(0, parent), self.build(0, culprit), self.build(kr, revert)]
        bf1, n1 = self.pair(0, parent, culprit, 1, tag)
        self.point[culprit] = self.point.get(culprit, 0.0) + bf1
        n2 = 0
        if kr or bf1 > 0:
            bf2, n2 = self.pair(kr, self.bad, revert, -1, tag)
            self.point[culprit] += bf2
        boots = n1 + n2 if not kr else max(n1, n2)
        t = sum(b[0] for b in builds[:2]) + (0 if kr else builds[2][0])
        ta = sum(b[1] for b in builds[:2]) + (0 if kr else builds[2][1])
        if kr:
            t, ta = max(t, builds[2][0]), max(ta, builds[2][1])
        return n1 + n2, t + boots * DURATIONS["boot"], ta + boots * DURATIONS["boot"]

    def search_round(self, picks: tuple[str, ...]) -> None:
        """The picks measured in parallel, pick j on slot j; the round ends with its slowest slot.
        Build-ahead: while it measures, each slot builds the next round's picks it may get."""
        before = self.evidence()
        spans, spans_ahead, own = [], [], [0.0] * len(self.slots)
        for k, commit in enumerate(picks):
            t, own[k] = self.build(k, commit)
            self.measured.add(commit)
            boots = self.measure(k, commit)
            spans.append(t + boots * DURATIONS["boot"])
            spans_ahead.append(own[k] + boots * DURATIONS["boot"])
        self.wall += max(spans)
        self.wall_ahead += max(spans_ahead)
        self.build_ahead(picks, before, max(spans_ahead), own)

    def build_ahead(self, picks: tuple[str, ...], before: dict[str, float], span: float, own: list[float]) -> None:
        """Each slot's build CPUs, once its own pick is built, build what it may measure next."""
        self.ready = [set() for _ in self.slots]
        outcomes = ahead(self.dag, before, picks, len(self.slots), self.p.error, self.untestable,
                         self.impossible())
        for k in range(len(self.slots)):
            free = span - own[k]
            todo = [o[k] for _p, o in outcomes if k < len(o) and o[k] not in self.slots[k].built]
            fits = int(free // DURATIONS["build"])
            self.ready[k] = set(list(dict.fromkeys(todo))[:fits])

    # ---- the campaign ---------------------------------------------------------------------

    def run(self) -> Trial:
        p = self.p
        ends = [self.endpoints(k) for k in range(len(self.slots))]
        boots = sum(e[0] for e in ends)
        self.wall = self.wall_ahead = max(e[1] for e in ends)
        if any(e[2] for e in ends):
            return Trial(False, False, True, boots, 0, self.wall, self.wall_ahead, refused=True)
        first = plan(self.dag, {}, len(self.slots), p.error).picks
        for k, commit in enumerate(first):  # built while the endpoints boot
            self.ready[k].add(commit)
        confirmed: dict[str, int] = {}
        for _ in range(400):
            r = plan(self.dag, self.evidence(), len(self.slots), p.error, self.untestable, self.point,
                     self.impossible())
            if r.answer.kind is Kind.ONLY_SKIPPED or (r.answer.kind is Kind.SEARCHING and not r.picks):
                break
            if r.answer.kind is Kind.FOUND:
                c = r.answer.culprit
                # confirmed and still the answer, or confirmed twice: done
                if (confirmed.get(c, 0) and self.point[c] > 0) or confirmed.get(c, 0) >= 2:
                    break
                confirmed[c] = confirmed.get(c, 0) + 1
                n, t, ta = self.confirm(c, f"confirm{len(confirmed)}.{confirmed[c]}")
                boots += n
                self.wall, self.wall_ahead = self.wall + t, self.wall_ahead + ta
                continue
            before = sum(len(bs) for s in self.slots for bs in s.boots.values())
            self.search_round(r.picks)
            self.rounds += 1
            boots += sum(len(bs) for s in self.slots for bs in s.boots.values()) - before
        return self.trial(r, boots)

    def trial(self, r, boots: int) -> Trial:
        found = r.answer.kind is Kind.FOUND
        mass = r.answer.mass
        right = found and r.answer.culprit == self.shas[self.culprit]
        confident = found and mass >= 0.95
        return Trial(right, confident and not right, not confident, boots, self.rounds, self.wall,
                     self.wall_ahead)
