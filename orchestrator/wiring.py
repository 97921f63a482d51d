"""The one place the real measurement layer is wired for a user: the lab's hosts as a guest
pool (this machine alone, at the libvirt URI given, without a lab file), the one kernel source
and a measurer over the pool, for each scheduler. Tests build their own (tests/fakes.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from orchestrator import paths
from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine, Outcome
from orchestrator.bisect.search import Vcs
from orchestrator.bisect.workdir import campaign_workdir, clone
from orchestrator.campaign.file import Campaign
from orchestrator.campaign.workload import WorkloadChoice, choose_workload
from orchestrator.compare.kernels import VariantKernels
from orchestrator.compare.plan import ComparePlan
from orchestrator.hosts.labfile import Lab
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.measure.judge import Judge
from orchestrator.measure.kernels import Kernels
from orchestrator.measure.shell import CampaignShell
from orchestrator.ports import Event
from orchestrator.store import Store

if TYPE_CHECKING:
    from orchestrator.backends.factory import GuestLauncher
    from orchestrator.hosts.labfile import Host
    from orchestrator.hosts.pool import GuestPool
    from orchestrator.kbuild.builder import CpuLease
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.ports import KernelArtifact
    from orchestrator.setbisect.campaign import KernelChoice, SettingsCampaign
    from orchestrator.setbisect.configsides import ConfigSides
    from orchestrator.setbisect.configspec import ConfigSpec
    from orchestrator.setbisect.setbisection import SetBisection


def say(message: str) -> None:
    """A one-line note to the user beside the progress (a clone made again)."""
    print(f"vmbisect: {message}", file=sys.stderr, flush=True)


def open_pool(lab: Lab, store: Store | None = None, campaign_id: int | None = None,
              launcher_for: "Callable[[Host], GuestLauncher] | None" = None) -> "GuestPool":
    """Slots on the lab's hosts; libvirt and paramiko are imported here, when guests boot. The
    slots of a lab file are leased against other controllers of this machine too (their host
    CPUs, orchestrator/hosts/cpulocks.py) and, with the `store` of campaign `campaign_id`,
    against every controller and worker sharing that store, in turn among campaigns
    (orchestrator/queue/leases.py); the implicit local host of a run without a lab file takes
    the flock leases. Kernel builds lease their CPUs through the same backend (`pool.builds`).
    `launcher_for`: each host's launcher (default host_launcher; profile boots give guests whose
    images carry perf)."""
    from orchestrator.hosts.cpulocks import CpuLocks
    from orchestrator.hosts.launchers import host_launcher
    from orchestrator.hosts.pool import GuestPool

    launcher = launcher_for or host_launcher
    flock = CpuLocks(paths.data_dir() / "cpus")
    if store is None or lab.source is None:
        return GuestPool(lab, launcher, flock)
    from orchestrator.queue.leases import DbLeases

    return GuestPool(lab, launcher, DbLeases(store, campaign_id, flock))


def machine_build_lease() -> "CpuLease":
    """Every CPU of this machine, leased with the flock files as a guest's slot is: for builds
    that have no guest pool (`vmbisect build`, a settings kernel outside a campaign)."""
    from orchestrator.hosts.buildcpus import BuildCpus
    from orchestrator.hosts.cpulocks import CpuLocks
    from orchestrator.hosts.labfile import local_lab

    return BuildCpus(local_lab(), CpuLocks(paths.data_dir() / "cpus")).hold


def last_host(store: Store, campaign_id: int, pinned: str | None) -> str | None:
    """The host a campaign measures on: the one of its last run (a resumed campaign goes on
    there), else the one it is pinned to (None: the first free one)."""
    last = store.last_run(campaign_id)
    return (last.raw.get("lab_host") if last else None) or pinned


def bisection(campaign: Campaign, choice: WorkloadChoice, clone: Path | None, pool: "GuestPool",
              host: str | None = None) -> tuple[Kernels, "PoolMeasurer"]:
    """The engine's kernels (commits of the campaign's repository, reverts made in `clone`)
    and guests running the campaign's workload, every one on one host: `host`, or the one the
    first guest got (the engine compares every step with references of the same host)."""
    from orchestrator.kbuild.builder import default_builder

    recipe = parse_recipe(list(campaign.kernel.config) + ([f"cc={campaign.kernel.cc}"] if campaign.kernel.cc else []))
    kernels = Kernels(default_builder(pool.builds.hold, note=say), campaign.repository, recipe,
                      campaign.timeouts.build_s, clone)
    return kernels, _guests(campaign, choice, pool, host, campaign.host is not None)


def _guests(campaign: Campaign, choice: WorkloadChoice, pool: "GuestPool", host: str | None,
            pinned: bool) -> "PoolMeasurer":
    from orchestrator.measure.guests import PoolMeasurer

    return PoolMeasurer(pool, campaign.guest, choice.workload, choice.params,
                        choice.workload.kernel_needs(choice.params), campaign.accel, campaign.append,
                        campaign.timeouts.boot_s, campaign.timeouts.run_s, host, one_host=True, pinned=pinned)


def lab_slots(campaign: Campaign, choice: WorkloadChoice, pool: "GuestPool") -> list["PoolMeasurer"]:
    """The one place a search's slots come from: every slot of every host of the lab (one
    measurer per host, pinned to it, once per slot of that host), at most the lab's
    `campaign_slots` (a queue worker running several campaigns gives each one: whichever host
    the leases give it first), when the campaign is not pinned to a host and may measure on
    more than one slot of a lab that has more than one; else none (one slot)."""
    limit = pool.lab.campaign_slots
    if (campaign.host is not None or (limit is not None and limit <= 1)
            or sum(len(h.slots) for h in pool.lab.hosts) <= 1):
        return []
    slots = []
    for h in pool.lab.hosts:
        measurer = _guests(campaign, choice, pool, h.name, True)
        slots += [measurer] * len(h.slots)
    return slots[:limit]


def comparison(plan: ComparePlan, pool: "GuestPool", host: str | None = None) -> tuple[VariantKernels,
                                                                                      "PoolMeasurer"]:
    """Each variant's kernel (built only when a variant names a commit) and guests of the
    comparison's shape running its workload, the sweep point's parameters given per run, every
    guest on one host: `host` (the one asked for, or where a resumed comparison measured
    last), or the one the first guest got; it moves on from a failed host unless asked for."""
    from orchestrator.kbuild.builder import default_builder
    from orchestrator.measure.guests import PoolMeasurer

    builder = recipe = None
    if any(v.commit for v in plan.variants):
        builder = default_builder(pool.builds.hold, progress=say)
        recipe = parse_recipe(list(plan.recipe))
    kernels = VariantKernels(Kernels(builder, plan.repo, recipe))
    needs = plan.workload.kernel_needs_all(p.params for p in plan.points)
    measurer = PoolMeasurer(pool, plan.spec, plan.workload, plan.points[0].params, needs, plan.accel,
                            boot_timeout_s=plan.timeout_s, host=host, one_host=True, pinned=plan.host is not None)
    return kernels, measurer


def engine_for(campaign: Campaign, store: Store, campaign_id: int, pool: "GuestPool",
               on_event: Callable[[Event], None]) -> Engine:
    """The engine over the real parts: git in vmbisect's clone, the kernel builder (which also
    builds the reverts made in that clone), guests running the campaign's workload on the slots
    of `pool` (`lab_slots`; whoever opened the pool closes it: kinds/run.py), kernels built
    ahead on the lab's build CPUs; a resumed one-slot campaign goes on on the host of its runs."""
    choice = choose_workload(campaign)
    return _engine(campaign, choice, store, campaign_id, pool, on_event, lab_slots(campaign, choice, pool))


