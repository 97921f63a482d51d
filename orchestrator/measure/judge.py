"""The judge: "this kernel on this lab" -> boots stored as they happen -> evidence.

Every search over kernels calls it (syzkaller's `env.test()`, which both its bisecter and its
config minimizer call): the commit bisection (orchestrator/bisect/engine.py), `verify`
(orchestrator/bisect/suspect.py) and the comparison (orchestrator/compare/runplan.py, which boots
through `session`). What it owns:

- kernels: a candidate's KernelArtifact, built once per judge and every build stored (`kernel`);
- boots: a guest of a kernel on the measurer's host, its host state and phases stored with it, a
  boot the kernel failed or the host lost stored as such, a guest that hung in its boot booted
  once more (`session`), and the campaign's runs of the metric, `runs_per_boot` per guest, each
  stored as it completes, a guest one of whose runs stalled booted once more (`boot_once`);
- the evidence: every candidate's boots on the current host (the boot is the unit of
  replication), read from the store once and then kept in step with what this judge stores
  (`boots`), without the boots the stray rule leaves out (`evidence`, docs/campaign.md "Quiet
  host"); odds of a candidate against two references (`odds`), the noise pooled from each
  candidate's boot variance; the evidence, the variances and the odds are made once and kept
  until a run is added (a decision over a campaign's hundreds of decided commits asks for each
  of them on every host);
- interleaving (A B B A, `interleave`) and the references' refresh (`refresh`);
- kernel images (`images`): a candidate whose image equals one already judged carries that
  verdict without a boot (measure/shell.py `inherited`);
- the host: when the measurer's host fails (HostFailed) and the campaign may move, the boot in
  flight is stored as lost and the move stored as a decision of role `host` (`move`; the work
  is started again on the new host by measure/judges.py `Judges.moving`); the evidence then holds
  only boots of the new host.

A candidate is named by its key: the string the store keeps in its `commit` column (a commit
id for a bisection; a variant label for a comparison). Several judgements may be in flight at
once (rounds over several slots): the boot cache, the kernels and the store writes are guarded
by one lock, and a guest is booted and measured outside it, so two threads measuring two
candidates on two slots each store their own boots, every boot once.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from orchestrator.decisions import Decided, Role, moved
from orchestrator.errors import BootFailed, BuildFailed, HostFailed, KernelFault, WorkloadFailed
from orchestrator.ports import GuestSession, KernelArtifact, KernelBuilds, Measurer
from orchestrator.stats import Boot, StepOdds, boot_variance, pooled, step_odds, stray_boots

T = TypeVar("T")

# The references are booted again once this many boots of other candidates passed since their last.
REFRESH_AFTER = 6
# A guest that hung in its boot is booted this many more times before the kernel is blamed.
HUNG_RETRIES = 1
# A kernel whose run stalled in its guest (killed at its budget) is booted this many more times
# before the kernel is blamed.
STALL_RETRIES = 1
# A stalled boot's stored error: its message, the tool's output and the agent's snapshot of the
# guest (at most 60 lines of 200 characters).
STALL_ERROR_MAX = 16000


class CampaignStore(Protocol):
    """What the judge and the engine read and write of a campaign's store (orchestrator/store.py;
    tests/fakes.py MemoryStore for the simulator)."""

    def campaign(self, campaign_id: int) -> Any: ...
    def set_state(self, campaign_id: int, state: str, result: Any = None) -> None: ...
    def set_bisect_log(self, campaign_id: int, log: str) -> None: ...
    def add_build(self, campaign_id: int, commit: str, status: str, **fields: Any) -> None: ...
    def builds(self, campaign_id: int) -> list[Any]: ...
    def start_boot(self, campaign_id: int, commit: str) -> int: ...
    def end_boot(self, boot_id: int, status: str, boot_seconds: float = 0.0, error: str = "", host: str = "",
                 facts: Any = None) -> None: ...
    def add_run(self, campaign_id: int, boot_id: int, commit: str, metrics: Any, raw: Any) -> int: ...
    def boot_samples(self, campaign_id: int, metric: str, host: str | None = None,
                     legacy: bool = True, runs_per_boot: int | None = None) -> dict[str, list[Boot]]: ...
    def add_decision(self, campaign_id: int, d: Decided) -> None: ...
    def decisions(self, campaign_id: int) -> list[Decided]: ...


def boot_facts(session: Any, whole: bool = False) -> dict[str, Any]:
    """What a guest's session tells of its host and its boot (LibvirtProvider: host_state, phases;
    PoolSession: the accelerator, the host's CPU model and the guest's clock, "" or None when a
    session does not say; once the guest ended, `whole`: its load over the whole boot)."""
    state = getattr(session, "host_state", None)
    facts = {"host_state": state.to_dict() if state is not None else None, "phases": dict(getattr(session, "phases", {})),
             "accel": str(getattr(session, "accel", "") or ""), "host_cpu": str(getattr(session, "host_cpu", "") or ""),
             "clock": getattr(session, "clock", None)}
    if whole:
        load = getattr(session, "load", None)
        facts.update(whole=True, load=load.to_dict() if load is not None else None)
    return facts


def booted_words(metric: str, values: list[float]) -> str:
    """A boot's runs for people: `read_iops 8250 (median of 3 runs)`."""
    return f"{metric} {statistics.median(values):.4g}" + (f" (median of {len(values)} runs)" if len(values) > 1 else "")


