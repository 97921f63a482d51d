"""The guest's clocksource: which clock the guest kernel reads time from, chosen on its
command line. It is the emulator's clock, not the kernel's code under test.

Under TCG, QEMU's default CPU model (qemu64) reports an AMD vendor without an invariant TSC,
so Linux marks the TSC unstable in an SMP guest and keeps time with the emulated HPET: every
read is an MMIO exit, and before QEMU 10.2 it takes QEMU's big lock. On the demo's kernel
that cost 29% of the guest's samples, 31% of its read IOPS and a third more between-boot
noise than `clocksource=tsc tsc=reliable` (docs/measurements/noise.md). Under KVM the guest
keeps time with kvm-clock (or the TSC where invariant) and pays none of this.

Choices (the campaign file's `guest.clock`, the commands' `--clock`):
    auto       tsc under TCG, the kernel's own choice under KVM (the default)
    tsc        clocksource=tsc tsc=reliable: the TSC, trusted without the watchdog
    hpet       clocksource=hpet
    acpi_pm    clocksource=acpi_pm
    kvm-clock  clocksource=kvm-clock (KVM only)
    kernel     nothing on the command line: the kernel picks (what every guest did before
               `guest.clock` existed; a campaign stored before then is resumed with it)

Pinning the clock also keeps it the same across a bisected range: the rule by which Linux
marks the TSC unstable changed in 6.12, so two kernels of one range could otherwise keep time
with different clocks on the same guest.
"""

from __future__ import annotations

from orchestrator.errors import choices_error

CLOCKS = ("auto", "tsc", "hpet", "acpi_pm", "kvm-clock", "kernel")
DEFAULT_CLOCK = "auto"
# what a stored guest without a clock meant: the kernel's own choice
LEGACY_CLOCK = "kernel"

_WORDS = {
    "tsc": "clocksource=tsc tsc=reliable",
    "hpet": "clocksource=hpet",
    "acpi_pm": "clocksource=acpi_pm",
    "kvm-clock": "clocksource=kvm-clock",
    "kernel": "",
}


def check_clock(clock: str, field: str = "clock") -> str:
    if clock not in CLOCKS:
        raise choices_error(field, clock, CLOCKS)
    return clock


def resolved(clock: str, accel: str) -> str:
    """The clock a guest under `accel` (kvm or tcg) keeps time with for the choice `clock`."""
    if clock == "auto":
        return "tsc" if accel == "tcg" else "kernel"
    return clock


def clock_cmdline(clock: str, accel: str) -> str:
    """The kernel command line words that choose the clock ("" for the kernel's own choice)."""
    return _WORDS[resolved(check_clock(clock), accel)]
