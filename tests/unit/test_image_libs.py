from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import InfraError
from orchestrator.image.libs import parse_ldd

DATA = Path(__file__).resolve().parent.parent / "data" / "image"


def _captured(name: str) -> str:
    return (DATA / f"ldd-{name}.txt").read_text()


@pytest.mark.parametrize("name", ["fio", "mkfs.xfs", "netperf", "netserver", "dbench", "mke2fs"])
def test_parser_returns_the_library_paths_of_real_ldd_output_in_order(name: str) -> None:
    expected = tuple(Path(line) for line in (DATA / f"ldd-{name}.expected").read_text().split())
    assert parse_ldd(name, _captured(name)) == expected


def test_virtual_dso_without_a_path_is_left_out_and_the_loader_is_kept() -> None:
    paths = parse_ldd("netperf", _captured("netperf"))
    assert paths == (
        Path("/lib/x86_64-linux-gnu/libm.so.6"),
        Path("/lib/x86_64-linux-gnu/libc.so.6"),
        Path("/lib64/ld-linux-x86-64.so.2"),
    )
    assert "linux-vdso.so.1" in _captured("netperf")


def test_fio_libraries_include_those_found_through_a_runpath() -> None:
    paths = parse_ldd("fio", _captured("fio"))
    assert Path("/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2") in paths
    assert len(paths) == len(set(paths)) == 63


def test_not_a_dynamic_executable_has_no_libraries() -> None:
    assert parse_ldd("/bin/busybox", _captured("busybox-static")) == ()


def test_statically_linked_pie_has_no_libraries() -> None:
    assert parse_ldd("static-pie", _captured("static-pie")) == ()


def test_library_not_found_names_the_binary_and_the_library() -> None:
    with pytest.raises(InfraError, match="needs-gone needs libvmbisect-gone.so.1"):
        parse_ldd("/tmp/needs-gone", _captured("missing-library"))


def test_ldd_error_message_is_not_mistaken_for_a_static_binary() -> None:
    with pytest.raises(InfraError, match="cannot use ldd output for /nonexistent"):
        parse_ldd("/nonexistent", _captured("no-such-file"))