@dataclass
class _Kept:
    """The evidence made from the boots `source` when `made` (its id and the runs added since it
    was read): every candidate's boots without the stray ones, and what the decisions computed
    on them, kept until a run is added (each group's boot variance, each candidate's odds)."""

    made: tuple[int, int]
    source: dict[str, list[Boot]]  # held: its id is not reused while this is kept
    boots: dict[str, list[Boot]]
    before: _Kept | None = None  # the evidence this one follows: its variances of unchanged candidates serve
    odds: dict[tuple[str, str, str], StepOdds | None] = field(default_factory=dict)
    _parts: dict[str, tuple[float, int]] | None = None

    def parts(self) -> dict[str, tuple[float, int]]:
        """Each candidate's boot variance (stats.boot_variance), in the order of the boots; a
        candidate whose boots are those of the evidence before keeps its variance."""
        if self._parts is None:
            before = self.before._parts if self.before is not None and self.before._parts is not None else {}
            old = self.before.boots if self.before is not None else {}
            self._parts = {key: before[key] if key in before and old.get(key) == bs else boot_variance(bs)
                           for key, bs in self.boots.items()}
            self.before = None
        return self._parts


class Judge:
    """One campaign's measurements: `metric` measured `runs_per_boot` times per guest by
    `measurer`, kernels from `builder` (None for a comparison, which resolves its variants'
    kernels itself and boots them through `session`), everything stored in `store` under
    `campaign_id`.
    `emit(phase, key, samples, message)` reports progress (build, built, boot, measure, booted, stalled,
    requeue)."""

    def __init__(self, campaign_id: int, store: CampaignStore, builder: KernelBuilds | None, measurer: Measurer,
                 metric: str = "", runs_per_boot: int = 0,
                 emit: Callable[[str, str, int, str], None] = lambda phase, key, samples, message: None) -> None:
        self.campaign_id, self.store, self.builder, self.measurer = campaign_id, store, builder, measurer
        self.metric, self.runs_per_boot, self.emit = metric, runs_per_boot, emit
        self._lock = threading.RLock()
        self._kernels: dict[str, KernelArtifact] = {}
        self._cache: dict[str, list[Boot]] | None = None
        self._last_boot_id = -1  # the latest boot whose runs the cache holds (started in this process)
        self._seq_of: dict[int, int] = {}  # boot id -> its seq in the cache, for boots of this process
        self._last_ref_first = ""
        self.booting = ""  # the candidate of the boot in flight (or last): whose fault a failure is
        # the lab host whose boots count: None until the first guest of this process (then every
        # stored boot counts: one host so far); after a move, no boot counts until the next guest
        # is up (`unplaced`)
        self.on: str | None = measurer.host
        self._unplaced = False
        # runs added to the boots since they were last read from the store (`_add`)
        self._added = 0
        # the last evidence made (`_Kept`), with the boots it was made from and their runs
        # added: every decision asks for it again, and at hundreds of boots finding the stray
        # ones is most of a decision's time
        self._kept: _Kept | None = None

    # ---- the host ----------------------------------------------------------------------------

    def move(self, exc: HostFailed, on_move: Callable[[HostFailed], None] | None = None) -> bool:
        """The measurer's host failed under `exc`: False when the measurer may not move on;
        else the move recorded (`on_move`, default: a decision of role `host`, as a bisection
        and a verification keep it) and no boot counts until the next guest is up on the new
        host (measure/judges.py `Judges.moving` starts the work again)."""
        if not self.measurer.move_on():
            return False
        (on_move or self._moved)(exc)
        with self._lock:
            self.on, self._unplaced, self._cache, self._seq_of = None, True, None, {}
        return True

    def _moved(self, exc: HostFailed) -> None:
        self.store.add_decision(self.campaign_id, moved(
            exc.host, exc.reason, "", "the campaign goes on on another host, its references measured there again"))
        self.emit("requeue", "", 0, f"{exc}; the campaign goes on on another host (the references are measured "
                  "there again)")

    def _place(self, host: str) -> None:
        """The guest just booted is on `host`: from now on the decisions use that host's boots."""
        if host != self.on or self._unplaced:
            self.on, self._unplaced, self._cache, self._seq_of = host, False, None, {}
            self.boots()

    # ---- the evidence ------------------------------------------------------------------------

    def boots(self) -> dict[str, list[Boot]]:
        """Every candidate's boots on the current host; read from the store once, then kept in
        step with every run this judge stores (the campaign's only writer)."""
        with self._lock:
            if self._unplaced:
                return {}
            if self._cache is None:
                moved = any(d.role is Role.HOST for d in self.store.decisions(self.campaign_id))
                self._cache = self.store.boot_samples(self.campaign_id, self.metric, self.on, legacy=not moved,
                                                      runs_per_boot=self.runs_per_boot)
            return self._cache

    def evidence(self) -> dict[str, list[Boot]]:
        """A snapshot of `boots` without the stray ones (stats.stray_boots): what every decision
        rests on."""
        return {key: list(bs) for key, bs in self._made().boots.items()}

    def _made(self) -> _Kept:
        """The evidence of the boots as they are now: made again only once a run was added or
        the boots were read again from the store."""
        with self._lock:  # only whole boots: one in flight, or cut short, is no evidence
            source = self.boots()
            made = (id(source), self._added)
            if self._kept is not None and self._kept.made == made:
                return self._kept
            boots = {key: [b for b in bs if len(b.runs) >= self.runs_per_boot] for key, bs in source.items()}
        stray = stray_boots(boots)
        kept = {key: [b for b in bs if b.seq not in stray] for key, bs in boots.items()} if stray else boots
        last = self._kept  # the latest evidence whose variances were made (never a chain of them)
        self._kept = _Kept(made, source, kept, last if last is None or last._parts is not None else last.before)
        return self._kept

    def booted(self, key: str) -> int:
        """How many boots of `key` the evidence holds."""
        return len(self._made().boots.get(key, ()))

    def boots_of(self, key: str) -> list[Boot]:
        """`key`'s boots in the evidence (a copy: one candidate's `evidence`)."""
        return list(self._made().boots.get(key, ()))

    def runs(self, key: str) -> int:
        return sum(len(b.runs) for b in self._made().boots.get(key, ()))

    def odds(self, good: str, bad: str, key: str) -> StepOdds | None:
        """`key`'s boots against the two references, the noise pooled over every other candidate;
        computed once for the evidence as it is."""
        kept = self._made()
        asked = (good, bad, key)
        if asked not in kept.odds:
            ss, df = pooled(part for x, part in kept.parts().items() if x not in asked)
            boots = kept.boots
            kept.odds[asked] = step_odds(boots.get(good, []), boots.get(bad, []), boots.get(key, []), ss, df)
        return kept.odds[asked]

    def _add(self, key: str, boot_id: int, new_boot: bool, value: float, busy: bool) -> None:
        """The run just stored, added to the boots as `Store.boot_samples` would read them: the
        first run of a boot opens the next boot in sequence, the others extend it. The store
        numbers boots in the order they started: when another slot's boot that started earlier
        brings its first run later, or a run belongs to a boot the cache no longer knows, the
        cache is read again from the store instead (only ever with several slots)."""
        boots = self.boots()
        self._added += 1
        if new_boot and boot_id > self._last_boot_id:
            self._last_boot_id = boot_id
            self._seq_of[boot_id] = sum(len(bs) for bs in boots.values())
            boots.setdefault(key, []).append(Boot(self._seq_of[boot_id], (value,), busy))
            return
        seq = None if new_boot else self._seq_of.get(boot_id)
        mine = boots.get(key, [])
        at = next((i for i, b in enumerate(mine) if b.seq == seq), None)
        if at is None:
            self._cache, self._seq_of = None, {}
            return
        mine[at] = Boot(mine[at].seq, (*mine[at].runs, value), mine[at].busy)

    # ---- kernels -----------------------------------------------------------------------------

    def kernel(self, key: str) -> KernelArtifact:
        """`key`'s kernel, built once; every build (and a failed one) stored."""
        with self._lock:
            if key in self._kernels:
                return self._kernels[key]
        if self.builder is None:
            raise ValueError(f"no kernel builder for {key}: this judge boots kernels given to it (session)")
        self.emit("build", key, 0, "")
        self.store.add_build(self.campaign_id, key, "building")  # the dashboard shows what builds, since when
        started = time.monotonic()
        try:
            built = self.builder.build(key)
        except BuildFailed as exc:
            self.store.add_build(self.campaign_id, key, "failed", error=str(exc)[:2000],
                                 duration_s=time.monotonic() - started)
            raise
        with self._lock:
            if key not in self._kernels:
                self.store.add_build(self.campaign_id, key, "ok", image=str(built.kernel.image),
                                     sha256=built.kernel.sha256, cache_hit=built.cache_hit, how=built.how,
                                     duration_s=built.duration_s)
                self._kernels[key] = built.kernel
                self.emit("built", key, 0, built.words())
            return self._kernels[key]

    def images(self) -> dict[str, str]:
        return {b.commit: b.sha256 for b in self.store.builds(self.campaign_id) if b.status == "ok" and b.sha256}

    # ---- boots -------------------------------------------------------------------------------

    @contextmanager
    def session(self, key: str, kernel: KernelArtifact, append: str | None = None) -> Iterator[tuple[int, GuestSession]]:
        """A guest of `kernel` stored as a boot of `key` (its id and the guest's session): up
        (with its host, host state and phases), failed (the kernel's fault) or lost (the host's);
        the caller runs and stores the runs under the boot's id. A guest that hung in its boot
        (BootFailed.hung) is stored as failed and booted once more (HUNG_RETRIES): under TCG a
        guest of a kernel that boots fine now and then hangs early (a soft lockup in the crypto
        self-tests: it held a make test run in CI), and one such boot must not mark a commit
        skipped or end a comparison. A guest one of whose runs stalled (WorkloadFailed.timed_out:
        the agent killed the tool at its budget) is stored as stalled, its error the agent's
        snapshot of the guest; the runs it completed before are kept, its boot cut short."""
        hung = 0
        while True:
            boot_id = self.store.start_boot(self.campaign_id, key)
            up = False
            try:
                with self.measurer.boot(kernel, append) as session:
                    up = True
                    self.store.end_boot(boot_id, "ok", session.boot_seconds, host=session.host,
                                        facts=boot_facts(session))
                    yield boot_id, session
                self.store.end_boot(boot_id, "ok", session.boot_seconds, host=session.host,
                                    facts=boot_facts(session, whole=True))
                return
            except KernelFault as exc:  # the guest did not boot (or, for a comparison, the workload failed in it)
                if up and isinstance(exc, WorkloadFailed) and exc.timed_out:
                    self.store.end_boot(boot_id, "stalled", session.boot_seconds,
                                        f"{exc}\n{exc.detail}".strip()[:STALL_ERROR_MAX], host=session.host)
                elif isinstance(exc, BootFailed) or self.builder is None:
                    self.store.end_boot(boot_id, "failed", 0.0, f"{exc}\n{exc.detail}".strip()[:4000])
                if not up and isinstance(exc, BootFailed) and exc.hung and hung < HUNG_RETRIES:
                    hung += 1
                    continue
                raise
            except HostFailed as exc:
                self.store.end_boot(boot_id, "lost", 0.0, str(exc)[:4000], host=exc.host)
                raise

    def boot_once(self, key: str) -> None:
        """One guest of `key`, `runs_per_boot` runs of the metric in it, each stored as it
        completes; a guest one of whose runs stalled booted once more (`again_when_stalled`)."""
        self.booting = key
        kernel = self.kernel(key)
        have = self.runs(key)
        got = self.again_when_stalled(key, lambda: self._measure(key, kernel, have), have)
        self.emit("booted", key, have + len(got), booted_words(self.metric, got))
        with self._lock:  # the boot's whole load is stored now: its boots read again with it
            self._cache, self._seq_of = None, {}
            self.boots()

    def again_when_stalled(self, key: str, work: Callable[[], T], samples: int = 0) -> T:
        """`work()`, one guest of `key` and its runs, done again (in a new guest) when a run in
        it stalled (WorkloadFailed.timed_out: the agent killed the tool at its budget; `session`
        stores that boot as stalled), STALL_RETRIES times; a stall after that fails as the
        kernel's fault. Under TCG a guest freshly booted after libvirtd restarted once ran a 3 s
        fio past its 126 s budget: one such stall must not mark a commit skipped or end a
        comparison."""
        stalled = 0
        while True:
            try:
                return work()
            except WorkloadFailed as exc:
                if not exc.timed_out or stalled >= STALL_RETRIES:
                    raise
                stalled += 1
                self.emit("stalled", key, samples, f"a run stalled in the guest ({exc}): booting it again")
                with self._lock:  # the stalled boot's runs are no evidence: the boots read again without them
                    self._cache, self._seq_of = None, {}

    def _measure(self, key: str, kernel: KernelArtifact, have: int) -> list[float]:
        """One guest's `runs_per_boot` runs of the metric, each stored as it completes; their values."""
        self.emit("boot", key, have, "")
        got: list[float] = []
        with self.session(key, kernel) as (boot_id, session):
            busy = not ((boot_facts(session)["host_state"] or {}).get("quiet", True))
            with self._lock:
                self._place(session.host)
            for i in range(self.runs_per_boot):
                self.emit("measure", key, have + i, "")
                result = session.run()
                if self.metric not in result.metrics:
                    raise WorkloadFailed(f"metric {self.metric!r} missing from the results; "
                                         f"got {', '.join(sorted(result.metrics))}")
                values = result.values()
                if float(values[self.metric]) <= 0:  # a boot's value is the log of its runs' mean
                    raise WorkloadFailed(f"metric {self.metric!r} read {values[self.metric]:g}: a value of 0 or "
                                         "below cannot be compared as a ratio (the workload did nothing measurable)")
                with self._lock:
                    self.store.add_run(self.campaign_id, boot_id, key, values, result.to_json())
                    self._add(key, boot_id, i == 0, float(values[self.metric]), busy)
                got.append(float(values[self.metric]))
        return got

    def interleave(self, keys: list[str], need: int, since: int = 0) -> None:
        """Boots until every key has `need` (counting its boots from boot `since` on), one boot
        each in turn, the order reversed every round (A B B A): a linear drift of the host hits
        all of them alike."""
        keys = list(dict.fromkeys(keys))
        round_no = 0
        while True:
            boots = self._made().boots
            have = {x: sum(1 for b in boots.get(x, []) if b.seq >= since) for x in keys}
            todo = [x for x in keys if have[x] < need]
            if not todo:
                return
            for key in (todo if round_no % 2 == 0 else todo[::-1]):
                self.boot_once(key)
            round_no += 1

    def refresh(self, good: str, bad: str) -> None:
        """Boot both references again when REFRESH_AFTER boots passed since either's last one,
        the one that went first last time second (A B B A)."""
        boots = self._made().boots
        last = max((b.seq for bs in boots.values() for b in bs), default=-1)
        latest = min(max((b.seq for b in boots.get(ref, [])), default=-1) for ref in (good, bad))
        if last - latest < REFRESH_AFTER:
            return
        order = [good, bad] if self._last_ref_first != good else [bad, good]
        self._last_ref_first = order[0]
        for ref in order:
            self.boot_once(ref)
