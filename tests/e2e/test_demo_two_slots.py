"""End to end over two slots: the built-in demo bisected for real on a lab of two hosts, the SSH
host (sshd on 127.0.0.1, libvirt over qemu+libssh, kernels pushed, the agent through libvirt's
channel) and this machine, each measuring its own references, a round measuring two commits at
once (issue #19). make test's one real bisection over slots: the netperf series over the same
two hosts with the SSH host cut during the confirmation runs in make test-long (test_series_bisections.py).
Both slots share this machine's two cores, so the test's time says nothing about what two real
hosts save (make bench-rounds simulates that)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import DEMO, ensure_series_repo
from tests.e2e.test_series_bisections import bisect, virsh_domains

pytestmark = [pytest.mark.vm, pytest.mark.slow]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]


def test_demo_over_two_slots_names_the_shipped_culprit_in_fewer_rounds_than_steps(tmp_path: Path, live_ssh_server):
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [live_ssh_server.lab_dict(slots=[{"cpus": "0-1"}]),
                                             {"name": "local", "slots": [{"cpus": "0-1"}]}]}))
    # the demo's fio job with the one-slot e2e test's 3 s runs (its -50% needs no longer ones)
    workload = yaml.safe_load(DEMO.campaign.read_text())["workload"]
    # the range narrowed to the six commits after the build fix (the culprit the third): both
    # slots still measure their own references and rounds of two steps (28 boots, 10 min here;
    # the whole series took 21 min, two guests on two cores being noisy)
    series = subprocess.run(["git", "-C", str(ensure_series_repo(DEMO).path), "rev-list", "--reverse", "master..demo"],
                            capture_output=True, text=True, check=True).stdout.split()
    store, _culprit, out = bisect(tmp_path, DEMO, lab=str(lab), good=series[10], bad=series[16],
                                  workload={**workload, "params": {**workload["params"], "runtime": 3}})
    rounds = [e for e in map(json.loads, filter(lambda x: x.startswith("{"), out.splitlines())) if e["phase"] == "round"]
    steps = [d for d in store.decisions(1) if d.role == "step"]
    assert 0 < len(rounds) < len(steps), (len(rounds), len(steps))
    boots = store.boots(1)
    good, bad = (next(d.commit for d in store.decisions(1) if d.role == role) for role in ("good", "bad"))
    for host in ("sshhost", "local"):  # each host measured its own references, and steps of its own
        ok = {b.commit for b in boots if b.host == host and b.status == "ok"}
        assert {good, bad} <= ok and ok - {good, bad}, host
    print(f"\ndemo over two slots: {len(boots)} boots, {len(rounds)} rounds, {len(steps)} steps")
    report = subprocess.run([*VMBISECT, "report", "1", "--format", "md", "--store",
                             f"sqlite:///{tmp_path / 'series.db'}"], capture_output=True, text=True, timeout=300)
    measured = re.search(r"^Measured on: (.*)$", report.stdout, re.M)  # hosts in the order they first booted
    assert report.returncode == 0 and measured, report.stdout[:3000]
    assert re.search(r"sshhost \(\d+ boots\)", measured[1]) and re.search(r"local \(\d+ boots\)", measured[1]), measured[1]
    assert not [d for d in virsh_domains() if d.startswith("vmbisect-")], "a guest was left behind"
