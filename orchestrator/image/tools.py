"""The host programs an image carries, where to find them, and which package provides them."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import InfraError


@dataclass(frozen=True)
class ImageTool:
    """A program to copy into the image.

    `candidates`: host paths, the first that exists is used (and kept at that path in the image).
    `data`: host files the program needs at run time, copied to the same paths.
    `package`: the Debian package to install when it is missing; `hint` says more if needed.
    """

    candidates: tuple[str, ...]
    package: str
    data: tuple[str, ...] = ()
    hint: str = ""


BUSYBOX = "busybox"
MANDATORY_TOOLS = frozenset({BUSYBOX, "fio"})


def default_tools() -> dict[str, ImageTool]:
    """busybox, and every program a workload's guests carry (workloads/<name>/workload.yaml,
    `guest_tools`)."""
    from orchestrator.workloads.definition import load_all

    tools = {BUSYBOX: ImageTool(("/bin/busybox", "/usr/bin/busybox"), "busybox-static")}
    for workload in load_all().values():
        for name, t in workload.guest_tools.items():
            tools[name] = ImageTool(tuple(t["paths"]), str(t["package"]), tuple(t.get("data", ())), str(t.get("hint", "")))
    return tools


DEFAULT_TOOLS: Mapping[str, ImageTool] = default_tools()

PERF = "perf"
PERF_TOOL = ImageTool(("/usr/bin/perf",), "linux-perf")


def profile_tools() -> dict[str, ImageTool]:
    """The tools of a profile boot's image: every default one and perf (with its libraries, as
    any tool). Only profile boots carry it (orchestrator/explain/profile_boots.py): a measured
    guest's image stays as it was, its page cache not 30 MB smaller."""
    return {**DEFAULT_TOOLS, PERF: PERF_TOOL}

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
