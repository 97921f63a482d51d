"""Error classes: who is at fault decides what happens next.

UserError    bad input; the CLI prints one line and exits 2.
InfraError   the host broke (libvirt down, disk full, tool missing): retry or pause; exit 3.
KernelFault  the kernel under test is at fault (build, boot or workload failed): a bisection
             skips the commit (or marks it bad in boot-bisect mode); exit 4.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable


class VmbisectError(Exception):
    """Base class. `str(err)` is a one-line message fit for the terminal."""

    exit_code = 1


class UserError(VmbisectError):
    exit_code = 2


class InfraError(VmbisectError):
    exit_code = 3


class HostFailed(InfraError):
    """A lab host itself failed (SSH dropped, libvirt gone, the host vanished): an InfraError
    naming the host. A scheduler that catches it puts the work in flight back for another
    host's slot; the kernel under test is never blamed for it."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"host {host}: {message}")
        self.host = host
        self.reason = message


class KernelFault(VmbisectError):
    exit_code = 4
    detail_label = "console tail"

    def __init__(self, message: str, detail: str = "", detail_label: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail
        if detail_label is not None:
            self.detail_label = detail_label


class BuildFailed(KernelFault):
    """The commit does not build. `detail` holds the first error lines of the build log."""

    detail_label = "build log"


class BootFailed(KernelFault):
    """The guest did not come up: panic/oops on the console, boot timeout, agent silent.

    `detail` holds the console tail. `hung`: the guest neither answered nor showed a fault on
    its console before the boot timeout, a hang the emulator may cause as well as the kernel
    (the judge boots such a kernel once more before it counts as the kernel's failure).
    """

    def __init__(self, message: str, detail: str = "", hung: bool = False) -> None:
        super().__init__(message, detail)
        self.hung = hung


class WorkloadFailed(KernelFault):
    """The workload failed in a guest that came up. `detail` holds its output's tail.

    `timed_out`: the agent killed the tool at its time budget, a run that stalled in the guest
    (the emulator may cause that as well as the kernel: the judge boots such a kernel once more
    before it counts as the kernel's failure); `detail` then also holds what the guest was doing
    when the run was stopped.
    """

    def __init__(self, message: str, detail: str = "", detail_label: str | None = None,
                 timed_out: bool = False) -> None:
        super().__init__(message, detail, detail_label)
        self.timed_out = timed_out


# errno values that say the host, not the input or the kernel, is at fault.
HOST_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def host_fault(exc: OSError) -> InfraError | None:
    """An InfraError for a full, read-only or failing file system; None for other OSErrors."""
    if exc.errno not in HOST_ERRNOS:
        return None
    where = f": {exc.filename}" if exc.filename else ""
    return InfraError(f"{exc.strerror or os.strerror(exc.errno or 0)}{where}")


def choices_error(field: str, value: object, choices: Iterable[object] | str) -> UserError:
    """One-line error naming the field, the bad value and the valid choices."""
    listed = ", ".join(str(c) for c in choices) if not isinstance(choices, str) else choices
    return UserError(f"{field}: invalid value {value!r}; valid choices: {listed}")
