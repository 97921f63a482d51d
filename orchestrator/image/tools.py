"""The host programs an image carries, where to find them, and which package provides them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InfraError


@dataclass(frozen=True)
class Tool:
    """A program to copy into the image.

    `candidates`: host paths, the first that exists is used (and kept at that path in the image).
    `data`: host files the program needs at run time, copied to the same paths.
    `package`: the Debian package to install when it is missing; `hint` says more if needed.
    """

    candidates: tuple[str, ...]
    package: str
    data: tuple[str, ...] = ()
    hint: str = ""


_NON_FREE = "it is in Debian's non-free component (scripts/setup.sh enables it)"

BUSYBOX = "busybox"
MANDATORY_TOOLS = frozenset({BUSYBOX, "fio"})

DEFAULT_TOOLS: Mapping[str, Tool] = {
    BUSYBOX: Tool(("/bin/busybox", "/usr/bin/busybox"), "busybox-static"),
    "fio": Tool(("/usr/bin/fio",), "fio"),
    "dbench": Tool(("/usr/bin/dbench",), "dbench", data=("/usr/share/dbench/client.txt",)),
    "netperf": Tool(("/usr/bin/netperf",), "netperf", hint=_NON_FREE),
    "netserver": Tool(("/usr/bin/netserver",), "netperf", hint=_NON_FREE),
    "mkfs.ext4": Tool(
        ("/sbin/mkfs.ext4", "/usr/sbin/mkfs.ext4"), "e2fsprogs", data=("/etc/mke2fs.conf",)
    ),
    "mkfs.xfs": Tool(("/sbin/mkfs.xfs", "/usr/sbin/mkfs.xfs"), "xfsprogs"),
}

_APPLET = re.compile(r"^[A-Za-z0-9_.\[\]-]+$")


def parse_applet_list(output: str) -> tuple[str, ...]:
    """Applet names from `busybox --list`; InfraError unless "sh" is among them."""
    names = tuple(line.strip() for line in output.splitlines() if line.strip())
    bad = [name for name in names if not _APPLET.match(name)]
    if bad:
        raise InfraError(f"unexpected applet name in `busybox --list` output: {bad[0]!r}")
    if "sh" not in names:
        raise InfraError("busybox has no sh applet; install Debian's busybox-static")
    return names


def list_applets(busybox: Path) -> tuple[str, ...]:
    try:
        done = subprocess.run(
            [str(busybox), "--list"], capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise InfraError(f"cannot run {busybox} --list: {err}") from err
    if done.returncode != 0:
        raise InfraError(f"{busybox} --list failed: {done.stderr.strip()}")
    return parse_applet_list(done.stdout)
