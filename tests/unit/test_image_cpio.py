from __future__ import annotations

import io
import os
import stat
import subprocess
from pathlib import Path

import pytest

from orchestrator.image.cpio import Entry, EntryType, read_archive, write_archive

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="creating device nodes needs root")


def _sample_entries(tmp_path: Path) -> list[Entry]:
    host = tmp_path / "big.bin"
    host.write_bytes(bytes(range(256)) * 5000 + b"tail")
    return [
        Entry("/usr/bin/tool", EntryType.FILE, 0o755, b"#!/bin/sh\necho hi\n"),
        Entry("/usr/share/big.bin", EntryType.FILE, 0o644, host),
        Entry("/bin", EntryType.SYMLINK, 0o777, target="usr/bin"),
        Entry("/etc/conf", EntryType.FILE, 0o600, b"x"),
        Entry("/tmp", EntryType.DIR, 0o1777),
        Entry("/usr/lib64/ld.so", EntryType.SYMLINK, 0o777, target="/usr/lib/real-ld.so"),
        Entry("/empty", EntryType.FILE, 0o644, b""),
        Entry("/dev/console", EntryType.CHAR, 0o600, rdev=(5, 1)),
    ]


def _archive(entries: list[Entry]) -> bytes:
    out = io.BytesIO()
    write_archive(entries, out)
    return out.getvalue()


def _extract(archive: bytes, into: Path) -> None:
    into.mkdir()
    subprocess.run(
        ["cpio", "-i", "-d", "-m", "--quiet", "--no-absolute-filenames"],
        input=archive,
        cwd=into,
        check=True,
    )


@needs_root
def test_gnu_cpio_extracts_names_modes_symlinks_contents_and_devices(tmp_path: Path) -> None:
    entries = _sample_entries(tmp_path)
    out = tmp_path / "out"
    _extract(_archive(entries), out)

    assert (out / "usr/bin/tool").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE((out / "usr/bin/tool").stat().st_mode) == 0o755
    assert (out / "usr/share/big.bin").read_bytes() == (tmp_path / "big.bin").read_bytes()
    assert stat.S_IMODE((out / "etc/conf").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "tmp").stat().st_mode) == 0o1777
    assert os.readlink(out / "bin") == "usr/bin"
    assert os.readlink(out / "usr/lib64/ld.so") == "/usr/lib/real-ld.so"
    assert (out / "empty").read_bytes() == b""
    console = (out / "dev/console").lstat()
    assert stat.S_ISCHR(console.st_mode)
    assert (os.major(console.st_rdev), os.minor(console.st_rdev)) == (5, 1)


def test_gnu_cpio_lists_sorted_members_with_parents_first_owned_by_root_at_epoch(
    tmp_path: Path,
) -> None:
    archive = _archive(_sample_entries(tmp_path))
    names = subprocess.run(
        ["cpio", "-t", "--quiet"], input=archive, capture_output=True, check=True
    ).stdout.decode().split()
    assert names == [
        "bin",
        "dev",
        "dev/console",
        "empty",
        "etc",
        "etc/conf",
        "tmp",
        "usr",
        "usr/bin",
        "usr/bin/tool",
        "usr/lib64",
        "usr/lib64/ld.so",
        "usr/share",
        "usr/share/big.bin",
    ]
    verbose = subprocess.run(
        ["cpio", "-tv", "--quiet", "--numeric-uid-gid"], input=archive, capture_output=True, check=True
    ).stdout.decode().splitlines()
    for line in verbose:
        fields = line.split()
        assert fields[2:4] == ["0", "0"], line
        assert "1970" in line, line


def test_archive_is_padded_to_four_bytes_and_ends_with_trailer(tmp_path: Path) -> None:
    archive = _archive(_sample_entries(tmp_path))
    assert archive.startswith(b"070701")
    assert len(archive) % 4 == 0
    assert archive.rstrip(b"\0").endswith(b"TRAILER!!!")


def test_same_entries_in_any_order_give_identical_bytes(tmp_path: Path) -> None:
    entries = _sample_entries(tmp_path)
    assert _archive(entries) == _archive(list(reversed(entries)))


def test_reader_returns_what_the_writer_wrote(tmp_path: Path) -> None:
    members = list(read_archive(io.BytesIO(_archive(_sample_entries(tmp_path)))))
    by_path = {m.path: m for m in members}
    assert by_path["/usr/share/big.bin"].size == 256 * 5000 + 4
    assert by_path["/usr/lib64/ld.so"].target == "/usr/lib/real-ld.so"
    assert by_path["/dev/console"].rdev == (5, 1)
    assert by_path["/tmp"].mode == 0o1777
    assert by_path["/usr"].kind is EntryType.DIR


def test_reader_reads_an_archive_written_by_gnu_cpio(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "file").write_bytes(b"abc")
    os.symlink("sub/file", tree / "link")
    archive = subprocess.run(
        ["cpio", "-o", "-H", "newc", "--quiet"],
        input=b"sub\nsub/file\nlink\n",
        cwd=tree,
        capture_output=True,
        check=True,
    ).stdout
    members = {m.path: m for m in read_archive(io.BytesIO(archive))}
    assert members["/sub"].kind is EntryType.DIR
    assert (members["/sub/file"].kind, members["/sub/file"].size) == (EntryType.FILE, 3)
    assert members["/link"].target == "sub/file"


def test_two_entries_on_one_path_are_rejected() -> None:
    with pytest.raises(ValueError, match="two archive entries for /a"):
        _archive([Entry("/a", EntryType.FILE, 0o644, b"1"), Entry("/a", EntryType.FILE, 0o644, b"2")])


def test_entry_below_a_symlink_is_rejected() -> None:
    with pytest.raises(ValueError, match="which is a symlink"):
        _archive([Entry("/lib", EntryType.SYMLINK, 0o777, target="usr/lib"), Entry("/lib/x", EntryType.FILE, 0o644)])


def test_relative_and_dotdot_paths_are_rejected() -> None:
    for bad in ("relative/x", "/a/../b", "/"):
        with pytest.raises(ValueError, match="not an absolute image path"):
            _archive([Entry(bad, EntryType.FILE, 0o644)])
