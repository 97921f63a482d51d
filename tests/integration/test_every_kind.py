"""Every campaign kind of the kind table (orchestrator/kinds/table.py) through every path a
kind has: stored paused and run to its end by `vmbisect resume` (the one run path, its checks,
lab, progress and run), its status line and `vmbisect status`, `vmbisect report` in md, html
and json, the dashboard's overview, campaign page, report page and estimate, and the mail its
end sends through a real SMTP server (aiosmtpd on a free port of 127.0.0.1). Real git, SQLite
store, engine, judge and searches; the guests and builds are tests/fakes.py's, no guest boots.
A kind added to the table without a setup here fails `test_every_kind_of_the_table_is_tested_here`."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator

import pytest
import yaml
from starlette.testclient import TestClient

from orchestrator import wiring
from orchestrator.campaign.file import Threshold, parse_campaign
from orchestrator.cli import _parser, main
from orchestrator.commands.compare import spec_from_args
from orchestrator.commands.serve import catalogue
from orchestrator.errors import UserError
from orchestrator.explain import profile_boots
from orchestrator.kinds import table
from orchestrator.kinds.kind import Kind
from orchestrator.kinds.specs import BisectSpec, SettingsSpec, VerifySpec
from orchestrator.results import StopKind, Stopped
from orchestrator.setbisect.campaign import parse_settings
from orchestrator.setbisect.configspec import parse_config_campaign
from orchestrator.setbisect.setbisection import Rules, SetBisection
from orchestrator.setbisect.settings import SettingsMaker
from orchestrator.store import Store
from orchestrator.web.app import create_app
from tests.fakes import (
    FakeBuilder,
    FakeConfigKernels,
    FakeKconfig,
    FakeKernels,
    FakeMeasurer,
    by_options,
    fake_perf_pool,
    fake_profile_pair,
)
from tests.integration.gitrepo import Repo
from tests.integration.test_config_kind import KCONFIG, WHERE
from tests.integration.test_mail import Inbox, free_port, serve, write_config

TEAM = "perf-team@example.org"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The data directory, an SMTP server with vmbisect's config pointing at it, a lab file of
    one slot whose `notify:` names TEAM, a guest pool that boots nothing, and a SQLite store."""
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "400")
    inbox, port = Inbox(), free_port()
    write_config(tmp_path, monkeypatch, f"smtp:\n  host: 127.0.0.1\n  port: {port}\n  security: none\n"
                                        "  from: vmbisect@lab.example.org\n")
    server = serve(inbox, port)
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"hosts": [{"name": "local", "slots": [{"cpus": "0"}]}],
                                   "notify": {"mail": [TEAM]}}))
    monkeypatch.setattr(wiring, "open_pool", lambda lab, *_store_and_id: SimpleNamespace(close=lambda: None, lab=lab))
    monkeypatch.setattr(profile_boots, "perf_pool", fake_perf_pool)
    monkeypatch.setattr(profile_boots, "profile_pair", fake_profile_pair)
    url = f"sqlite:///{tmp_path / 'v.db'}"
    yield SimpleNamespace(dir=tmp_path, lab=lab, inbox=inbox, url=url, store=Store(url), monkeypatch=monkeypatch)
    server.stop()


def _history(w: SimpleNamespace) -> tuple[Repo, dict[str, Any]]:
    """Eight commits whose c5 costs 20% of read_iops, measured by fake guests over the real
    engine (wiring.bisection gives them), and a campaign file's mapping over them."""
    repo = Repo(w.dir / "linux")
    for i in range(8):
        repo.commit(f"c{i}")
    bad = set(repo.git("rev-list", "--ancestry-path", f"{repo.names['c5']}..HEAD").split()) | {repo.names["c5"]}
    measurer = FakeMeasurer(lambda c: 8000.0 * (0.8 if c in bad else 1.0), noise=0.01, metric="read_iops")
    w.monkeypatch.setattr(wiring, "bisection", lambda *a, **k: (FakeBuilder(), measurer))
    return repo, {"name": "nightly", "repository": str(repo.path), "good": repo.names["c0"], "bad": repo.names["c7"],
                  "workload": {"name": "fio", "params": {"rw": "randread"}},
                  "metric": {"name": "read_iops", "threshold": "-10%"}, "guest": {"disks": {"count": 1}},
                  "boots_per_commit": 2, "runs_per_boot": 2, "confirm": "none", "lab": str(w.lab),
                  "explain": "profile"}


def bisect_spec(w: SimpleNamespace) -> Any:
    _repo, raw = _history(w)
    return BisectSpec.of(raw, parse_campaign(raw))


