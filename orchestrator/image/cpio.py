"""newc ("070701") cpio archives, the format the Linux kernel unpacks as an initramfs.

The writer is deterministic: entries are sorted, parent directories are added before their
children, inode numbers are assigned in order, uid/gid and mtime are 0. Regular-file content
is either bytes or a host file that is streamed in chunks (so large files never sit in memory).
"""

from __future__ import annotations

import dataclasses
import enum
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from orchestrator.errors import InfraError

MAGIC = b"070701"
TRAILER = "TRAILER!!!"
HEADER_SIZE = 110
_CHUNK = 1 << 20


class Writable(Protocol):
    def write(self, data: bytes, /) -> object: ...


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class EntryType(enum.Enum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    CHAR = "char"


_TYPE_BITS = {
    EntryType.FILE: stat.S_IFREG,
    EntryType.DIR: stat.S_IFDIR,
    EntryType.SYMLINK: stat.S_IFLNK,
    EntryType.CHAR: stat.S_IFCHR,
}
_KIND_OF_TYPE = {bits: kind for kind, bits in _TYPE_BITS.items()}


@dataclass(frozen=True)
class Entry:
    """One archive member. `path` is absolute inside the image ("/usr/bin/fio")."""

    path: str
    kind: EntryType
    mode: int
    data: bytes | Path = b""
    target: str = ""
    rdev: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Member:
    """One member as read back from an archive (file content is skipped, not kept)."""

    path: str
    kind: EntryType
    mode: int
    size: int
    target: str
    rdev: tuple[int, int]


def normalize(path: str) -> str:
    """Absolute, normalized in-image path; ValueError for relative paths or `..`."""
    pure = PurePosixPath(path)
    if not pure.is_absolute() or ".." in pure.parts or pure == PurePosixPath("/"):
        raise ValueError(f"not an absolute image path below /: {path!r}")
    return str(pure)


def _sort_key(path: str) -> tuple[str, ...]:
    return PurePosixPath(path).parts


def complete(entries: Iterable[Entry]) -> list[Entry]:
    """Sorted entries with every missing parent directory added (mode 0755).

    Raises ValueError for two entries on one path or an entry below a non-directory.
    """
    by_path: dict[str, Entry] = {}
    for entry in entries:
        path = normalize(entry.path)
        if path in by_path:
            raise ValueError(f"two archive entries for {path}")
        by_path[path] = dataclasses.replace(entry, path=path)
    for path in list(by_path):
        for parent in PurePosixPath(path).parents:
            if str(parent) == "/":
                break
            existing = by_path.get(str(parent))
            if existing is None:
                by_path[str(parent)] = Entry(str(parent), EntryType.DIR, 0o755)
            elif existing.kind is not EntryType.DIR:
                raise ValueError(f"{path} lies below {parent}, which is a {existing.kind.value}")
    return [by_path[p] for p in sorted(by_path, key=_sort_key)]


def _header(
    *,
    ino: int,
    mode: int,
    nlink: int,
    size: int,
    rdev: tuple[int, int],
    namesize: int,
) -> bytes:
    fields = (ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], namesize, 0)
    return MAGIC + b"".join(b"%08X" % value for value in fields)


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 4)


def _write_member(
    out: Writable, *, name: str, ino: int, mode: int, nlink: int, size: int, rdev: tuple[int, int]
) -> None:
    encoded = name.encode() + b"\0"
    head = _header(ino=ino, mode=mode, nlink=nlink, size=size, rdev=rdev, namesize=len(encoded))
    out.write(head + encoded + _pad(len(head) + len(encoded)))


def _copy_host_file(source: Path, size: int, out: Writable) -> None:
    remaining = size
    with source.open("rb") as f:
        while remaining:
            chunk = f.read(min(_CHUNK, remaining))
            if not chunk:
                raise InfraError(f"{source} shrank while it was being archived")
            out.write(chunk)
            remaining -= len(chunk)


def write_archive(entries: Iterable[Entry], out: Writable) -> int:
    """Write a complete newc archive (with trailer) to `out`; returns the member count."""
    members = complete(entries)
    for ino, entry in enumerate(members, start=1):
        name = entry.path.lstrip("/")
        mode = _TYPE_BITS[entry.kind] | (entry.mode & 0o7777)
        if entry.kind is EntryType.FILE and isinstance(entry.data, Path):
            size = entry.data.stat().st_size
            _write_member(out, name=name, ino=ino, mode=mode, nlink=1, size=size, rdev=(0, 0))
            _copy_host_file(entry.data, size, out)
            out.write(_pad(size))
            continue
        body = _body(entry)
        nlink = 2 if entry.kind is EntryType.DIR else 1
        _write_member(out, name=name, ino=ino, mode=mode, nlink=nlink, size=len(body), rdev=entry.rdev)
        out.write(body + _pad(len(body)))
    _write_member(out, name=TRAILER, ino=0, mode=0, nlink=1, size=0, rdev=(0, 0))
    return len(members)


def _body(entry: Entry) -> bytes:
    if entry.kind is EntryType.SYMLINK:
        return entry.target.encode()
    if entry.kind is EntryType.FILE and isinstance(entry.data, bytes):
        return entry.data
    return b""


def _read_exact(stream: Readable, length: int) -> bytes:
    data = stream.read(length)
    if len(data) != length:
        raise InfraError("truncated cpio archive")
    return data


def read_archive(stream: Readable) -> Iterator[Member]:
    """Members of a newc archive up to its trailer; file bodies are skipped."""
    while True:
        head = _read_exact(stream, HEADER_SIZE)
        if head[:6] != MAGIC:
            raise InfraError(f"not a newc cpio archive (magic {head[:6]!r})")
        fields = [int(head[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = _read_exact(stream, namesize)[:-1].decode()
        _read_exact(stream, -(HEADER_SIZE + namesize) % 4)
        if name == TRAILER:
            return
        kind = _KIND_OF_TYPE.get(stat.S_IFMT(mode))
        if kind is None:
            raise InfraError(f"cpio member {name} has an unsupported type (mode {mode:o})")
        target = ""
        if kind is EntryType.SYMLINK:
            target = _read_exact(stream, size).decode()
        else:
            _skip(stream, size)
        _read_exact(stream, -size % 4)
        yield Member("/" + name, kind, stat.S_IMODE(mode), size, target, (fields[9], fields[10]))


def _skip(stream: Readable, length: int) -> None:
    while length:
        step = min(length, _CHUNK)
        _read_exact(stream, step)
        length -= step
