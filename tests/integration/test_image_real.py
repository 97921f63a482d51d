"""The default image with the real tools (and the real agent when it has been built)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator import paths
from orchestrator.image import DEFAULT_TOOLS, MODULE_LIST_PATH, GuestImage, GuestImageBuilder
from orchestrator.image.libs import parse_ldd, run_ldd
from orchestrator.image.modfiles import installed_releases
from tests.integration.imagefiles import extract_image

missing_tools = [
    name for name, tool in DEFAULT_TOOLS.items() if not any(map(os.path.isfile, tool.candidates))
]
pytestmark = pytest.mark.skipif(
    bool(missing_tools), reason=f"default tools missing: {', '.join(missing_tools)} (make setup)"
)


@pytest.fixture(scope="module")
def builder(tmp_path_factory: pytest.TempPathFactory) -> GuestImageBuilder:
    """Default tools, with a stand-in agent."""
    work = tmp_path_factory.mktemp("real")
    agent = work / "standin-agent"
    agent.write_text("#!/bin/sh\nexec /bin/sh\n")
    agent.chmod(0o755)
    return GuestImageBuilder(work / "cache", agent)


@pytest.fixture(scope="module")
def default_image(builder: GuestImageBuilder) -> GuestImage:
    """The default modules of the newest installed kernel release, if there is one."""
    releases = installed_releases(Path("/lib/modules"))
    return builder.build(kernel_release=releases[-1] if releases else None)


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
def test_every_default_tool_runs_in_a_chroot_of_the_standin_agent_image(
    default_image: GuestImage, tmp_path: Path
) -> None:
    root = extract_image(default_image.path, tmp_path / "root")
    script = (
        "set -e; fio --version; dbench --help | head -1; netperf -V; netserver -V;"
        " truncate -s 64M /tmp/e.img; mkfs.ext4 -q -F /tmp/e.img;"
        " truncate -s 320M /tmp/x.img; mkfs.xfs -q /tmp/x.img; echo ALL-RAN"
    )
    done = subprocess.run(
        ["chroot", str(root), "/bin/sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "fio-" in done.stdout and "Netperf version" in done.stdout
    assert done.stdout.rstrip().endswith("ALL-RAN")
    loadfile = root / "usr/share/dbench/client.txt"
    assert loadfile.stat().st_size == Path("/usr/share/dbench/client.txt").stat().st_size


def test_default_image_lists_every_module_it_carries(default_image: GuestImage, tmp_path: Path) -> None:
    if default_image.kernel_release is None:
        pytest.skip("no kernel modules in /lib/modules; install Debian's linux-image-amd64")
    root = extract_image(default_image.path, tmp_path / "root")
    listed = (root / MODULE_LIST_PATH.lstrip("/")).read_text().splitlines()
    assert len(listed) == len(default_image.modules) > 0
    for path in listed:
        assert path.startswith(f"/lib/modules/{default_image.kernel_release}/") and path.endswith(".ko")
        assert (root / path.lstrip("/")).read_bytes()[:4] == b"\x7fELF"


def test_default_image_is_reused_from_cache_without_rewriting(
    builder: GuestImageBuilder, default_image: GuestImage
) -> None:
    written = default_image.path.stat()
    again = builder.build(kernel_release=default_image.kernel_release)
    assert again.from_cache and again.sha256 == default_image.sha256
    assert default_image.path.stat().st_mtime_ns == written.st_mtime_ns


def test_real_agent_is_packed_as_init_with_its_libraries(tmp_path: Path) -> None:
    agent = paths.agent_binary()
    if not agent.is_file():
        pytest.skip(f"real agent not built at {agent}; run `make agent`")
    image = GuestImageBuilder(tmp_path / "cache", agent).build()
    root = extract_image(image.path, tmp_path / "root")
    assert (root / "init").read_bytes() == agent.read_bytes()
    for library in parse_ldd(str(agent), run_ldd(agent)):
        assert (root / str(library).lstrip("/")).exists(), library
