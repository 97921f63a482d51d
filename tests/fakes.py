"""The one set of fakes of the measurement layer's ports (orchestrator/ports.py), for the bisect
engine and the compare runner alike: tests only, never what a user gets."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import AbstractSet, Any, Callable, Iterator, Mapping, Sequence

from orchestrator.agent.protocol import ExecResult
from orchestrator.compare.variant import Variant
from orchestrator.decisions import Decided
from orchestrator.errors import BootFailed, BuildFailed, HostFailed, InfraError, WorkloadFailed
from orchestrator.ports import Build, KernelArtifact
from orchestrator.stats import Boot
from orchestrator.store import boot_from
from orchestrator.workloads.clock import BootClock
from orchestrator.workloads.guest import check
from orchestrator.workloads.result import MeasuredMetric, RunResult

SCHEDULERS = ("mq-deadline", "kyber", "bfq", "none")
# Relative throughput by the first disk's I/O scheduler (the guest boots with mq-deadline).
SCHEDULER_SPEED = {"none": 1.5, "mq-deadline": 1.0, "bfq": 0.75, "kyber": 1.375}
# What the agent returns of a guest whose fio it killed at its budget (guest-agent/stall.go).
STALL = ("load average: 3.02 1.10 0.40 3/61 415", "clocksource: hpet",
         "block devices with I/Os in flight: sda 16",
         "tasks of the command's process group 412 (pid/tid state wchan comm):", "  412/415 D io_schedule fio",
         "other tasks in state D: none", "kernel log, its last 1 records:",
         "  [  125.000100] INFO: task fio:415 blocked for more than 120 seconds.")


def fake_kernel(commit: str, sha256: str) -> KernelArtifact:
    return KernelArtifact(Path(f"/fake/{commit}"), sha256, description=f"commit {commit}", commit=commit)


class FakeBuilder:
    """Every commit builds its own image, except `broken` ones (a compile error) and groups in
    `same_image` (commits that change nothing the kernel is built from: one image per group).
    `same_image` is a set (one group) or a list of sets."""

    def __init__(self, broken: AbstractSet[str] = frozenset(),
                 same_image: AbstractSet[str] | Sequence[AbstractSet[str]] = frozenset(),
                 kernels: Path | None = None) -> None:
        self.broken = broken
        self.groups = list(same_image) if isinstance(same_image, Sequence) else [same_image]
        self.built: list[str] = []
        self.kernels = kernels  # given: each image is a file there, its .config beside it (the kernel store's layout)

    def build(self, commit: str) -> Build:
        self.built.append(commit)
        if commit in self.broken:
            raise BuildFailed("drivers/scsi/sd.c:12:3: error: expected ';' before '}' token")
        key = next((f"same-{i}" for i, g in enumerate(self.groups) if commit in g), commit)
        sha = hashlib.sha256(key.encode()).hexdigest()
        if self.kernels is None:
            return Build(fake_kernel(commit, sha))
        entry = self.kernels / sha
        entry.mkdir(parents=True, exist_ok=True)
        (entry / "bzImage").write_bytes(key.encode())
        (entry / "config").write_text(f"# Linux/x86 kernel of {key}\nCONFIG_64BIT=y\nCONFIG_VIRTIO_BLK=y\n")
        return Build(KernelArtifact(entry / "bzImage", sha, description=f"commit {commit}", commit=commit))


class FakeKernels:
    """A comparison's variants' kernels: the file a variant names, or /built/<commit>."""

    def kernel(self, variant: Variant) -> KernelArtifact:
        image = Path(variant.kernel or f"/built/{variant.commit}")
        return KernelArtifact(image, hashlib.sha256(str(image).encode()).hexdigest(), variant.modules,
                              description=variant.source(), commit=variant.commit or "")


class FakeAgent:
    def __init__(self, sysfs: dict[str, str]) -> None:
        self.sysfs = sysfs

    def get(self, path: str) -> bytes:
        if path not in self.sysfs:
            raise WorkloadFailed(f"agent get failed: open {path}: no such file or directory")
        value = self.sysfs[path]
        if path.endswith("/scheduler"):
            return (" ".join(f"[{s}]" if s == value else s for s in SCHEDULERS) + "\n").encode()
        return (value + "\n").encode()


class FakeGuest:
    """A booted guest with a pretend sysfs: its disks' schedulers and queue knobs and one knob; `commands`
    lists what was executed in it."""

    def __init__(self, disks: list[str]) -> None:
        self.hello = {"block_devices": [{"name": d} for d in disks]}
        self.boot_seconds = 0.01
        self.sysfs = {f"/sys/block/{d}/queue/scheduler": "mq-deadline" for d in disks}
        for d in disks:  # block queue knobs at the kernel's defaults (a settings bisection sets them)
            self.sysfs |= {f"/sys/block/{d}/queue/read_ahead_kb": "128", f"/sys/block/{d}/queue/nomerges": "0"}
        self.sysfs["/sys/kernel/knob"] = "0"
        self.agent = FakeAgent(self.sysfs)
        self.domain = None
        self.commands: list[list[str]] = []

    def exec(self, argv: list[str], **_kwargs: Any) -> ExecResult:
        self.commands.append(argv)
        if argv[:2] == ["sh", "-c"]:
            value, path = argv[4], argv[5]
            if path.endswith("/scheduler") and value not in SCHEDULERS:
                return ExecResult(1, "", False, b"", b"sh: write error: Invalid argument\n", 0.0)
            if path not in self.sysfs:
                return ExecResult(1, "", False, b"", b"sh: can't create: nonexistent directory\n", 0.0)
            if path.endswith("/scheduler") and value != self.sysfs[path]:  # bfq's tunable comes and goes with it
                tunable = path.replace("/scheduler", "/iosched/slice_idle")
                self.sysfs.pop(tunable, None)
                if value == "bfq":
                    self.sysfs[tunable] = "8"
            self.sysfs[path] = value
        return ExecResult(0, "", False, b"", b"", 0.0)


class FakeSession:
    """One guest: each run reads `value` with gaussian noise of CoV `within`, scaled by the
    first disk's I/O scheduler and, when the run names it, by numjobs (+10% a job beyond one).
    In a guest that `stalls`, the run after the measurer's `stall_after` runs is killed at its
    budget by the agent (WorkloadFailed, timed_out, the agent's snapshot STALL in its detail)."""

    def __init__(self, measurer: "FakeMeasurer", guest: FakeGuest, value: float, fails: str = "",
                 other_metric: bool = False, also: Mapping[str, float] | None = None, stalls: bool = False) -> None:
        self.measurer, self.guest, self.value, self.fails = measurer, guest, value, fails
        self.other_metric, self.also, self.stalls = other_metric, dict(also or {}), stalls
        self.runs = 0
        self.boot_seconds = 0.01
        self.host = measurer.host or "local"
        self.accel, self.host_cpu = "tcg", "Fake CPU @ 2.00GHz"  # what a PoolSession tells of its host
        self.clock = BootClock("hpet").to_dict()  # and of its guest's clock

    def run(self, params: Mapping[str, Any] | None = None, nice: int | None = None) -> RunResult:
        m = self.measurer
        if m.crash_after is not None and len(m.calls) >= m.crash_after:
            raise KeyboardInterrupt("controller killed")
        if self.host in m.host_fails_after and m.runs_on[self.host] >= m.host_fails_after[self.host]:
            raise HostFailed(self.host, "ssh: connection lost")
        m.runs_on[self.host] += 1
        if m.run_s:
            time.sleep(m.run_s)
        if self.fails:
            raise WorkloadFailed(self.fails)
        if self.stalls and self.runs == m.stall_after:
            check(ExecResult(-1, "SIGKILL", True, b"", b"", 126.0, STALL), ["fio", "--output-format=json"])
        self.runs += 1
        sched = self.guest.sysfs.get("/sys/block/sda/queue/scheduler", "mq-deadline")
        params = dict(params or {})
        m.calls.append((sched, params, nice))
        value = m.rng.gauss(self.value, self.value * m.noise) * SCHEDULER_SPEED[sched]
        value *= 1 + 0.1 * (int(params.get("numjobs", 1)) - 1)
        name = "other" if self.other_metric else m.metric
        metrics = {name: MeasuredMetric(name, value, "IO/s", "higher")}
        metrics |= {n: MeasuredMetric(n, m.rng.gauss(v, v * m.noise), "", "none") for n, v in self.also.items()}
        return RunResult("fake", params, metrics, {"fake": "true"}, ({}, {}), ({}, {}), 5.0, lab_host=self.host,
                         accel=m.accel)


class FakeMeasurer:
    """The metric of a guest booted with a kernel, the nested way real guests behave:
    `value_of(kernel.commit)` x a per-boot offset (gaussian, CoV `between`) x a host drift
    (`drift` per boot, linear over the campaign), each run adding gaussian noise of CoV `noise`
    (within the boot). `misread[commit] = (n, factor)`: the first n boots of that commit read
    `factor` times the value (a host disturbance that lasted while it was measured);
    `hangs[commit] = n`: its first n guests hang in their boot (BootFailed, hung);
    `stalls[commit] = n`: in its first n guests the run after `stall_after` runs stalls (the
    agent kills it at its budget: WorkloadFailed, timed_out). In guests
    of the commits of `workload_fails` the workload fails with the given message; in
    `metric_missing` ones it reports another metric. `crash_after`: the controller is killed
    (KeyboardInterrupt) at that many runs. Guests have `disks` data disks (sda, sdb, ...) and
    run on lab host `host`, whose guests read `speed[host]` times the value (hosts differ);
    `host_fails_after[h] = n`: host h fails (HostFailed) at its n-th run; `move_on` then sends
    the next guest to the first of `spare_hosts` (unless the host was `asked` for), and with
    none left there is no host up.
    `run_s`: each run takes that long (a sleep, as a guest's run leaves the controller idle), so
    slots measuring at once overlap in time as real guests do.
    `also[name](commit)`: another metric every run reports beside `metric` (a watched one), with
    the same nested noise; `accel`: the accelerator the runs say they ran under.
    `booted` lists each boot's commit (or image path), `kernels` its artifact, `guests` its
    guest, `calls` each run's (scheduler of sda, params, nice)."""

    def __init__(self, value_of: Callable[[str], float] = lambda _commit: 8000.0, noise: float = 0.03,
                 seed: int = 0, boot_broken: AbstractSet[str] = frozenset(), infra_after: int | None = None,
                 metric: str = "iops", between: float = 0.0, drift: float = 0.0,
                 misread: Mapping[str, tuple[int, float]] | None = None,
                 workload_fails: Mapping[str, str] | None = None, metric_missing: AbstractSet[str] = frozenset(),
                 crash_after: int | None = None, disks: int = 2, host: str | None = "local",
                 host_fails_after: Mapping[str, int] | None = None, spare_hosts: Sequence[str] = (),
                 asked: bool = False, speed: Mapping[str, float] | None = None, run_s: float = 0.0,
                 also: Mapping[str, Callable[[str], float]] | None = None, accel: str = "",
                 hangs: Mapping[str, int] | None = None, stalls: Mapping[str, int] | None = None,
                 stall_after: int = 1) -> None:
        self.value_of, self.noise, self.rng = value_of, noise, random.Random(seed)
        self.also, self.accel = dict(also or {}), accel
        self.run_s = run_s
        self.boot_broken, self.infra_after, self.metric = boot_broken, infra_after, metric
        self.between, self.drift, self.misread = between, drift, dict(misread or {})
        self.workload_fails, self.metric_missing = dict(workload_fails or {}), metric_missing
        self.crash_after, self.host = crash_after, host
        self.host_fails_after, self.spare_hosts, self.asked = dict(host_fails_after or {}), list(spare_hosts), asked
        self.speed = dict(speed or {})
        self.hangs = Counter(hangs or {})
        self.stalls, self.stall_after = Counter(stalls or {}), stall_after
        self.runs_on: Counter[str] = Counter()
        self.disks = [f"sd{chr(ord('a') + i)}" for i in range(disks)]
        self.boots = 0
        self.booted: list[str] = []
        self.kernels: list[KernelArtifact] = []
        self.appends: list[str | None] = []
        self.guests: list[FakeGuest] = []
        self.calls: list[tuple[str, dict[str, Any], int | None]] = []
        self.checked: list[KernelArtifact] = []

    def check(self, kernel: KernelArtifact) -> None:
        self.checked.append(kernel)

    def move_on(self) -> bool:
        if self.asked:
            return False
        self.host = None
        return True

    @contextmanager
    def boot(self, kernel: KernelArtifact, append: str | None = None) -> Iterator[FakeSession]:
        self.boots += 1
        if self.infra_after is not None and self.boots > self.infra_after:
            raise InfraError("libvirt could not start the guest: fake host failure")
        if self.host is None:
            if not self.spare_hosts:
                raise InfraError("no host is up")
            self.host = self.spare_hosts.pop(0)
        commit = kernel.commit or str(kernel.image)
        if commit in self.boot_broken:
            raise BootFailed("guest kernel failed to boot: Kernel panic - not syncing: fake", "console tail")
        if self.hangs[commit] > 0:
            self.hangs[commit] -= 1
            raise BootFailed("no answer from the guest agent within 180 s", "watchdog: BUG: soft lockup", hung=True)
        self.booted.append(commit)
        self.kernels.append(kernel)
        self.appends.append(append)
        value = self.value_of(commit) * (1 + self.rng.gauss(0.0, self.between)) * (1 + self.drift * self.boots)
        value *= self.speed.get(self.host, 1.0)
        count, factor = self.misread.get(commit, (0, 1.0))
        if self.booted.count(commit) <= count:
            value *= factor
        guest = FakeGuest(self.disks)
        self.guests.append(guest)
        also = {n: f(commit) * (1 + self.rng.gauss(0.0, self.between)) for n, f in self.also.items()}
        stalls = self.stalls[commit] > 0
        if stalls:
            self.stalls[commit] -= 1
        yield FakeSession(self, guest, value, self.workload_fails.get(commit, ""), commit in self.metric_missing, also,
                          stalls)


class FakeVcs:
    """`git bisect` over a history of commit names, in memory: the bisection simulator's stand-in
    for GitBisect (thousands of campaigns a minute). `parents[c]`: c's parents, the first parent
    first (without it, a line: each commit's parent is the one before); commits oldest first.
    Ancestry is the posterior's Dag over the whole history. Same choices as git's: of the
    remaining commits (bad's ancestry without the goods'), the one whose count of remaining
    ancestors is nearest half of them (the middle of the range on a line; ties to the older);
    `log` lists the marks so `replay` can restore them. The engine cases use real git; this only
    makes the simulations fast."""

    def __init__(self, commits: list[str], parents: Mapping[str, Sequence[str]] | None = None) -> None:
        from orchestrator.bisect.posterior import Dag

        self.commits = commits
        self.index = {c: i for i, c in enumerate(commits)}
        self.parents = {c: tuple(parents[c]) if parents is not None else ((commits[i - 1],) if i else ())
                        for i, c in enumerate(commits)}
        self.dag = Dag(commits, self.parents)
        self.repo = Path("/nonexistent/fake.git")
        self.marks: list[tuple[str, str]] = []
        self.reverts: dict[str, str] = {}

    def prepare(self) -> None:
        pass

    def resolve(self, rev: str, field: str) -> str:
        return rev

    def start(self, good: str, bad: str, first_parent: bool = False):
        self.good, self.bad, self.marks = good, bad, []
        return self._state()

    def restart(self, good: str, bad: str, first_parent: bool, marks: list[tuple[str, str]]):
        self.start(good, bad)
        self.marks = list(marks)
        return self._state()

    def mark(self, commit: str, verdict: str):
        self.marks.append((commit, verdict))
        return self._state()

    def _state(self):
        import numpy as np

        from orchestrator.backends.gitlog import BisectState

        bad = ([c for c, v in self.marks if v == "bad"] or [self.bad])[-1]
        goods = [self.good] + [c for c, v in self.marks if v == "good"]
        skipped = {self.index[c] for c, v in self.marks if v not in ("good", "bad")}
        alive = self.dag.ancestry(self.index[bad])
        for good in goods:
            alive &= ~self.dag.ancestry(self.index[good])
        hi = self.index[bad]
        rest = [i for i in np.flatnonzero(alive).tolist() if i != hi]
        left = [i for i in rest if i not in skipped]
        if not left:
            if rest:
                return BisectState("only_skipped", candidates=tuple(self.commits[i] for i in rest + [hi]))
            return BisectState("found", culprit=bad)
        below = self.dag.bad_mass(alive.astype(float))
        half = int(alive.sum()) // 2
        self._current = self.commits[min(left, key=lambda i: (abs(below[i] - half), i))]
        return BisectState("testing", len(left), max(1, len(left).bit_length() - 1))

    def current(self) -> str:
        return self._current

    def log(self) -> str:
        return "\n".join([f"git bisect start {self.bad} {self.good}"] + [f"git bisect {v} {c}" for c, v in self.marks])

    def replay(self, log: str, scratch: Path):
        lines = log.splitlines()
        self.bad, self.good = lines[0].split()[3:5]
        self.marks = [(ln.split()[3], ln.split()[2]) for ln in lines[1:]]
        return self._state()

    def parent(self, commit: str) -> str:
        return self.parents[commit][0]

    def is_ancestor(self, ancestor: str, commit: str) -> bool:
        if ancestor in self.index and commit in self.index:
            return self.dag.is_ancestor(ancestor, commit)
        return self.index.get(ancestor, -1) <= self.index.get(commit, -1)

    def rev_list(self, good: str, bad: str, first_parent: bool = False) -> str:
        import numpy as np

        inside = self.dag.ancestry(self.index[bad]) & ~self.dag.ancestry(self.index[good])
        listed = np.flatnonzero(inside)[::-1].tolist()
        if first_parent:  # the first-parent chain from bad down to good's ancestry
            listed, at = [], self.index[bad]
            while inside[at]:
                listed.append(at)
                at = self.index[self.parents[self.commits[at]][0]]
        return "".join(f"{self.commits[i]} {' '.join(self.parents[self.commits[i]][:1 if first_parent else None])}\n"
                       for i in listed)

    def revert(self, commit: str, onto: str):
        from orchestrator.backends.git_bisect import Revert

        if len(self.parents.get(commit, ())) > 1:  # as GitBisect: only a single-parent commit is reverted
            return Revert("", f"{commit[:12]} has {len(self.parents[commit])} parents; only a single-parent commit "
                              "is reverted")
        # onto a revert: the reverts chained ("revert-A+revert-B": the tip with A and B reverted)
        name = f"revert-{commit}" if onto in self.index else f"{onto}+revert-{commit}"
        self.reverts[name] = commit
        return Revert(name, "")


class MemoryStore:
    """What the engine reads and writes of Store, kept in memory: the bisection simulator's
    stand-in for the SQLite store (`make bench-bisect` runs thousands of campaigns, and the
    store's transactions were three quarters of their time). Same answers as Store for the
    engine: tests/unit/test_memory_store.py runs one campaign on both and compares every
    decision. The engine cases and every other test use the real store."""

    def __init__(self) -> None:
        self._campaigns: dict[int, SimpleNamespace] = {}
        self._builds: dict[int, list[SimpleNamespace]] = {}
        self._boots: dict[int, tuple[int, str]] = {}  # boot id -> (campaign, commit)
        self._boot_ends: dict[int, tuple[str, str]] = {}  # boot id -> (status, host)
        # campaign -> (commit, boot) -> each run's metrics, the boots in the order of their first run
        self._runs: dict[int, dict[tuple[str, int], list[dict[str, float]]]] = {}
        self._run_count: dict[int, int] = {}
        # boot -> the Boot last read (with its seq, values and facts, held): read again as it was,
        # the same object, its value computed once
        self._made: dict[int, tuple[int, tuple[float, ...], int, Boot, Any]] = {}
        self._decisions: dict[int, list[Decided]] = {}
        self._facts: dict[int, dict[str, Any]] = {}  # boot -> what its host did (Store: BootRow.facts)

    def new_campaign(self, name: str, spec: Mapping[str, Any], kind: str = "bisect") -> int:
        cid = len(self._campaigns) + 1
        self._campaigns[cid] = SimpleNamespace(id=cid, name=name, kind=kind, spec=json.dumps(spec, default=str),
                                               state="running", bisect_log="", result={})
        return cid

    def campaign(self, campaign_id: int) -> SimpleNamespace:
        return self._campaigns[campaign_id]

    def set_state(self, campaign_id: int, state: str, result: Mapping[str, Any] | None = None) -> None:
        row = self._campaigns[campaign_id]
        row.state = state
        if result is not None:
            row.result = json.loads(json.dumps(dict(result)))  # as the JSON column gives it back

    def set_bisect_log(self, campaign_id: int, log: str) -> None:
        self._campaigns[campaign_id].bisect_log = log

    def add_build(self, campaign_id: int, commit: str, status: str, **fields: Any) -> None:
        self._builds.setdefault(campaign_id, []).append(SimpleNamespace(commit=commit, status=status,
                                                                        sha256=fields.get("sha256", ""), **{
                                                                            k: v for k, v in fields.items()
                                                                            if k != "sha256"}))

    def builds(self, campaign_id: int) -> list[SimpleNamespace]:
        return list(self._builds.get(campaign_id, []))

    def start_boot(self, campaign_id: int, commit: str) -> int:
        boot_id = len(self._boots) + 1
        self._boots[boot_id] = (campaign_id, commit)
        return boot_id

    def end_boot(self, boot_id: int, status: str, boot_seconds: float = 0.0, error: str = "", host: str = "",
                 facts: Mapping[str, Any] | None = None) -> None:
        self._boot_ends[boot_id] = (status, host or self._boot_ends.get(boot_id, ("", ""))[1])
        if facts is not None:
            self._facts[boot_id] = dict(facts)

    def add_run(self, campaign_id: int, boot_id: int, commit: str, metrics: Mapping[str, float],
                raw: Mapping[str, Any]) -> int:
        self._runs.setdefault(campaign_id, {}).setdefault((commit, boot_id), []).append(
            {m: float(v) for m, v in metrics.items()})
        self._run_count[campaign_id] = self._run_count.get(campaign_id, 0) + 1
        return self._run_count[campaign_id]

    def boot_samples(self, campaign_id: int, metric: str, host: str | None = None,
                     legacy: bool = True, runs_per_boot: int | None = None) -> dict[str, list[Boot]]:
        """Store.boot_samples' answer, each boot's runs looked at only when the boot counts (a
        campaign simulated over several hosts reads its boots after every boot)."""
        by_boot: dict[tuple[str, int], list[float]] = {}
        hosts = None if host is None else ({host, ""} if legacy else {host})
        for (commit, boot_id), runs in list(self._runs.get(campaign_id, {}).items()):  # other slots add runs
            status, on = self._boot_ends.get(boot_id, ("booting", ""))
            if status == "lost" or (hosts is not None and on not in hosts):
                continue
            values = [metrics[metric] for metrics in runs if metric in metrics]
            if values:
                by_boot[(commit, boot_id)] = values
        need = runs_per_boot if runs_per_boot is not None else max(map(len, by_boot.values()), default=0)
        whole = sorted(((key, values) for key, values in by_boot.items()
                        if len(values) >= need or self._facts.get(key[1], {}).get("whole")), key=lambda kv: kv[0][1])
        out: dict[str, list[Boot]] = {}
        for seq, ((commit, boot), values) in enumerate(whole):
            facts = self._facts.get(boot, {})
            made = self._made.get(boot)
            if made is None or made[:3] != (seq, tuple(values), id(facts)):
                made = (seq, tuple(values), id(facts), boot_from(seq, values, facts, boot), facts)
                self._made[boot] = made
            out.setdefault(commit, []).append(made[3])
        return out

    def add_decision(self, campaign_id: int, d: Decided) -> None:
        self._decisions.setdefault(campaign_id, []).append(d)

    def decisions(self, campaign_id: int) -> list[Decided]:
        return list(self._decisions.get(campaign_id, []))


class FakeMaker:
    """A set bisection's candidates (orchestrator/setbisect/model.py CandidateMaker): good with
    the units applied, each candidate its own kernel whose `commit` is the sorted unit names
    joined by `,` (`good` for none), so FakeMeasurer(value_of=by_changes(...)) measures what the
    candidate's changes do. `needs[u] = v`: a candidate holding u without v does not build;
    `same_as_good`: units that make nothing different (a normalisation drops them: the
    candidate boots good's kernel). `made` lists each candidate made."""

    def __init__(self, needs: Mapping[str, str] | None = None, same_as_good: AbstractSet[str] = frozenset()) -> None:
        self.needs, self.same_as_good = dict(needs or {}), same_as_good
        self.made: list[frozenset[str]] = []

    def make(self, applied: frozenset[str]) -> Any:
        from orchestrator.setbisect.model import Made

        self.made.append(applied)
        for unit, needed in self.needs.items():
            if unit in applied and needed not in applied:
                raise BuildFailed(f"kernel/fake.c:1:1: error: {unit} needs {needed}")
        kept = applied - self.same_as_good
        name = ",".join(sorted(kept)) or "good"
        return Made(fake_kernel(name, hashlib.sha256(name.encode()).hexdigest()))


def by_changes(value: Callable[[frozenset[str]], float]) -> Callable[[str], float]:
    """FakeMeasurer's value_of for FakeMaker's kernels: `value` of the candidate's unit names."""
    return lambda commit: value(frozenset() if commit == "good" else frozenset(commit.split(",")))


class FakeKconfig:
    """`make olddefconfig` of a tiny Kconfig (a config bisection's normalisation, without a
    kernel tree): `symbols` maps CONFIG_X to its rules {"prompt": bool (default True: the .config
    decides), "depends": [...] (all must be y), "selects": [...], "default": value}. A selected
    symbol is y whatever it depends on (as Kconfig does, with a warning); one whose dependencies
    are off is n; one without a prompt takes its default; the rest take the .config's value, else
    the default. Also the kernel source of a `config` campaign (FakeConfigKernels)."""

    def __init__(self, symbols: Mapping[str, Mapping[str, Any]]) -> None:
        self.symbols = symbols
        self.runs = 0

    def normalise(self, text: str) -> str:
        from orchestrator.kbuild.configdiff import render, values

        self.runs += 1
        asked = values(text)
        value = {name: "n" for name in self.symbols}
        for _ in range(len(self.symbols) + 1):
            new = {name: self._value(name, rules, asked, value) for name, rules in self.symbols.items()}
            if new == value:
                break
            value = new
        return "".join(render(name, value[name]) + "\n" for name in sorted(self.symbols))

    def _value(self, name: str, rules: Mapping[str, Any], asked: Mapping[str, str], value: Mapping[str, str]) -> str:
        if any(name in self.symbols[s].get("selects", ()) and value[s] == "y" for s in self.symbols):
            return "y"
        if any(value[d] != "y" for d in rules.get("depends", ())):
            return "n"
        default = str(rules.get("default", "n"))
        return asked.get(name, default) if rules.get("prompt", True) else default


class FakeConfigKernels:
    """The kernel source of a `config` campaign over a FakeKconfig: `olddefconfig` normalises,
    `build_config` makes one kernel per normalised .config (its commit: the options set, joined
    by `+`, "none" for none; FakeMeasurer's value_of reads them with `by_options`), `broken`:
    options a kernel holding one of which does not build. `configured` gives `recipes[items]`."""

    def __init__(self, kconfig: FakeKconfig, broken: AbstractSet[str] = frozenset(),
                 recipes: Mapping[tuple[str, ...], str] | None = None, where: Mapping[str, str] | None = None) -> None:
        self.kconfig, self.broken, self.recipes, self.where = kconfig, broken, dict(recipes or {}), dict(where or {})
        self.built: list[str] = []

    def olddefconfig(self, commit: str, config_text: str) -> str:
        return self.kconfig.normalise(config_text)

    def configured(self, commit: str, recipe: Any) -> str:
        return self.recipes[tuple(f.name for f in recipe.fragments)]

    def definitions(self, commit: str) -> dict[str, str]:
        return dict(self.where)

    def build_config(self, commit: str, config_text: str, modules: str | None = None,
                     slot: str | None = None) -> Build:
        from orchestrator.kbuild.configdiff import values

        on = sorted(values(config_text))
        if set(on) & self.broken:
            raise BuildFailed(f"kernel/fake.c:1:1: error: {sorted(set(on) & self.broken)[0]} does not build")
        name = "+".join(o.removeprefix("CONFIG_") for o in on) or "none"
        self.built.append(name)
        return Build(fake_kernel(name, hashlib.sha256(config_text.encode()).hexdigest()))


def by_options(value: Callable[[frozenset[str]], float]) -> Callable[[str], float]:
    """FakeMeasurer's value_of for FakeConfigKernels' kernels: `value` of the options set (names
    without CONFIG_)."""
    return lambda commit: value(frozenset() if commit == "none" else frozenset(commit.split("+")))


class Meeting:
    """FakeMeasurer's value_of for slot tests, around `value_of`: the first boot of each commit of
    `commits` waits (a threading.Barrier) until the first boots of all of them began, so a run
    that passes booted them at the same time; booted one after another they never meet, and the
    wait breaks after `timeout` s (BrokenBarrierError, which fails the campaign). `met`: they met."""

    def __init__(self, value_of: Callable[[str], float], commits: AbstractSet[str], timeout: float = 30.0) -> None:
        import threading

        self.value_of, self.commits = value_of, frozenset(commits)
        self._barrier = threading.Barrier(len(self.commits), timeout=timeout)
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.met = False

    def __call__(self, commit: str) -> float:
        with self._lock:
            first = commit in self.commits and commit not in self._seen
            self._seen.add(commit)
        if first:
            self._barrier.wait()
            self.met = True
        return self.value_of(commit)


PROFILE_DATA = Path(__file__).parent / "data" / "profile"


@contextmanager
def fake_perf_pool(pool: Any, _store: Any, _campaign_id: int, _wire: Any) -> Iterator[Any]:
    """profile_boots.perf_pool without images: the pool it is given."""
    yield pool


def fake_profile_pair(_measurer: Any, kernels: Mapping[str, Any], boots: int = 2, on_boot: Any = None,
                      setup: Any = None, appends: Any = None) -> tuple[dict[str, list[str]], str]:
    """profile_boots.profile_pair without guests: a real capture (tests/data/profile: fio under
    the distribution kernel with the disk scheduler none, then bfq) as parent and culprit, once
    per boot asked for. Asserts both sides' kernels were given."""
    assert set(kernels) == {"parent", "culprit"}
    none, bfq = ((PROFILE_DATA / f"sched-{s}.folded").read_text() for s in ("none", "bfq"))
    return {"parent": [none] * boots, "culprit": [bfq] * boots}, "cpu-clock"
