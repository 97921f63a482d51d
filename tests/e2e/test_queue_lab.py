"""The queue on real guests: the shipped dbench and netperf series (kernels built from
linux-source-6.1, as tests/e2e/test_series_bisections.py) submitted with `vmbisect submit`, and
one `vmbisect worker` with a two-slot lab, this machine and the SSH host on 127.0.0.1, runs
them side by side, each on a slot of its own, to their real changes; no guest is left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.backends.libvirt_vm import NAME_PREFIX
from orchestrator.demo import DBENCH, NETPERF, ensure_series_repo
from orchestrator.store import Store
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow, pytest.mark.long]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]
LEAN = {"runs_per_boot": 2, "boots_per_commit": 2, "confirm": "none"}


def test_one_worker_runs_two_submitted_campaigns_side_by_side_on_the_two_slots_of_its_lab(tmp_path: Path,
                                                                                         live_ssh_server):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    culprits = {}
    files = []
    for series in (DBENCH, NETPERF):
        repo = ensure_series_repo(series)
        spec = {**yaml.safe_load(series.campaign.read_text()), **LEAN, "repository": str(repo.path)}
        path = tmp_path / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec))
        files.append(path)
        culprits[spec["name"]] = repo.culprit
    # The SSH host is this machine too. Both slots take both cores, as in test_series_bisections:
    # a slot of one core under a guest of two vCPUs hides the netperf series' change (measured
    # 2026-11-25: good 176.4, bad 182.4 Mbit/s over 9+9 boots, refused as "bad is not bad").
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [{"name": "local", "slots": [{"cpus": "0-1"}]},
                                             live_ssh_server.lab_dict(slots=[{"cpus": "0-1"}])]}))
    url = f"sqlite:///{tmp_path / 'queue.db'}"
    submitted = subprocess.run([*VMBISECT, "submit", *map(str, files), "--store", url], capture_output=True,
                               text=True, timeout=300)
    assert submitted.returncode == 0, submitted.stderr
    worker = subprocess.run([*VMBISECT, "worker", "--lab", str(lab), "--once", "--store", url],
                            capture_output=True, text=True, timeout=5400)
    assert worker.returncode == 0, worker.stderr[-3000:]
    store = Store(url)
    spans = {}
    for row in store.campaigns():
        assert row.state == "done" and row.result["culprit"] == culprits[row.name], (row.name, row.state, row.result)
        boots = [b for b in store.boots(row.id) if b.status == "ok"]
        hosts = {b.host for b in boots}
        assert len(hosts) == 1, (row.name, hosts)
        spans[row.name] = (hosts.pop(), boots[0].created, boots[-1].created)
    (h1, start1, end1), (h2, start2, end2) = spans.values()
    assert h1 != h2, "each campaign had a slot of its own"
    assert start1 < end2 and start2 < end1, "they ran side by side"
    left = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"], capture_output=True, text=True)
    assert not [n for n in left.stdout.split() if n.startswith(NAME_PREFIX)], left.stdout
