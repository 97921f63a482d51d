"""Profile boots: after a bisection named its culprit (and never while anything is measured for a
decision), the parent and the culprit booted again, `BOOTS` guests each in the order parent,
culprit, culprit, parent, each running the campaign's workload once under
`perf record -a -g` (every CPU, call chains; 499 samples a second and CPU, fewer when a long run
on many CPUs would give over 20,000), then `perf script` in the guest, folded on the
host (orchestrator/explain/perfscript.py). The event is the PMU's `cycles` where the guest has
one (/sys/bus/event_source/devices/cpu), else the software clock `cpu-clock` (TCG has no PMU).

The guests carry perf: their images are the campaign's plus perf and its libraries
(orchestrator/image/tools.py profile_tools), so the measured guests' images stay as they were.
What the profile boots give is kept as a profile row (Store.add_profile), never as a boot or a
run: no decision counts it. A profile that cannot be taken (no perf on this machine, a kernel
without kallsyms, a guest that fails) leaves a row with a note saying why; the campaign's
answer stands either way.

The parts the profile boots are measured with (the pool, the kernels and the measurer) are
wired where a campaign's are: the caller hands that wiring in (`Wiring`; orchestrator/wiring.py
is one), so nothing here builds them."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from orchestrator.errors import VmbisectError
from orchestrator.explain.kallsyms import SymbolMap
from orchestrator.explain.perfscript import SCRIPT_FIELDS, fold_script, folded_text
from orchestrator.workloads import runner

if TYPE_CHECKING:
    from orchestrator.backends.factory import GuestLauncher
    from orchestrator.campaign.file import Campaign
    from orchestrator.campaign.workload import WorkloadChoice
    from orchestrator.compare.plan import ComparePlan
    from orchestrator.hosts.labfile import Host, Lab
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.ports import KernelArtifact
    from orchestrator.results import BisectResult
    from orchestrator.store import Store

BOOTS = 2  # per side: the two boots of a side show how far a profile moves from boot to boot
SAMPLE_HZ = 499  # samples per second and CPU at most; prime, so no periodic tick aliases with it
MIN_HZ = 19
TARGET_SAMPLES = 20_000  # a run's samples on all CPUs: `perf script` prints about 1 KB a sample, which
# the agent returns in one answer and the guest holds in memory meanwhile
DATA = "/tmp/vmbisect-profile-{n}.data"
SCRIPT_TIMEOUT_S = 600.0
PARENT, CULPRIT = "parent", "culprit"


class Wiring(Protocol):
    """Where the profile boots' parts come from: a pool over a lab whose guests boot through
    `launcher_for`, the host a campaign measures on, a bisection's kernels and measurer, a
    comparison's (orchestrator/wiring.py's functions of these names)."""

    def open_pool(self, lab: Lab, store: Store | None = None, campaign_id: int | None = None,
                  launcher_for: Callable[[Host], GuestLauncher] | None = None) -> GuestPool: ...

    def last_host(self, store: Store, campaign_id: int, pinned: str | None) -> str | None: ...

    def bisection(self, campaign: Campaign, choice: WorkloadChoice, clone: Path | None, pool: GuestPool,
                  host: str | None = None) -> tuple[Any, Any]: ...

    def comparison(self, plan: ComparePlan, pool: GuestPool, host: str | None = None) -> tuple[Any, Any]: ...


class ProfileUnavailable(VmbisectError):
    """The guest cannot profile (no perf, no kernel symbols): said in the profile row's note. No
    InfraError, so the pool does not take the host for down."""


def event_for(pmus: str) -> str:
    """`cycles` when the guest lists a CPU PMU among its event sources, else `cpu-clock`."""
    return "cycles" if "cpu" in pmus.split() else "cpu-clock"


def sample_hz(cpus: int, seconds: float) -> int:
    """Samples a second and CPU: SAMPLE_HZ, fewer when a long run on many CPUs would give more
    than TARGET_SAMPLES, never under MIN_HZ."""
    return max(MIN_HZ, min(SAMPLE_HZ, int(TARGET_SAMPLES / max(1, cpus) / max(1.0, seconds))))


def record_argv(event: str, hz: int, path: str, argv: Sequence[str]) -> list[str]:
    return ["perf", "record", "-a", "-g", "-e", event, "-F", str(hz), "-o", path, "--", *argv]


def script_argv(path: str) -> list[str]:
    return ["perf", "script", "-i", path, "-F", SCRIPT_FIELDS]


def order(boots: int) -> list[str]:
    """parent, culprit, culprit, parent, ...: each side as often early as late."""
    pairs = itertools.cycle(([PARENT, CULPRIT], [CULPRIT, PARENT]))
    return [side for _ in range(boots) for side in next(pairs)]


class PerfGuest:
    """A guest whose every command runs under `perf record` into a file of its own; everything
    else passes through."""

    def __init__(self, guest: Any, event: str, hz: int = SAMPLE_HZ) -> None:
        self._guest, self.event, self.hz = guest, event, hz
        self.files: list[str] = []

    def exec(self, argv: list[str], **kwargs: Any) -> Any:
        path = DATA.format(n=len(self.files))
        self.files.append(path)
        return self._guest.exec(record_argv(self.event, self.hz, path, argv), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._guest, name)


def _out(guest: Any, argv: list[str], timeout_s: float = 60.0) -> str:
    done = guest.exec(argv, timeout_s=timeout_s)
    if not done.succeeded:
        text = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
        raise ProfileUnavailable(f"{' '.join(argv[:2])} failed in the guest: {text[-1] if text else 'no output'}")
    return str(done.stdout.decode(errors="replace"))


def probe(guest: Any) -> str:
    """The event to sample; ProfileUnavailable without perf or kernel symbols in the guest."""
    _out(guest, ["perf", "--version"])
    addresses = [line.split()[0] for line in _out(guest, ["head", "-n", "64", "/proc/kallsyms"]).splitlines() if line]
    if not any(set(a) - {"0"} for a in addresses):
        raise ProfileUnavailable("the kernel shows no symbols in /proc/kallsyms (CONFIG_KALLSYMS)")
    return event_for(_out(guest, ["ls", "/sys/bus/event_source/devices"]))


def profile_session(session: Any) -> tuple[Counter[tuple[str, ...]], str]:
    """One repetition of the session's workload under perf: its folded stacks and the event."""
    guest = session.guest
    event = probe(guest)
    seconds = float(session.params.get("runtime", 0)) + float(session.params.get("ramp_time", 0))
    traced = PerfGuest(guest, event, sample_hz(int(guest.hello.get("cpus_online") or 1), seconds))
    runner.run(traced, session.workload, session.params, guest.accel, session.run_s)
    stacks: Counter[tuple[str, ...]] = Counter()
    kernel = SymbolMap.parse(_out(guest, ["cat", "/proc/kallsyms"]))  # perf names markers; this does not
    for path in traced.files:
        folded, _events = fold_script(_out(guest, script_argv(path), SCRIPT_TIMEOUT_S), kernel)
        stacks.update(folded)
        guest.exec(["rm", "-f", path], timeout_s=30)
    return stacks, event