def verify_spec(w: SimpleNamespace) -> Any:
    repo, raw = _history(w)
    raw = {**raw, "explain": {"profile": True}}  # as `vmbisect verify --profile` stores it
    return VerifySpec(BisectSpec.of(raw, parse_campaign(raw)), repo.names["c5"], "", 3)


def compare_spec(w: SimpleNamespace) -> Any:
    kernel = w.dir / "bzImage"
    kernel.write_bytes(b"k")
    w.monkeypatch.setattr(wiring, "comparison", lambda plan, pool, host=None: (FakeKernels(), FakeMeasurer()))
    return spec_from_args(_parser().parse_args(
        ["compare", "--workload", "fio", "--disks", "2", "--kernel", str(kernel), "--variant", "none=sched:none",
         "--variant", "bfq=sched:bfq", "--reps", "2", "--metric", "iops", "--lab", str(w.lab), "--profile"]))


def settings_raw(w: SimpleNamespace, **over: Any) -> tuple[Path, dict[str, Any]]:
    """A settings campaign file whose bfq costs the metric (fake guests read the first disk's
    scheduler), and the search over it on fake guests (wiring.settings_bisection gives it)."""
    (w.dir / "bzImage").write_bytes(b"not a real kernel")
    raw: dict[str, Any] = {
        "kind": "settings", "name": "sched", "kernel": {"file": "bzImage"},
        "good": {"cmdline": "quiet", "settings": {"scheduler": "none"}},
        "bad": {"cmdline": "quiet", "settings": {"scheduler": "bfq", "nomerges": 2}},
        "workload": {"name": "fio", "params": {"runtime": 2, "ramp_time": 0}},
        "metric": {"name": "iops", "threshold": "-20%"}, "guest": {"disks": {"count": 1}},
        "runs_per_boot": 2, "boots_per_commit": 2, "max_boots_per_commit": 6, "lab": str(w.lab), **over}
    path = w.dir / "settings.yaml"
    path.write_text(yaml.safe_dump(raw))

    def bisection(c: Any, store: Store, campaign_id: int, pool: Any, on_event: Any) -> SetBisection:
        units = c.units()
        return SetBisection(units, SettingsMaker(wiring.settings_kernel(c.kernel), c.good, c.bad, units),
                            FakeMeasurer(noise=0.02, between=0.02, disks=1, seed=4), store,
                            Rules("iops", "higher", Threshold("relative", -0.2), 2, 2, 6), on_event)

    w.monkeypatch.setattr(wiring, "settings_bisection", bisection)
    return path, raw


def settings_spec(w: SimpleNamespace) -> Any:
    path, raw = settings_raw(w)
    return SettingsSpec.of(raw, parse_settings(raw, base=w.dir, source=path))


def config_spec(w: SimpleNamespace) -> Any:
    repo = Repo(w.dir / "linux")
    repo.commit("v6.1")
    (w.dir / "good.config").write_text("CONFIG_DEBUG_KERNEL=y\n# CONFIG_PROVE_LOCKING is not set\n")
    (w.dir / "bad.config").write_text("CONFIG_DEBUG_KERNEL=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_LOCKDEP=y\n"
                                      "CONFIG_HZ_1000=y\nCONFIG_NUMA=y\n")
    raw = {"kind": "config", "name": "lockdep-cost", "repository": str(repo.path), "commit": "main",
           "good": {"config": "good.config"}, "bad": {"config": "bad.config"},
           "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1}}, "guest": {"disks": {"count": 1}},
           "metric": {"name": "read_iops", "threshold": "-10%"}, "runs_per_boot": 2, "lab": str(w.lab)}
    measurer = FakeMeasurer(value_of=by_options(lambda on: 8000.0 * (0.6 if "PROVE_LOCKING" in on else 1.0)),
                            noise=0.01, between=0.01, seed=5, metric="read_iops")
    kernels = FakeConfigKernels(FakeKconfig(KCONFIG), where=WHERE)
    w.monkeypatch.setattr(wiring, "bisection", lambda *a, **k: (kernels, measurer))
    return parse_config_campaign(raw, base=w.dir, source=w.dir / "config.yaml")


# Each kind of the table -> its typed spec over fake guests, the wiring patched to give them.
SETUPS: dict[str, Callable[[SimpleNamespace], Any]] = {
    "bisect": bisect_spec, "verify": verify_spec, "compare": compare_spec, "settings": settings_spec,
    "config": config_spec,
}