def _engine(campaign: Campaign, choice: WorkloadChoice, store: Store, campaign_id: int, pool: "GuestPool",
            on_event: Callable[[Event], None], slots: list["PoolMeasurer"]) -> Engine:
    vcs, kernels, measurer = _parts(campaign, choice, store, campaign_id, pool)
    return Engine(campaign, choice.direction, vcs, kernels, slots[0] if slots else measurer, store, on_event,
                  slots=slots, build_cpus=pool.lab.build_cpus)


def _parts(campaign: Campaign, choice: WorkloadChoice, store: Store, campaign_id: int,
           pool: "GuestPool") -> tuple[GitBisect, Kernels, "PoolMeasurer"]:
    """A commit campaign's clone, kernels and guests (one slot: on the host of its last run, or
    the one it is pinned to)."""
    vcs = clone(store, campaign_id, campaign.repository, say)
    kernels, measurer = bisection(campaign, choice, vcs.repo, pool, last_host(store, campaign_id, campaign.host))
    return vcs, kernels, measurer


def verification_for(campaign: Campaign, store: Store, campaign_id: int, pool: "GuestPool",
                     on_event: Callable[[Event], None]) -> tuple[Judge, Vcs, str]:
    """A verification's judge over the same parts as a bisection's (engine_for) on one slot,
    its repository and the metric's direction."""
    choice = choose_workload(campaign)
    vcs, kernels, measurer = _parts(campaign, choice, store, campaign_id, pool)
    shell = CampaignShell(store, campaign_id, kernels, campaign.metric.name, campaign.runs_per_boot, measurer, [],
                          on_event)
    return shell.judge, vcs, choice.direction


