"""End to end: a report reproduced and bisected in two commands on the built-in demo (real kernel
builds, libvirt guests, fio). `vmbisect compare` at the demo's endpoints (master against demo)
prints the bisect command for the row that regressed (read IOPS, about -50%: bfq became the
default scheduler), and running that command names the demo's culprit."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.demo import ensure_demo_repo
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]


def test_compare_at_the_demo_s_endpoints_prints_the_command_that_bisects_to_its_culprit(tmp_path: Path) -> None:
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    demo = ensure_demo_repo()
    url = f"sqlite:///{tmp_path / 'e2e.db'}"
    # the demo campaign's guest, recipe and workload (examples/demo/campaign.yaml), as a comparison
    compared = subprocess.run(
        [*VMBISECT, "compare", "--repo", str(demo.path), "--config", "tinyconfig", "--config", "guest-base",
         "--disks", "1", "--disk-size", "256", "--controller", "virtio-scsi", "--workload", "fio",
         "--param", "rw=randread", "--param", "bs=4k", "--param", "iodepth=16", "--param", "ramp_time=1",
         "--param", "runtime=5", "--metric", "read_iops", "--variant", "release=commit:master",
         "--variant", "series=commit:demo", "--reps", "4", "--store", url],
        capture_output=True, text=True, timeout=3600)
    assert compared.returncode == 0, compared.stderr[-3000:]
    command = re.search(r"^(vmbisect bisect --from-compare \d+ read_iops)\s+# read_iops: -", compared.stdout,
                        re.MULTILINE)
    assert command is not None, compared.stdout
    bisected = subprocess.run([*VMBISECT, *shlex.split(command.group(1))[1:], "--json", "--store", url],
                              capture_output=True, text=True, timeout=3 * 3600)
    assert bisected.returncode == 0, bisected.stderr[-3000:]
    assert f"culprit: {demo.culprit}" in bisected.stdout, bisected.stdout[-3000:]
