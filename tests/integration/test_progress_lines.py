"""Progress where the output is not a terminal (`make demo > log`, a pipe, a script): a campaign
run by the real engine over real git and the store with the fake build and guest ports prints a
line for every build it made and every boot it measured, with the boot's value, beside every
decision, and no live table."""

from __future__ import annotations

import io
import re
import time
from typing import Any

import pytest
from rich.console import Console

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.bisect.workdir import campaign_workdir
from orchestrator.kinds.table import stored
from orchestrator.ports import Event
from orchestrator.progress import LiveView
from orchestrator.store import Store
from tests.fakes import FakeBuilder, FakeMeasurer
from tests.integration.dashboard import _slow, history, stored_campaign


@pytest.fixture
def repo(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    return history(tmp_path / "repo")[0]


def test_a_campaign_whose_output_is_a_pipe_prints_a_line_for_each_build_and_each_boot(repo, tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'lines.db'}")
    cid = stored_campaign(store, repo)
    campaign = stored(store.campaign(cid)).campaign  # type: ignore[union-attr]
    measurer = FakeMeasurer(lambda c: 90.0 if _slow(campaign.repository, c) else 100.0, noise=0.01, seed=7,
                            metric=campaign.metric.name)
    out = io.StringIO()
    with store.lock(cid), LiveView(12, Console(file=out, width=100), boots=campaign.boots_per_commit) as view:
        Engine(campaign, "higher", GitBisect(campaign.repository, campaign_workdir(store, cid)), FakeBuilder(),
               measurer, store, view).run(cid)
    lines = out.getvalue().splitlines()

    built = [b.commit[:12] for b in store.builds(cid) if b.status == "ok"]
    built_lines = [m[1] for m in (re.match(r"build (\w{12}): built in ", x) for x in lines) if m]
    assert built and sorted(built_lines) == sorted(built), "one line for each kernel built, naming its commit"

    boots = [b.commit[:12] for b in store.boots(cid) if b.status == "ok"]
    boot_lines = [m for m in (re.match(r"boot (\w{12}): (\d+) of ~(\d+), read_iops (\d+(?:\.\d+)?) "
                                       r"\(median of 2 runs\)$", x) for x in lines) if m]
    assert len(boots) >= 10 and sorted(m[1] for m in boot_lines) == sorted(boots), "one line for each boot"
    for commit in set(boots):
        assert [int(m[2]) for m in boot_lines if m[1] == commit] == list(range(1, boots.count(commit) + 1))
    assert all(85 <= float(m[4]) <= 105 for m in boot_lines), "each boot's line carries its value"

    assert any(x.startswith("endpoints: good ") for x in lines)
    assert any(re.match(r"step \d+: \w{12} (good|bad): ", x) for x in lines), "the decisions as at a terminal"
    assert any(x.startswith("done: ") for x in lines)
    assert not any("┃" in x or "│" in x for x in lines), "no live table in a log"


def test_a_build_that_runs_long_gets_a_line_every_heartbeat_while_it_runs() -> None:
    out = io.StringIO()
    with LiveView(12, Console(file=out, width=100), heartbeat_s=0.05) as view:
        view(Event("build", "a" * 40, 1, 3, 0, "", 1.0))
        time.sleep(0.4)
    beats = [x for x in out.getvalue().splitlines() if x.startswith("build aaaaaaaaaaaa: building for ")]
    assert beats and beats[0].endswith(" in)")
