"""Shared libraries an ELF needs, as the host's dynamic loader resolves them (via ldd).

ldd runs the loader in trace mode, so one call already reports the whole transitive closure
(libraries of libraries, the loader itself) with the exact host paths the loader picked,
RUNPATHs included. Running it once per executable is therefore enough.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from orchestrator.errors import InfraError

_LIBRARY = re.compile(r"^(?P<name>\S+) => (?P<path>/\S*) \(0x[0-9a-f]+\)$")
_MISSING = re.compile(r"^(?P<name>\S+) => not found$")
_LOADER = re.compile(r"^(?P<path>/\S+) \(0x[0-9a-f]+\)$")
_VIRTUAL = re.compile(r"^[^/\s]+ \(0x[0-9a-f]+\)$")
_NOT_DYNAMIC = ("statically linked", "not a dynamic executable")


def parse_ldd(binary: str, output: str) -> tuple[Path, ...]:
    """Host paths of the libraries in `ldd binary` output (stdout then stderr), in ldd's order.

    Static and non-ELF files give (). Virtual objects such as linux-vdso.so.1 are left out.
    A library the loader cannot find, or any line this parser does not know, is an InfraError:
    the binary would not run in the guest.
    """
    paths: list[Path] = []
    for raw in output.splitlines():
        line = raw.strip()
        if not line or line in _NOT_DYNAMIC or _VIRTUAL.match(line):
            continue
        missing = _MISSING.match(line)
        if missing:
            raise InfraError(
                f"{binary} needs {missing['name']}, which the host's loader cannot find; "
                "install the package that provides it"
            )
        found = _LIBRARY.match(line) or _LOADER.match(line)
        if found is None:
            raise InfraError(f"cannot use ldd output for {binary}: {line}")
        path = Path(found["path"])
        if path not in paths:
            paths.append(path)
    return tuple(paths)


def run_ldd(binary: Path) -> str:
    """stdout followed by stderr of `ldd binary`."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise InfraError("ldd not found; install the Debian package libc-bin")
    try:
        done = subprocess.run(
            [ldd, "--", str(binary)], capture_output=True, text=True, check=False, timeout=60
        )
    except subprocess.TimeoutExpired as err:
        raise InfraError(f"ldd {binary} did not finish within 60 s") from err
    return done.stdout + done.stderr


def shared_libraries(binaries: Iterable[Path]) -> tuple[Path, ...]:
    """Union of the libraries of `binaries`, first-seen order."""
    seen: dict[Path, None] = {}
    for binary in binaries:
        for path in parse_ldd(str(binary), run_ldd(binary)):
            seen.setdefault(path, None)
    return tuple(seen)
