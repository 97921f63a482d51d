"""Content-addressed pushes of kernel and guest images to a lab host.

A file lands at `<dir>/<sha256><suffix>`. When the host already holds that name with that
sha256 nothing moves; otherwise the file goes to a temporary name (`.<sha256>.<pid>-<rand>.part`),
its sha256 is read back on the host, and only a match is renamed into place, so a reader never
sees a half-written or corrupted image under its final name.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Protocol

from orchestrator.errors import HostFailed
from orchestrator.hosts.ssh import Completed

PART_SUFFIX = ".part"


class Remote(Protocol):
    name: str

    def run(self, argv: list[str], stdin: bytes = b"", timeout_s: float = 120.0, check: bool = True) -> Completed: ...
    def put(self, local: Path, remote: PurePath) -> None: ...
    def rename(self, old: PurePath, new: PurePath) -> None: ...


@dataclass(frozen=True)
class Pushed:
    path: PurePath
    sha256: str
    transferred: bool
    seconds: float
    size: int


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def part_name(sha256: str, pid: int | None = None) -> str:
    return f".{sha256}.{pid or os.getpid()}-{secrets.token_hex(4)}{PART_SUFFIX}"


def part_owner(name: str) -> int | None:
    """The pushing controller's pid in a temporary name, None for any other name."""
    if not (name.startswith(".") and name.endswith(PART_SUFFIX)):
        return None
    owner = name[: -len(PART_SUFFIX)].rsplit(".", 1)[-1].split("-")[0]
    return int(owner) if owner.isdigit() else None


def remote_sha256(host: Remote, path: PurePath) -> str | None:
    done = host.run(["sha256sum", "--", str(path)], check=False)
    return done.text.split()[0] if done.exit_code == 0 and done.text.strip() else None


def push(host: Remote, local: Path, directory: PurePath, sha256: str | None = None,
         suffix: str = "") -> Pushed:
    """Make `local` available on the host under its content address; skip what is there."""
    started = time.monotonic()
    digest = sha256 or file_sha256(local)
    size = local.stat().st_size
    target = directory / f"{digest}{suffix}"
    if remote_sha256(host, target) == digest:
        return Pushed(target, digest, False, time.monotonic() - started, size)
    host.run(["mkdir", "-p", "--", str(directory)])
    part = directory / part_name(digest)
    try:
        host.put(local, part)
        got = remote_sha256(host, part)
        if got != digest:
            raise HostFailed(host.name, f"pushed {local.name} but the host reads sha256 {got or 'nothing'}, "
                                        f"not {digest}: disk full or corrupted transfer")
        host.rename(part, target)
    except HostFailed:
        try:
            host.run(["rm", "-f", "--", str(part)], check=False)
        except HostFailed:
            pass
        raise
    return Pushed(target, digest, True, time.monotonic() - started, size)