def profile_pair(measurer: Any, kernels: Mapping[str, KernelArtifact], boots: int = BOOTS,
                 on_boot: Callable[[str, int], None] = lambda _side, _n: None,
                 setup: Mapping[str, Callable[[Any], None]] | None = None,
                 appends: Mapping[str, str] | None = None) -> tuple[dict[str, list[str]], str]:
    """Each side's boots' folded stacks (text) and the event, `boots` guests a side in `order`;
    `setup`: what is done in a side's guest before its run (a setting of a comparison's variant);
    `appends`: a side's kernel command line (default: the measurer's)."""
    out: dict[str, list[str]] = {PARENT: [], CULPRIT: []}
    event = ""
    for n, side in enumerate(order(boots)):
        on_boot(side, n)
        with measurer.boot(kernels[side], (appends or {}).get(side)) as session:
            if setup and side in setup:
                setup[side](session.guest)
            stacks, event = profile_session(session)
        out[side].append(folded_text(stacks))
    return out, event


def with_perf(launcher: GuestLauncher) -> GuestLauncher:
    """The launcher with images that carry perf (and everything the campaign's carry)."""
    from orchestrator.image.initramfs import GuestImageBuilder
    from orchestrator.image.tools import profile_tools

    i = launcher.images
    return dataclasses.replace(launcher, images=GuestImageBuilder(
        i.cache_root, i.agent, tools={**i.tools, **profile_tools()}, optional=i.optional,
        modules_root=i.modules_root, compression=i.compression))


