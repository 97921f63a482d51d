"""An endpoint that does not build, boot or run the workload: the campaign is refused before any
step, stored as failed with the reason (never left running), and status and report say why.
Real engine and git on a throwaway repository, fake build and VM ports."""

from __future__ import annotations

import pytest

from orchestrator.bisect.engine import EndpointFailed
from orchestrator.cli import main
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.gitrepo import linear
from tests.integration.test_engine_cases import bisect, campaign, regression_at

ENOSYS = "netperf stream 0: no result: error starting alarm timer, ret -1 errno 38"


@pytest.mark.parametrize("role, fault, what", [
    ("good", "workload", "fails the workload: " + ENOSYS),
    ("bad", "workload", "fails the workload: " + ENOSYS),
    ("good", "build", "does not build: drivers/scsi/sd.c:12:3: error"),
    ("bad", "boot", "does not boot: guest kernel failed to boot: Kernel panic"),
])
def test_an_endpoint_that_cannot_be_measured_refuses_the_campaign_before_any_step(tmp_path, role, fault, what):
    repo = linear(tmp_path / "u", 8)
    sha = repo.names["c0" if role == "good" else "c7"]
    builder = FakeBuilder(broken={sha} if fault == "build" else frozenset())
    measurer = FakeMeasurer(regression_at(repo, "c3"), boot_broken={sha} if fault == "boot" else frozenset(),
                            workload_fails={sha: ENOSYS} if fault == "workload" else None)
    with pytest.raises(EndpointFailed) as err:
        bisect(tmp_path, repo, campaign(repo, "c0", "c7"), builder, measurer)
    assert str(err.value).startswith(f"campaign refused: the {role} endpoint {sha[:12]} {what}")
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    row = store.campaign(1)
    assert row.state == "failed" and row.result["reason"] == str(err.value)
    assert not [d for d in store.decisions(1) if d.role == "step"]
    assert set(builder.built) <= {repo.names["c0"], repo.names["c7"]}


def test_status_and_report_show_a_failed_campaign_with_its_reason(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    repo = linear(tmp_path / "u", 8)
    good = repo.names["c0"]
    with pytest.raises(EndpointFailed):
        bisect(tmp_path, repo, campaign(repo, "c0", "c7"), FakeBuilder(),
               FakeMeasurer(regression_at(repo, "c3"), workload_fails={good: ENOSYS}))
    url = f"sqlite:///{tmp_path / 'v.db'}"
    assert main(["status", "--store", url]) == 0
    out = capsys.readouterr().out
    assert "failed" in out and "campaign refused: the good endpoint" in out
    assert main(["resume", "1", "--store", url]) == 2
    assert "campaign 1 is failed, not running" in capsys.readouterr().err
