"""End to end, the reports' own scenarios (issue #32; docs/scenarios.md), each a shipped series on
linux-source-6.1 with one real change among comment-only commits, bisected for real with its
shipped campaign to its culprit, confirmed against its parent, the report tabling the watched
metrics:

- sched spread (examples/sched-spread): netperf, 8 TCP streams in a 4-vCPU guest, guest CPU per
  message bisected, throughput and the spread over the vCPUs watched;
- multi-page ring (examples/multipage-ring): fio 4k random reads at depth 4 with 1..64 threads on
  virtio-blk compared as a sweep at the endpoints, the worst point bisected with the command the
  comparison prints (on context switches per I/O, IOPS watched);
- CFS dbench (examples/cfs-dbench): dbench with 8 clients, guest CPU per operation bisected,
  throughput watched.

(The scsi-mq report's scenario is tests/e2e/test_cpu_cost_bisection.py.)"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import CFS_DBENCH, MULTIPAGE_RING, SCHED_SPREAD, Series, ensure_series_repo
from orchestrator.store import Store
from tests.conftest import require
from tests.e2e.shipped import VMBISECT, bisect_shipped, report_of

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]


def watched_names(md: str) -> set[str]:
    """The metrics of the report's watched table."""
    section = md[md.index("Watched metrics"):]
    return set(re.findall(r"^\| ([\w.]+) \| (?:higher|lower|none) \|", section, re.M))


def bisect_scenario(tmp_path: Path, series: Series) -> str:
    """The series' shipped campaign bisected by the CLI; its Markdown report, after checking the
    culprit, its confirmation and that every watched metric is in the report."""
    repo, url, out = bisect_shipped(tmp_path, series)
    spec = yaml.safe_load(series.campaign.read_text())
    assert f"culprit: {repo.culprit}" in out, out[-3000:]
    assert "confirmation: confirmed" in out
    assert Store(url).campaign(1).result["culprit"] == repo.culprit
    md = report_of(url, 1)
    assert set(spec["metric"]["watch"]) <= watched_names(md), md
    print(f"\n{series.name}:\n{md}")
    return md


def test_sched_spread_netperf_8_streams_on_4_vcpus_bisects_on_cpu_per_message(tmp_path: Path):
    bisect_scenario(tmp_path, SCHED_SPREAD)


def test_cfs_dbench_with_8_clients_bisects_on_cpu_per_operation(tmp_path: Path):
    bisect_scenario(tmp_path, CFS_DBENCH)


def test_multipage_ring_sweep_compared_at_the_endpoints_then_its_worst_point_bisected(tmp_path: Path):
    """The sweep's rows that regressed are past one page of ring (32 in flight: 8 threads at
    depth 4); the comparison prints a bisect command for each, and context switches per I/O at the
    worst point name the culprit, with IOPS watched."""
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(MULTIPAGE_RING)
    spec = yaml.safe_load(MULTIPAGE_RING.campaign.read_text())
    disks = spec["guest"]["disks"]
    url = f"sqlite:///{tmp_path / 'ring.db'}"
    compared = subprocess.run(
        [*VMBISECT, "compare", "--repo", str(repo.path), "--config", "tinyconfig", "--config", "guest-base",
         "--vcpus", str(spec["guest"]["vcpus"]), "--memory", str(spec["guest"]["memory_mib"]),
         "--disks", str(disks["count"]), "--disk-size", str(disks["size_mib"]), "--controller", disks["controller"],
         "--workload", spec["workload"]["name"], "--param", f"runtime={spec['workload']['params']['runtime']}",
         "--metric", "iops", "--variant", "release=commit:master", "--variant", f"series=commit:{MULTIPAGE_RING.name}",
         "--reps", "8", "--boots", "4", "--store", url],
        capture_output=True, text=True, timeout=3600)
    assert compared.returncode == 0, compared.stderr[-3000:]
    print(compared.stdout)
    moved = {(m[2], int(m[3])): m[1] for m in re.finditer(
        r"^(vmbisect bisect --from-compare \d+ ([\w.]+)@numjobs=(\d+))\s+#", compared.stdout, re.M)}
    assert moved, compared.stdout
    assert min(n for _, n in moved) > 8, f"a sweep point within one page of ring moved: {sorted(moved)}"
    # Past one page IOPS drops by a sixth to a third, but under TCG the release kernel's IOPS there
    # varies 14-17% between boots: not significant at 4 boots a side. Context switches per I/O, the
    # same change seen from inside the guest, move +80% to +250% (docs/scenarios.md).
    worst = max(n for metric, n in moved if metric == "ctxt_per_op")
    bisected = subprocess.run([*VMBISECT, *shlex.split(moved[("ctxt_per_op", worst)])[1:], "--json", "--store", url],
                              capture_output=True, text=True, timeout=3 * 3600)
    assert bisected.returncode == 0, bisected.stderr[-3000:]
    assert f"culprit: {repo.culprit}" in bisected.stdout, bisected.stdout[-3000:]
    assert "confirmation: confirmed" in bisected.stdout
    md = report_of(url, 2)
    assert "iops" in watched_names(md), md
    print(md)
