"""What an image holds, read back from the archive itself (for `vmbisect doctor` and debugging)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from orchestrator.errors import InfraError
from orchestrator.image.cpio import EntryType, Member, read_archive

_TYPE_LETTER = {EntryType.FILE: "-", EntryType.DIR: "d", EntryType.SYMLINK: "l", EntryType.CHAR: "c"}


def list_image(path: Path) -> tuple[Member, ...]:
    """Members of a .cpio or .cpio.gz image, in archive order."""
    try:
        with path.open("rb") as probe:
            gzipped = probe.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gzipped else path.open("rb")) as stream:
            return tuple(read_archive(stream))
    except (OSError, EOFError, zlib.error) as err:
        raise InfraError(f"cannot read guest image {path}: {err}") from err


def format_member(member: Member) -> str:
    """One `ls -l`-like line: type and mode, size (or device numbers), path, symlink target."""
    kind = f"{_TYPE_LETTER[member.kind]}{member.mode:04o}"
    size = f"{member.rdev[0]},{member.rdev[1]}" if member.kind is EntryType.CHAR else str(member.size)
    line = f"{kind} {size:>10} {member.path}"
    return f"{line} -> {member.target}" if member.kind is EntryType.SYMLINK else line