def test_every_kind_of_the_table_is_tested_here_and_declares_every_path():
    assert set(SETUPS) == set(table.KINDS), "a kind of the table without a setup in SETUPS is untested"
    paths = [f for f in Kind.__dataclass_fields__ if f not in ("name", "file", "aliases")]
    for name, kind in table.KINDS.items():
        assert kind.name == name and kind.spec.KIND == name
        missing = [p for p in paths if not callable(getattr(kind, p))]
        assert not missing, f"kind {name} lacks {missing}"
    assert set(table.FILES) == {"settings", "cmdline", "config"}


def test_an_unknown_stored_kind_lists_every_kind_of_the_table():
    with pytest.raises(UserError) as caught:
        table.load("kconfig", {})
    assert str(caught.value) == "kind: unknown campaign kind 'kconfig'; known: bisect, verify, compare, settings, config"


@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_a_kind_resumes_to_its_end_and_has_its_status_reports_dashboard_and_mail(world, capsys, kind):
    spec = SETUPS[kind](world)
    store, db = world.store, ["--store", world.url]
    cid = table.record(store, f"{kind}-campaign", spec)
    store.set_state(cid, "paused", Stopped(StopKind.PAUSED, "cannot connect to libvirt").to_dict())

    assert main(["resume", str(cid), *db]) == 0, capsys.readouterr().err
    row = store.campaign(cid)
    result = table.result_of(row)
    assert row.kind == kind and row.state == "done" and isinstance(result, table.KINDS[kind].result)
    line = table.status_line(row)
    assert line and table.metric_of(row)
    capsys.readouterr()

    assert main(["status", *db]) == 0 and line[:60] in capsys.readouterr().out
    assert main(["status", str(cid), *db]) == 0 and capsys.readouterr().out.strip()
    reports = {}
    for fmt in ("md", "html", "json"):
        assert main(["report", str(cid), "--format", fmt, *db]) == 0
        reports[fmt] = capsys.readouterr().out
    assert reports["md"].startswith("# ") and "<!DOCTYPE html>" in reports["html"] and json.loads(reports["json"])
    if kind in ("bisect", "verify", "compare"):  # the profile boots after the answer (a real capture standing in)
        assert "perf-profile.children.cpu-clock." in reports["md"] and reports["html"].count("<svg") >= 2
    if kind in ("bisect", "compare"):
        assert json.loads(reports["json"])["profile"]["event"] == "cpu-clock"

    kinds = catalogue()
    web = TestClient(create_app(world.url, kinds), base_url="http://127.0.0.1:8765")
    assert f"{kind}-campaign" in web.get("/").text
    page = web.get(f"/campaigns/{cid}")
    assert page.status_code == 200 and f"{kind}-campaign" in page.text
    assert web.get(f"/campaigns/{cid}/report").status_code == 200
    assert isinstance(kinds.estimate(store, row, store.boots(cid)).basis, str)

    assert len(world.inbox.mails) == 1, f"the {kind} campaign is mailed once when it ends"
    _sender, to, msg = world.inbox.mails[0]
    assert to == [TEAM] and msg["X-Vmbisect-Campaign"] == f"{cid} ({kind}-campaign, {kind})"
    assert str(msg["Subject"]).strip() != f"[vmbisect] {kind}-campaign: done", "the subject gives the answer"
    text = " ".join(msg.get_body(("plain",)).get_content().split())  # the text part wraps at 78 columns
    assert " ".join(reports["md"].splitlines()[0].split()) in text
    if kind == "bisect":
        assert "perf-profile.self.cpu-clock." in text


def test_a_settings_campaign_mails_its_result_to_the_list_its_own_file_names(world, capsys):
    """`vmbisect bisect FILE` of a settings file with `notify:`: its own list replaces the
    lab's (docs/mail.md), and the mail names the set that moves the metric."""
    path, _raw = settings_raw(world, notify={"mail": ["me@example.org"]})
    assert main(["bisect", str(path), "--store", world.url]) == 0, capsys.readouterr().err
    (row,) = world.store.campaigns()
    assert row.kind == "settings" and row.state == "done"
    assert f"campaign {row.id}: mailed to me@example.org" in capsys.readouterr().err
    (_sender, to, msg), = world.inbox.mails
    assert to == ["me@example.org"] and msg["X-Vmbisect-Outcome"] == "done"
    assert str(msg["Subject"]).strip().startswith("[vmbisect] sched: scheduler (alone; confirmation confirmed")
    body = msg.get_body(("plain",)).get_content()
    assert body.startswith(f"vmbisect campaign {row.id} (sched, settings) ended: done.")
    assert "named: scheduler" in body
