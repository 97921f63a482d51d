"""Noise of one kernel in one guest shape and workload, one source varied at a time
(`make bench-noise`, docs/measurements/noise.md).

Each round boots every variant once, in an order that alternates between rounds (A B C, C B
A, ...), so a host that drifts during the bench spreads over every variant alike; each boot
runs the workload `runs_per_boot` times. Per variant and metric it prints the between-boot
CoV (the boots' means, what a bisection pays for), the within-boot CoV (runs around their
boot's mean), and the change of the mean and of the between-boot noise against the first
variant, each with its 95% interval.

This module is pure: the variants as data, what each does to a guest, the table. __main__
boots the guests.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError, choices_error
from orchestrator.stats import Boot, compare_boots, components, variance_ratio
from orchestrator.vm.spec import Topology, VmSpec


@dataclass(frozen=True)
class Variant:
    """One source of noise set one way: the guest's clock, its topology, where its threads run,
    its disks' I/O path, or extra kernel command line words. None leaves the campaign's own."""

    name: str
    what: str
    clock: str | None = None
    one_socket: bool = False
    pin_vcpus: bool = False
    emulator_pin: str | None = None
    iothreads: int | None = None
    aio: str | None = None
    cache: str | None = None
    disk_dir: str | None = None
    append: str = ""


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("kernel", "the kernel's own clock (under TCG: the emulated HPET)", clock="kernel"),
    Variant("hpet", "clocksource=hpet", clock="hpet"),
    Variant("acpi_pm", "clocksource=acpi_pm", clock="acpi_pm"),
    Variant("tsc", "clocksource=tsc tsc=reliable", clock="tsc"),
    Variant("tsc+1socket", "tsc; one socket of N cores (libvirt's default is a socket per vCPU)", clock="tsc",
            one_socket=True),
    Variant("tsc+pin", "tsc; vCPU i pinned to host CPU i", clock="tsc", pin_vcpus=True),
    Variant("tsc+pin+emu0", "tsc; vCPU i on host CPU i, QEMU's own threads on host CPU 0", clock="tsc",
            pin_vcpus=True, emulator_pin="0"),
    Variant("tsc+iothread", "tsc; one I/O thread serves the virtio disks", clock="tsc", iothreads=1),
    Variant("tsc+io_uring", "tsc; host I/O by io_uring (cache=none)", clock="tsc", aio="io_uring"),
    Variant("tsc+native", "tsc; host I/O by Linux native AIO (cache=none)", clock="tsc", aio="native"),
    Variant("tsc+writeback", "tsc; host page cache (cache=writeback)", clock="tsc", cache="writeback"),
    Variant("tsc+tmpfs", "tsc; disk files in host memory (/dev/shm, cache=writeback): the host's storage out",
            clock="tsc", disk_dir="/dev/shm", cache="writeback"),
    Variant("tsc+1socket+tmpfs", "tsc, one socket, disk files in host memory", clock="tsc", one_socket=True,
            disk_dir="/dev/shm", cache="writeback"),
    Variant("tsc+nokaslr", "tsc; nokaslr (layout fixed: hides layout effects, never a default)", clock="tsc",
            append="nokaslr"),
)}


def variants(names: Sequence[str]) -> list[Variant]:
    for name in names:
        if name not in VARIANTS:
            raise choices_error("variant", name, VARIANTS)
    if len(set(names)) != len(names):
        raise UserError("variant: each variant once")
    return [VARIANTS[n] for n in names]


def guest_of(v: Variant, spec: VmSpec, host_cpus: int) -> VmSpec:
    """The campaign's guest with the variant's source set its way."""
    disks = spec.disks
    if v.iothreads is not None and disks.controller in ("virtio-blk", "virtio-scsi"):
        disks = dataclasses.replace(disks, iothreads=v.iothreads)
    if v.aio is not None:
        disks = dataclasses.replace(disks, aio=v.aio, cache="none" if v.aio == "native" else disks.cache)
    if v.cache is not None:
        disks = dataclasses.replace(disks, cache=v.cache)
    if v.disk_dir is not None:
        disks = dataclasses.replace(disks, directory=Path(v.disk_dir))
    out = dataclasses.replace(spec, disks=disks)
    if v.clock is not None:
        out = dataclasses.replace(out, clock=v.clock)
    if v.one_socket:
        out = dataclasses.replace(out, topology=Topology(1, spec.vcpus, 1))
    if v.pin_vcpus:
        out = dataclasses.replace(out, pinning=tuple(str(i % host_cpus) for i in range(spec.vcpus)))
    if v.emulator_pin is not None:
        out = dataclasses.replace(out, emulator_pin=v.emulator_pin)
    return out.validate()


def order(names: Sequence[str], round_no: int) -> list[str]:
    """The boots of one round: forward in even rounds, backward in odd ones (A B, B A, ...)."""
    return list(names) if round_no % 2 == 0 else list(reversed(names))


@dataclass(frozen=True)
class Row:
    variant: str
    metric: str
    boots: int
    mean: float
    between_cov: float
    within_cov: float
    change: str          # the mean against the first variant's, with its 95% interval
    noise_ratio: str     # the between-boot CoV against the first variant's, with its 95% interval


def rows(runs: Mapping[str, Mapping[str, Sequence[Sequence[float]]]], metric: str) -> list[Row]:
    """Per variant (in `runs`' order), the `metric`'s runs grouped by boot: the table's rows."""
    out = []
    names = list(runs)
    ref = _boots(runs[names[0]].get(metric, ()))
    for name in names:
        boots = _boots(runs[name].get(metric, ()))
        if not boots:
            continue
        c = components([boots])
        means = [statistics.fmean(b.runs) for b in boots]
        change = noise = "-"
        if name != names[0]:
            t = compare_boots(ref, boots)
            change = "-" if t is None else f"{t.change:+.1%} ({t.low:+.1%}..{t.high:+.1%})"
            ratio = variance_ratio(ref, boots)
            noise = "-" if ratio is None else f"{ratio[0]:.2f}x ({ratio[1]:.2f}..{ratio[2]:.2f})"
        out.append(Row(name, metric, len(boots), statistics.fmean(means), _boot_cov(boots), c.within_cov,
                       change, noise))
    return out


def _boots(per_boot: Sequence[Sequence[float]]) -> list[Boot]:
    return [Boot(i, tuple(r)) for i, r in enumerate(per_boot) if r and min(r) > 0]


def _boot_cov(boots: Sequence[Boot]) -> float:
    """The CoV of the boots' means (log scale): each boot as a bisection counts it."""
    values = [b.value for b in boots]
    return math.sqrt(math.expm1(statistics.variance(values))) if len(values) > 1 else 0.0


def table(all_rows: Sequence[Row]) -> list[str]:
    lines = ["| variant | metric | boots | mean | between-boot CoV | within-boot CoV | mean vs first (95% CI) "
             "| between-boot CoV vs first (95% CI) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in all_rows:
        lines.append(f"| {r.variant} | {r.metric} | {r.boots} | {r.mean:.4g} | {r.between_cov:.1%} | "
                     f"{r.within_cov:.1%} | {r.change} | {r.noise_ratio} |")
    return lines
