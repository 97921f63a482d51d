from __future__ import annotations

import pytest

from orchestrator.errors import UserError
from orchestrator.image.cpio import EntryType
from orchestrator.image.tree import Blob, ImageTree


def test_files_below_a_merged_usr_directory_symlink_are_stored_below_its_target() -> None:
    tree = ImageTree()
    tree.add_symlink("/lib", "usr/lib")
    placed = tree.add_file("/lib/x86_64-linux-gnu/libc.so.6", Blob(b"libc"), 0o644)
    assert placed == "/usr/lib/x86_64-linux-gnu/libc.so.6"
    assert [n.path for n in tree.nodes()] == ["/lib", "/usr/lib/x86_64-linux-gnu/libc.so.6"]


def test_absolute_and_dotdot_symlink_targets_are_followed_for_directories() -> None:
    tree = ImageTree()
    tree.add_symlink("/lib64", "/usr/lib64")
    tree.add_symlink("/usr/lib64", "../usr/lib")
    assert tree.canonical("/lib64/ld.so") == "/usr/lib/ld.so"


def test_the_last_component_is_not_resolved() -> None:
    tree = ImageTree()
    tree.add_symlink("/bin", "usr/bin")
    tree.add_symlink("/bin/sh", "busybox")
    assert tree.canonical("/bin/sh") == "/usr/bin/sh"
    assert tree.exists("/usr/bin/sh")
    assert next(n for n in tree.nodes() if n.path == "/usr/bin/sh").kind is EntryType.SYMLINK


def test_adding_the_same_node_twice_is_harmless() -> None:
    tree = ImageTree()
    tree.add_file("/etc/a", Blob(b"x"), 0o644)
    tree.add_file("/etc/a", Blob(b"x"), 0o644)
    assert len(tree.nodes()) == 1


def test_two_different_nodes_on_one_path_are_a_user_error() -> None:
    tree = ImageTree()
    tree.add_file("/etc/a", Blob(b"x"), 0o644)
    with pytest.raises(UserError, match="/etc/a is claimed twice"):
        tree.add_file("/etc/a", Blob(b"y"), 0o644)


def test_a_symlink_over_already_placed_children_is_refused() -> None:
    tree = ImageTree()
    tree.add_file("/lib/modules/x.ko", Blob(b"x"), 0o644)
    with pytest.raises(UserError, match="cannot make /lib a symlink: /lib/modules/x.ko"):
        tree.add_symlink("/lib", "usr/lib")


def test_symlink_loops_are_reported() -> None:
    tree = ImageTree()
    tree.add_symlink("/a", "b")
    tree.add_symlink("/b", "a")
    with pytest.raises(UserError, match="too many levels of symbolic links"):
        tree.canonical("/a/file")
