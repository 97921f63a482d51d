"""Module resolution against the real /lib/modules/<release> of an installed Debian kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.image import DEFAULT_MODULES
from orchestrator.image.modfiles import installed_releases, load_index
from orchestrator.image.modules import ModuleIndex, normalize_name, resolve

MODULES_ROOT = Path("/lib/modules")


@pytest.fixture(scope="module")
def release() -> str:
    releases = installed_releases(MODULES_ROOT)
    if not releases:
        pytest.skip("no kernel modules in /lib/modules; install Debian's linux-image-amd64")
    return releases[-1]


@pytest.fixture(scope="module")
def index(release: str) -> ModuleIndex:
    return load_index(MODULES_ROOT, release)


def test_every_modules_dep_line_becomes_an_index_entry(release: str, index: ModuleIndex) -> None:
    lines = [line for line in (MODULES_ROOT / release / "modules.dep").read_text().splitlines() if line]
    assert len(index.files) == len(lines)


def test_default_modules_resolve_with_each_dependency_before_its_user(
    release: str, index: ModuleIndex
) -> None:
    resolution = resolve(DEFAULT_MODULES, index, release)
    position = {name: i for i, name in enumerate(resolution.order)}
    for name in resolution.order:
        for dependency in index.deps[name]:
            assert position[dependency] < position[name], f"{dependency} must load before {name}"
    for wanted in DEFAULT_MODULES:
        assert normalize_name(wanted) in position or normalize_name(wanted) in resolution.builtin


def test_a_crc32c_provider_loads_before_ext4_and_xfs(release: str, index: ModuleIndex) -> None:
    providers = index.lookup("crc32c")
    if not providers or "ext4" not in index.files:
        pytest.skip(f"{release} has crc32c or ext4 built in; nothing to order")
    order = resolve(["ext4", "xfs"], index, release).order
    first_provider = min(order.index(p) for p in providers)
    assert first_provider < order.index("ext4")
    assert first_provider < order.index("libcrc32c") < order.index("xfs")
