"""What a workload needs from the guest kernel, checked against the kernel's .config before a
guest boots, and the failures a kernel config explains, recognised when no .config is known.

Each workload.yaml lists the options it needs with the reason (lkp-tests' `need_kconfig`):

    kconfig:
      POSIX_TIMERS: setitimer/alarm for netperf's test-length timer
    kconfig_by_param:
      fs:
        xfs: {XFS_FS: mount -t xfs}

`needed(workload, point)` gives the options one parameter set needs; `missing(needed, config)`
those a .config lacks (not set, or absent); `config_of(kernel)` finds the .config of a kernel
image where vmbisect or Debian keep one. `explain(text)` turns a failure's output into a hint
naming the likely option: ENOSYS, an unknown filesystem type, a missing /proc or /sys file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orchestrator.errors import WorkloadFailed
from orchestrator.kbuild.kconfig import NOT_SET, parse_config

_OPTION = re.compile(r"^[A-Z0-9_]+$")


def parse_needs(raw: Mapping[str, Any], where: str) -> tuple[dict[str, str], dict[str, dict[str, dict[str, str]]]]:
    """The `kconfig` and `kconfig_by_param` keys of a workload.yaml, checked."""
    always = {str(k): str(v) for k, v in (raw.get("kconfig") or {}).items()}
    by_param: dict[str, dict[str, dict[str, str]]] = {}
    for param, values in (raw.get("kconfig_by_param") or {}).items():
        by_param[str(param)] = {str(value): {str(k): str(v) for k, v in opts.items()}
                                for value, opts in (values or {}).items()}
    options = list(always) + [o for values in by_param.values() for opts in values.values() for o in opts]
    bad = [o for o in options if not _OPTION.match(o) or o.startswith("CONFIG_")]
    if bad:
        raise ValueError(f"{where}: kconfig options are written without CONFIG_, in capitals: {', '.join(bad)}")
    return always, by_param


def needed(always: Mapping[str, str], by_param: Mapping[str, Mapping[str, Mapping[str, str]]],
           point: Mapping[str, Any]) -> dict[str, str]:
    """CONFIG_ option -> why, for one parameter set."""
    out = {f"CONFIG_{k}": v for k, v in always.items()}
    for param, values in by_param.items():
        for option, why in values.get(str(point.get(param)), {}).items():
            out[f"CONFIG_{option}"] = why
    return out


def missing(need: Mapping[str, str], config: Mapping[str, str]) -> list[tuple[str, str]]:
    """(option, why) for every needed option the .config does not build in or as a module."""
    return [(o, why) for o, why in need.items() if config.get(o, NOT_SET) not in ("y", "m")]


def describe_missing(workload: str, gaps: list[tuple[str, str]], kernel: str) -> str:
    """One line: what the kernel lacks and what to add to its recipe."""
    listed = "; ".join(f"{o} ({why})" for o, why in gaps)
    fix = ", ".join(f"{o}=y" for o, _ in gaps)
    return f"{workload} needs {listed}, which {kernel} lacks; add {fix} to the kernel recipe"


def config_of(kernel: Path) -> dict[str, str] | None:
    """The .config of a kernel image: `config` beside an image in vmbisect's kernel store, or
    /boot/config-<release> beside a distribution /boot/vmlinuz-<release>. None when unknown."""
    candidates = [kernel.parent / "config"]
    if kernel.name.startswith("vmlinuz-"):
        candidates.append(kernel.parent / ("config-" + kernel.name.removeprefix("vmlinuz-")))
    for path in candidates:
        try:
            return parse_config(path.read_text(errors="replace"))
        except OSError:
            continue
    return None


def check_kernel(workload: str, needs: Mapping[str, str], kernel: Path, describe: str = "") -> None:
    """Before a boot: WorkloadFailed naming every option the kernel's known .config lacks.
    A kernel whose .config is unknown passes; its failures are explained by `explain`."""
    config = config_of(kernel)
    if config is None:
        return
    gaps = missing(needs, config)
    if gaps:
        raise WorkloadFailed(describe_missing(workload, gaps, describe or f"the kernel {kernel}"))


# (pattern over the failure text, hint); the first match wins. Options are the ones a minimal
# (tinyconfig-based) guest kernel is known to lack for these tools.
_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"alarm timer.*errno 38\b|setitimer.*(errno 38\b|Function not implemented)", re.I | re.S),
     "the guest kernel has no interval timers (ENOSYS): likely CONFIG_POSIX_TIMERS is not set"),
    (re.compile(r"unknown filesystem type '?ext4'?", re.I), "the guest kernel cannot mount ext4: likely CONFIG_EXT4_FS is not set"),
    (re.compile(r"unknown filesystem type '?xfs'?", re.I), "the guest kernel cannot mount xfs: likely CONFIG_XFS_FS is not set"),
    (re.compile(r"unknown filesystem type '?(\w+)'?", re.I), "the guest kernel lacks the filesystem {0}"),
    (re.compile(r"io_uring.*(errno 38\b|Function not implemented|ENOSYS)", re.I | re.S),
     "the guest kernel has no io_uring (ENOSYS): likely CONFIG_IO_URING is not set"),
    (re.compile(r"(io_setup|libaio).*(errno 38\b|Function not implemented|ENOSYS)", re.I | re.S),
     "the guest kernel has no native AIO (ENOSYS): likely CONFIG_AIO is not set"),
    (re.compile(r"(shmget|shmat).*(errno 38\b|Function not implemented|ENOSYS)", re.I | re.S),
     "the guest kernel has no System V IPC (ENOSYS): likely CONFIG_SYSVIPC is not set"),
    (re.compile(r"errno 38\b|Function not implemented|\bENOSYS\b"),
     "a system call the tool needs is missing from the guest kernel (ENOSYS); compare its config "
     "with kconfigs/guest-base.config"),
    (re.compile(r"(/proc/[\w/.-]+)['\"]?: No such file or directory"),
     "the guest kernel has no {0}: likely a /proc option (CONFIG_PROC_FS and its sub-options) is not set"),
    (re.compile(r"(/sys/[\w/.-]+)['\"]?: No such file or directory"),
     "the guest kernel has no {0}: likely a sysfs option for that device or subsystem is not set"),
)


def with_hint(exc: WorkloadFailed) -> WorkloadFailed:
    """The failure again with the likely kernel option appended, when its output names one."""
    hint = explain(f"{exc}\n{exc.detail}")
    if hint is None or hint in str(exc):
        return exc
    return WorkloadFailed(f"{exc}; {hint}", exc.detail, exc.detail_label, exc.timed_out)


def explain(text: str) -> str | None:
    """A one-line hint naming the likely kernel option behind a failure's output, or None."""
    for pattern, hint in _HINTS:
        m = pattern.search(text)
        if m:
            return hint.format(*m.groups())
    return None
