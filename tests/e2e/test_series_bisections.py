"""End to end on the other two tools: the shipped netperf and dbench series on linux-source-6.1
(examples/netperf, examples/dbench: comment-only commits around one real change) bisected for
real, with kernels built from the default recipe, each naming its culprit and confirming it
against its parent. The campaigns are the shipped ones, leaner where it only costs time: two
runs per boot, no revert (the demo's test covers the revert); the boots a step may take stay
the shipped campaign's (netperf in a TCG guest varies a lot between boots: with at most four,
the endpoint check refused the campaign on a busy host, rightly). The netperf series runs over
two hosts, the SSH host cut mid-campaign (issue #14)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import DBENCH, NETPERF, Series, ensure_series_repo
from orchestrator.store import Store
from tests.conftest import require

pytestmark = [pytest.mark.vm, pytest.mark.slow]
VMBISECT = [sys.executable, "-m", "orchestrator.cli"]
LEAN = {"runs_per_boot": 2, "boots_per_commit": 2, "confirm": "none"}


def bisect(tmp_path: Path, series: Series, **keys: object) -> tuple[Store, str, str]:
    """The shipped campaign of `series`, leaner (LEAN), with `keys` on top, bisected by the CLI;
    the store, the culprit the series was made with, and what the CLI printed."""
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(series)
    spec = {**yaml.safe_load(series.campaign.read_text()), **LEAN, "repository": str(repo.path), **keys}
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(yaml.safe_dump(spec))
    url = f"sqlite:///{tmp_path / 'series.db'}"
    done = subprocess.run([*VMBISECT, "bisect", str(campaign), "--json", "--store", url],
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"culprit: {repo.culprit}" in done.stdout, done.stdout[-3000:]
    assert "confirmation: confirmed" in done.stdout
    store = Store(url)
    row = store.campaign(1)
    assert row.state == "done" and row.result["culprit"] == repo.culprit
    steps = [d for d in store.decisions(1) if d.role == "step"]
    assert steps and all(d.verdict in ("good", "bad") for d in steps), steps
    return store, repo.culprit, done.stdout


@pytest.mark.long  # 12.3 min of CI's 90: make test keeps one real bisection per path (the demo, two hosts)
def test_the_shipped_dbench_series_bisects_to_its_real_change(tmp_path: Path):
    bisect(tmp_path, DBENCH)


def test_the_netperf_series_over_two_hosts_finishes_on_one_when_sshd_of_the_other_is_cut(tmp_path: Path,
                                                                                           live_ssh_server):
    """The shipped netperf series over a lab of the SSH host (sshd on 127.0.0.1, libvirt over
    qemu+libssh, files pushed, the agent through libvirt's channel) and this machine. The SSH
    host takes the campaign (first in the lab file) and is cut after its third run; the campaign
    goes on here, measures its references again, and names the real change. The report says
    which host measured what, and no guest is left behind."""
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [live_ssh_server.lab_dict(slots=[{"cpus": "0-1"}]),
                                             {"name": "local", "slots": [{"cpus": "0-1"}]}]}))
    cutter = live_ssh_server.cut_after_runs(tmp_path / "series.db", 3)
    store, culprit, out = bisect(tmp_path, NETPERF, lab=str(lab))
    cutter.join(5)
    assert live_ssh_server.proc is None, "the SSH host was never cut"
    moves = [d for d in store.decisions(1) if d.role == "host"]
    assert len(moves) == 1 and moves[0].reason.startswith("host sshhost failed"), moves
    boots = store.boots(1)
    assert [b.status for b in boots if b.host == "sshhost"].count("lost") <= 1
    good, bad = (next(d.commit for d in store.decisions(1) if d.role == role) for role in ("good", "bad"))
    assert {good, bad} <= {b.commit for b in boots if b.host == "local" and b.status == "ok"}
    assert "note: host sshhost failed" in out
    report = subprocess.run([*VMBISECT, "report", "1", "--format", "md", "--store", f"sqlite:///{tmp_path / 'series.db'}"],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0 and re.search(r"Measured on: sshhost \(\d+ boots?.*\), local \(\d+ boots\)",
                                                report.stdout), report.stdout[:3000]
    assert not [d for d in virsh_domains() if d.startswith("vmbisect-")], "a guest was left behind"


def virsh_domains() -> list[str]:
    done = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"], capture_output=True,
                          text=True, check=True)
    return done.stdout.split()
