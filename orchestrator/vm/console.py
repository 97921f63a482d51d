"""Pure reading of a guest's serial console log: faults, and the tail to show a user."""

from __future__ import annotations

import re

# Lines that mean the kernel under test broke while booting.
FAULT_PATTERNS = (
    re.compile(r"Kernel panic - not syncing.*"),
    re.compile(r"\bOops(?::| -).*"),
    re.compile(r"^\s*(?:\[[ \d.]+\]\s*)?BUG: .*", re.MULTILINE),
    re.compile(r"general protection fault.*"),
    re.compile(r"vmbisect-agent: .*(?:did not appear|fatal).*"),
)

NO_AGENT_PORT_HINT = (
    "the kernel has no virtio console (CONFIG_VIRTIO_CONSOLE, with VIRTIO_PCI): build it in, "
    "or for a distribution kernel pass --initrd-modules-from RELEASE"
)


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> tuple[int, str] | None:
    """The offset and the line of the earliest match of any of `patterns`, or None."""
    found = [(m.start(), m.group(0).strip()) for m in (p.search(text) for p in patterns) if m]
    return min(found) if found else None


def console_fault(text: str) -> str | None:
    """The first fault line found, or None."""
    first = _first(FAULT_PATTERNS, text)
    return first[1] if first else None


# Lines that open a kernel report while a workload runs: a fault, a lockup, a stall, a hung
# task or a warning. What the console showed first says more than its last lines, which a long
# report fills with registers and frames.
REPORT_PATTERNS = (
    *FAULT_PATTERNS,
    re.compile(r"watchdog: BUG: soft lockup.*"),
    re.compile(r"rcu: INFO: .*detected stalls?.*"),
    re.compile(r"INFO: task .* blocked for more than.*"),
    re.compile(r"WARNING: CPU: .*"),
)


def first_report(text: str) -> tuple[int, str] | None:
    """Where the first kernel report begins (the index of its line) and its line, or None."""
    first = _first(REPORT_PATTERNS, text)
    return (text.count("\n", 0, first[0]), first[1]) if first else None


def excerpt(text: str, report: tuple[int, str] | None, lines: int = 30, head: int = 12) -> str:
    """The console to show a user after a hang: the opening `head` lines of `report` (the
    first kernel report, as `first_report` found it), then the last `lines` lines (once, where
    the two meet)."""
    all_lines = text.rstrip("\n").splitlines()
    last = max(len(all_lines) - lines, 0)
    if report is None or report[0] >= last:
        return tail(text, lines)
    first = report[0]
    if first + head >= last:
        return "\n".join(all_lines[first:])
    return "\n".join([*all_lines[first:first + head], "[...]", *all_lines[last:]])


def fault_hint(fault: str) -> str:
    """What to do about a fault, where vmbisect knows."""
    return NO_AGENT_PORT_HINT if "did not appear" in fault else ""


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def kernel_cmdline(extra: str = "", clock: str = "") -> str:
    """Serial console, reboot (hence domain destroy) at once on panic, our /init, the clock's
    words (orchestrator/vm/clocksource.py), then the caller's: a word of theirs wins over ours."""
    base = "console=ttyS0,115200 panic=-1 rdinit=/init"
    return " ".join(w for w in (base, clock, extra) if w)
