"""Disk files are 0600 in a 0711 directory of their own, also inside a shared guest.disks.directory;
a directory that already exists (files or symlinks planted in it) is refused, and the files are
opened O_EXCL | O_NOFOLLOW."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from orchestrator.backends.libvirt_vm import _make_disks
from orchestrator.vm.spec import DiskSpec, VmSpec


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("backing", ["raw", "qcow2"])
def test_disk_files_are_0600_in_a_0711_directory_inside_a_world_writable_one(tmp_path, backing):
    if backing == "qcow2" and shutil.which("qemu-img") is None:
        pytest.skip("qemu-img missing (make setup installs qemu-utils)")
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    spec = VmSpec(disks=DiskSpec(count=2, size_mib=4, backing=backing, directory=shared, cache="writeback"))
    disks = _make_disks(spec, tmp_path / "run" / "vmbisect-1-abcd")
    assert len(disks) == 2 and {d.parent for d in disks} == {shared / "vmbisect-1-abcd"}
    assert mode(shared / "vmbisect-1-abcd") == 0o711  # others may reach a named file, not list or write
    assert [mode(d) for d in disks] == [0o600, 0o600]


def test_a_disk_directory_someone_prepared_with_a_symlink_is_refused_not_written_through(tmp_path):
    workdir = tmp_path / "run" / "vmbisect-1-abcd"
    workdir.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (workdir / "vmbisect-1-abcd-disk0.raw").symlink_to(victim)
    with pytest.raises(FileExistsError):
        _make_disks(VmSpec(disks=DiskSpec(count=1, size_mib=4, cache="writeback")), workdir)
    assert victim.read_text() == "keep"
