"""Every workload and every preset, one short repetition per sweep point, on the kernel built
from the default recipe (tinyconfig + guest-base, what the demo and examples use) and on the
distribution kernel: the main metric is there and positive. One guest per tool and kernel runs
all of that tool's presets, so the matrix costs six boots.

The built kernel is checked against every preset's declared kernel needs first (the check
bisect, compare and measure make before a boot), so a recipe that loses an option fails here
with the option's name before the guest says it with a timeout."""

from __future__ import annotations

import pytest

from orchestrator.kbuild.builder import default_builder
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kbuild.source import DEBIAN_TARBALL, ensure_linux_source_repo
from orchestrator.vm.spec import DiskSpec, VmSpec
from orchestrator.wiring import machine_build_lease
from orchestrator.workloads import kneeds, runner
from orchestrator.workloads.definition import load_all, resolve
from tests.conftest import require

pytestmark = pytest.mark.vm

WORKLOADS = load_all()
# Short runs: the matrix proves the tools run and parse, not their figures.
SHORT = {"fio": ["runtime=1", "ramp_time=0"], "dbench": ["runtime=2"], "netperf": ["runtime=1"]}
DISKS = {"fio": DiskSpec(count=2, size_mib=128), "dbench": DiskSpec(count=1, size_mib=512),
         "netperf": DiskSpec(count=0)}


def main_metric(tool: str, point) -> str:
    if tool == "netperf":
        return "transactions" if point["test"] == "TCP_RR" else "throughput"
    return {"fio": "iops", "dbench": "throughput"}[tool]


@pytest.fixture(scope="session")
def built_kernel():
    """The default recipe at the linux-source-6.1 release (a build-cache hit after the first)."""
    require(DEBIAN_TARBALL.is_file(), f"{DEBIAN_TARBALL} missing (make setup installs linux-source-6.1)")
    source = ensure_linux_source_repo()
    return default_builder(machine_build_lease()).build(source.path, source.commit, parse_recipe([]))


@pytest.mark.parametrize("tool", ["fio", "dbench", "netperf"])
# The distribution kernel's presets take 2 min more and tests/integration/test_workloads_vm.py
# runs each tool on it already: they run in make test-long.
@pytest.mark.parametrize("kernel", ["built", pytest.param("distro", marks=pytest.mark.long)])
def test_every_preset_of_a_tool_gives_its_main_metric(request, launcher, distro, tool, kernel):
    names = [tool, *WORKLOADS[tool].presets]
    plans = [resolve(WORKLOADS, name, SHORT[tool]) for name in names]
    if kernel == "built":
        image = request.getfixturevalue("built_kernel")
        path, modules = image.path, None
        for plan in plans:
            kneeds.check_kernel(plan.label, plan.workload.kernel_needs_all(plan.points), path, "the default recipe")
    else:
        path, modules = distro.image, distro.release
    spec = VmSpec(vcpus=2, memory_mib=1024, disks=DISKS[tool])
    got: dict[str, float] = {}
    with launcher.boot(spec, path, "tcg", modules, timeout_s=180) as guest:
        runner.prepare(guest, WORKLOADS[tool])
        for plan in plans:
            for point in plan.points:
                metric = main_metric(tool, point)
                result = runner.run(guest, plan.workload, point, "tcg")
                got[f"{plan.label} {plan.point_label(point)}".strip()] = result.values().get(metric, float("nan"))
    assert got and all(v > 0 for v in got.values()), got
