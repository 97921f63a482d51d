"""End to end: the built-in demo bisected for real (kernel builds, libvirt guests, fio; shorter runs), with
the controller killed by SIGKILL in the middle of a step and the campaign resumed; the culprit
confirmed against its parent and by its revert on the tip, built from vmbisect's own clone; the
report, the dashboard, `status`, the mail and the live view's last line agree on the real store."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from orchestrator.backends.libvirt_vm import LibvirtProvider, owner_pid
from orchestrator.bisect.rounds import TOTAL_CAP
from orchestrator.demo import CAMPAIGN, ensure_demo_repo
from orchestrator.explain.perfscript import parse_folded
from orchestrator.store import Store
from tests.agreement import assert_views_agree
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]


def domains_of(pid: int) -> list[str]:
    provider = LibvirtProvider()
    try:
        return [d.name() for d in provider.conn.listAllDomains() if owner_pid(d.name()) == pid]
    finally:
        provider.close()


def test_demo_bisection_killed_mid_step_resumes_to_the_shipped_culprit(tmp_path):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    demo = ensure_demo_repo()
    # The demo's campaign with shorter runs (2 of 3 s a boot, not 3 of 5 s): the bisection is the
    # same, each boot about 10 s shorter, 4-5 min of make test (the demo's -50% needs no longer runs).
    spec = yaml.safe_load(CAMPAIGN.read_text())
    spec.update(repository=str(demo.path), runs_per_boot=2)
    spec["workload"]["params"]["runtime"] = 3
    campaign = tmp_path / "demo.yaml"
    campaign.write_text(yaml.safe_dump(spec))
    url = f"sqlite:///{tmp_path / 'e2e.db'}"
    first = subprocess.Popen([*VMBISECT, "bisect", str(campaign), "--json", "--store", url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_during = None
    for line in first.stdout:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event["phase"] == "measure" and event["step"] >= 1:
            time.sleep(2)
            os.kill(first.pid, signal.SIGKILL)
            killed_during = event
            break
    first.wait()
    assert killed_during is not None, first.stderr.read()
    deadline = time.monotonic() + 20
    while domains_of(first.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert domains_of(first.pid) == []

    store = Store(url)
    before = store.samples(1, "read_iops")
    assert store.campaign(1).state == "running" and before

    resumed = subprocess.run([*VMBISECT, "resume", "1", "--json", "--store", url], capture_output=True, text=True,
                             timeout=3600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"culprit: {demo.culprit}" in resumed.stdout
    assert "confirmation: confirmed" in resumed.stdout and "revert: revert restores the metric" in resumed.stdout
    store = Store(url)
    after = store.samples(1, "read_iops")
    assert all(after[c][: len(v)] == v for c, v in before.items())
    boots = store.boot_samples(1, "read_iops")
    references = {d.commit for d in store.decisions(1) if d.role in ("good", "bad")}
    # a step at most TOTAL_CAP x max_boots_per_commit over its visits, twice that when it is
    # also re-examined; the references are booted again every few boots for the drift guard and
    # whenever they limit a step, so they have more
    assert all(len(b) <= 2 * TOTAL_CAP * 6 for c, b in boots.items() if c not in references)
    print(f"demo e2e: {sum(len(b) for b in boots.values())} boots")
    decisions = store.decisions(1)
    assert any(d.verdict == "skip" and d.reason.startswith("build failed") for d in decisions)
    result = store.campaign(1).result
    assert result["confidence"] >= 0.95 and result["revert"]["commit"] in boots
    assert demo.path.joinpath("refs", "vmbisect").exists() is False, "the demo repository was written"
    # the kernel profile, on by default, after the culprit: bfq's functions sampled with it only
    (profile,) = store.profiles(1)
    assert (profile.parent, profile.culprit, profile.note) == (result["parent"], demo.culprit, ""), profile.note
    parent, culprit = ([frame for text in profile.stacks[side] for stack in parse_folded(text) for frame in stack]
                       for side in ("parent", "culprit"))
    assert any(f.startswith("bfq_") for f in culprit) and not any(f.startswith("bfq_") for f in parent)

    # every view of the finished campaign agrees with the report, row by row (boots, runs,
    # medians), and the live view's last line names the report's culprit and confidence
    rows, md, _html = assert_views_agree(url, 1)
    assert {"good", "bad", "revert"} <= {r[1] for r in rows}
    (done,) = [e for e in map(json.loads, filter(lambda x: x.startswith("{"), resumed.stdout.splitlines()))
               if e["phase"] == "done"]
    shown = re.search(r"confidence (\S+)$", done["message"])
    assert demo.culprit.startswith(done["commit"]) and shown, done
    assert f"Confidence: {shown[1]}" in md, (done, md[:2000])