@contextmanager
def perf_pool(pool: GuestPool, store: Store, campaign_id: int, wire: Wiring) -> Iterator[GuestPool]:
    """A pool over the same lab whose guests carry perf, closed after."""
    from orchestrator.hosts.launchers import host_launcher

    def launcher(host: Host) -> GuestLauncher:
        return with_perf(host_launcher(host))

    profiling = wire.open_pool(pool.lab, store, campaign_id, launcher_for=launcher)
    try:
        yield profiling
    finally:
        profiling.close()


def profile_culprit(campaign: Campaign, store: Store, campaign_id: int, pool: GuestPool, result: BisectResult | None,
                    say: Callable[[str], None], wire: Wiring) -> int | None:
    """After a found culprit, when the campaign's `explain.profile` asks for it: the profile
    boots of its parent and it (`profile_commits`); None when nothing was asked."""
    from orchestrator.results import BisectOutcome

    if result is None or result.outcome is not BisectOutcome.FOUND or not result.parent or not campaign.explain.profile:
        return None
    return profile_commits(campaign, store, campaign_id, pool, result.parent, result.culprit, say, wire)


def profile_commits(campaign: Campaign, store: Store, campaign_id: int, pool: GuestPool, parent: str, culprit: str,
                    say: Callable[[str], None], wire: Wiring) -> int:
    """The profile boots of `parent` and `culprit` (built with the campaign's recipe; the build
    cache holds both once they were measured) on the host that measured last, kept as a
    profile row: its id. A failure is the row's note, never the campaign's."""
    from orchestrator.campaign.workload import choose_workload

    boots = campaign.explain.profile_boots
    try:
        with perf_pool(pool, store, campaign_id, wire) as profiling:
            kernels, measurer = wire.bisection(campaign, choose_workload(campaign), None, profiling,
                                               wire.last_host(store, campaign_id, campaign.host))
            built = {PARENT: kernels.build(parent).kernel, CULPRIT: kernels.build(culprit).kernel}
            stacks, event = profile_pair(measurer, built, boots, lambda side, n: say(
                f"profile boot {n + 1} of {2 * boots}: the {side} under perf record (not counted as evidence)"))
    except VmbisectError as exc:
        say(f"no kernel profile: {exc}")
        return store.add_profile(campaign_id, parent, culprit, "", {}, note=str(exc))
    return store.add_profile(campaign_id, parent, culprit, event, stacks)


def profile_variants(plan: ComparePlan, store: Store, campaign_id: int, pool: GuestPool, host: str | None,
                     say: Callable[[str], None], wire: Wiring) -> int:
    """`vmbisect compare --profile`: after the runs, the first two variants (the first as the
    parent, the second as the culprit) on `BOOTS` profile boots each, each with its kernel, its
    command line and its settings; the others are not profiled. Kept as a profile row named by
    the two variants: its id. A failure is the row's note, never the comparison's."""
    from orchestrator.compare.sysfs import GuestSettings

    first, second = plan.variants[0], plan.variants[1]
    group = {v.name: g for g in plan.groups for v in g}

    def settings_of(variant: Any) -> Callable[[Any], None]:
        return lambda guest: GuestSettings(guest, group[variant.name]).apply(variant)

    try:
        with perf_pool(pool, store, campaign_id, wire) as profiling:
            kernels, measurer = wire.comparison(plan, profiling, host)
            built = {PARENT: kernels.kernel(first), CULPRIT: kernels.kernel(second)}
            stacks, event = profile_pair(
                measurer, built, BOOTS, lambda side, n: say(
                    f"profile boot {n + 1} of {2 * BOOTS}: {(first if side == PARENT else second).name} under perf "
                    "record (not counted as evidence)"),
                setup={PARENT: settings_of(first), CULPRIT: settings_of(second)},
                appends={PARENT: first.append, CULPRIT: second.append})
    except VmbisectError as exc:
        say(f"no kernel profile: {exc}")
        return store.add_profile(campaign_id, first.name, second.name, "", {}, note=str(exc))
    return store.add_profile(campaign_id, first.name, second.name, event, stacks)
