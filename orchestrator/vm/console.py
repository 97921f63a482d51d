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


def console_fault(text: str) -> str | None:
    """The first fault line found, or None."""
    found: list[tuple[int, str]] = []
    for pattern in FAULT_PATTERNS:
        m = pattern.search(text)
        if m:
            found.append((m.start(), m.group(0).strip()))
    return min(found)[1] if found else None


def fault_hint(fault: str) -> str:
    """What to do about a fault, where vmbisect knows."""
    return NO_AGENT_PORT_HINT if "did not appear" in fault else ""


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def kernel_cmdline(extra: str = "") -> str:
    """Serial console, reboot (hence domain destroy) at once on panic, our /init."""
    base = "console=ttyS0,115200 panic=-1 rdinit=/init"
    return f"{base} {extra}".strip()
