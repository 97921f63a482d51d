from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import InfraError
from orchestrator.image.tools import DEFAULT_TOOLS, MANDATORY_TOOLS, parse_applet_list

DATA = Path(__file__).resolve().parent.parent / "data" / "image"


def test_real_busybox_list_parses_into_every_applet_name() -> None:
    captured = (DATA / "busybox-list.txt").read_text()
    applets = parse_applet_list(captured)
    assert len(applets) == len(captured.splitlines()) == 269
    assert {"sh", "[", "[[", "insmod", "mke2fs", "mount"} <= set(applets)


def test_busybox_without_sh_is_an_infra_error() -> None:
    with pytest.raises(InfraError, match="no sh applet"):
        parse_applet_list("ls\nmount\n")


def test_applet_name_with_a_slash_is_refused() -> None:
    with pytest.raises(InfraError, match="unexpected applet name"):
        parse_applet_list("sh\n../../etc/passwd\n")


def test_default_tools_cover_the_workloads_and_name_debian_packages() -> None:
    workloads = {"busybox", "fio", "dbench", "netperf", "netserver", "mkfs.ext4", "mkfs.xfs"}
    assert set(DEFAULT_TOOLS) == workloads
    assert DEFAULT_TOOLS.keys() >= MANDATORY_TOOLS
    assert DEFAULT_TOOLS["busybox"].package == "busybox-static"
    assert DEFAULT_TOOLS["dbench"].data == ("/usr/share/dbench/client.txt",)
    assert DEFAULT_TOOLS["mkfs.ext4"].data == ("/etc/mke2fs.conf",)