def run_campaign(campaign: Campaign, store: Store, campaign_id: int, pool: "GuestPool",
                 on_event: Callable[[Event], None]) -> Outcome:
    return engine_for(campaign, store, campaign_id, pool, on_event).run(campaign_id)


def config_bisection(spec: "ConfigSpec", store: Store, campaign_id: int, pool: "GuestPool",
                     on_event: Callable[[Event], None]) -> tuple["SetBisection", "ConfigSides"]:
    """A config bisection over the real parts: the sides normalised and grouped at the commit in
    the builder's checkout (kept in the campaign's directory), each candidate built with its
    whole .config by the one kernel source, guests running the campaign's workload on the slots
    of `pool` (`lab_slots`: the candidates the search may ask next measured at once; the endpoints
    and confirmation on the first host), or on one host (a resumed one-slot campaign goes on on
    the host of its runs)."""
    from orchestrator.kbuild import gitrepo
    from orchestrator.setbisect.configmaker import ConfigMaker
    from orchestrator.setbisect.configrun import SLOT, rules, sides_for
    from orchestrator.setbisect.setbisection import SetBisection

    campaign = spec.campaign
    choice = choose_workload(campaign)
    kernels, measurer = bisection(campaign, choice, None, pool, last_host(store, campaign_id, campaign.host))
    commit = gitrepo.resolve(campaign.repository, spec.commit).commit
    sides = sides_for(spec, commit, kernels, campaign_workdir(store, campaign_id), on_event)
    maker = ConfigMaker(kernels, commit, sides, SLOT)
    slots = lab_slots(campaign, choice, pool)
    return SetBisection(sides.units(), maker, slots[0] if slots else measurer, store, rules(spec, choice), on_event,
                        slots=slots), sides


def settings_kernel(choice: "KernelChoice", pool: "GuestPool | None" = None) -> "KernelArtifact":
    """A settings bisection's one kernel: a file, a stored kernel, or a commit built with its
    recipe (its CPUs leased through `pool`'s backend; without one, the flock leases)."""
    from orchestrator.kbuild.builder import default_builder

    if choice.file is not None:
        return Kernels().file(choice.file, choice.modules)
    if choice.stored is not None:
        return Kernels().stored(choice.stored, choice.modules)
    assert choice.commit is not None and choice.repository is not None
    kernels = Kernels(default_builder(pool.builds.hold if pool is not None else machine_build_lease(), note=say),
                      choice.repository, parse_recipe(list(choice.config)))
    return kernels.build(choice.commit, choice.modules).kernel


def settings_bisection(c: "SettingsCampaign", store: Store, campaign_id: int, pool: "GuestPool",
                       on_event: Callable[[Event], None]) -> "SetBisection":
    """A settings bisection over the real parts: the campaign's one kernel and guests running its
    workload on the slots of `pool` as a commit bisection's (`lab_slots`: the candidates the
    search may ask next measured at once; the endpoints and confirmation on the first host), or
    on one host (one slot: the candidates one after another; a resumed campaign goes on on the
    host of its runs)."""
    from orchestrator.measure.guests import PoolMeasurer
    from orchestrator.setbisect.setbisection import Rules, SetBisection
    from orchestrator.setbisect.settings import SettingsMaker

    common = c.common
    choice = choose_workload(common)
    measurer = PoolMeasurer(pool, common.guest, choice.workload, choice.params,
                            choice.workload.kernel_needs(choice.params), common.accel, "", common.timeouts.boot_s,
                            common.timeouts.run_s, last_host(store, campaign_id, common.host), one_host=True,
                            pinned=common.host is not None)
    units = c.units()
    rules = Rules(common.metric.name, choice.direction, common.metric.threshold, common.runs_per_boot,
                  common.boots_per_commit, common.max_boots_per_commit, common.alpha)
    slots = lab_slots(common, choice, pool)
    return SetBisection(units, SettingsMaker(settings_kernel(c.kernel, pool), c.good, c.bad, units),
                        slots[0] if slots else measurer, store, rules, on_event, slots=slots)
