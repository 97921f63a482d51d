"""Pure: whose fault a failed kernel build is, read from its log.

"infra": the host broke (a missing tool or host library, a full disk, a compiler killed by
the OOM killer or a signal); retrying on a healthy host may succeed.
"kernel": the commit does not build (compile, assemble or link errors); a bisection skips it.
Host patterns are checked first: a full disk also makes the compiler print errors.
"""

from __future__ import annotations

import re

INFRA = "infra"
KERNEL = "kernel"
CONTEXT_LINES = 8

_INFRA_PATTERNS = [re.compile(p) for p in (
    r": not found$",                              # /bin/sh: 1: flex: not found
    r": command not found$",                      # bash: bc: command not found
    r"make(\[\d+\])?: [^:]+: (No such file or directory|Command not found)$",  # make: gcc-10: ...
    r"No space left on device",
    r"fixdep: not all data was written to the output",  # fixdep's only word on a full disk
    r"Disk quota exceeded",
    r"Read-only file system",
    r"Input/output error",
    r"Killed signal terminated program",
    r"signal 9 \(Killed\)|terminated by signal 9",
    r"virtual memory exhausted|Cannot allocate memory|out of memory allocating",
    r"cannot fork|Resource temporarily unavailable",
    r"fatal error: (openssl/|gelf\.h|libelf\.h|zlib\.h|ncurses|curses\.h|elfutils/|mpc\.h|gmp\.h)",
    r"please install libelf-dev",
    r"^Killed$",
)]
_KERNEL_PATTERNS = [re.compile(p) for p in (
    r": (fatal )?error: ",
    r"\bError: ",                                 # assembler
    r"undefined reference to",
    r"multiple definition of",
    r"^(ld|ld\.\w+|x86_64-linux-gnu-ld): .*(: in function|error|undefined|cannot find)",
    r"\*\*\* No rule to make target",
    r"make(\[\d+\])?: \*\*\* .*Error \d+",
)]


def _first(lines: list[str], patterns: list[re.Pattern[str]]) -> int | None:
    for index, line in enumerate(lines):
        if any(p.search(line) for p in patterns):
            return index
    return None


def classify(log: str) -> tuple[str, list[str]]:
    """(INFRA or KERNEL, the first error line and up to CONTEXT_LINES-1 lines after it).

    A log with no recognisable error line is the kernel's (make failed on its own terms);
    its last lines are returned.
    """
    lines = log.splitlines()
    for kind, patterns in ((INFRA, _INFRA_PATTERNS), (KERNEL, _KERNEL_PATTERNS)):
        at = _first(lines, patterns)
        if at is not None:
            return kind, lines[at:at + CONTEXT_LINES]
    return KERNEL, lines[-CONTEXT_LINES:]
