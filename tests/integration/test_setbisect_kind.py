"""The `settings` kind end to end without a guest: a campaign file refused before anything is
stored, and a stored settings campaign run with the real search, judge, settings maker and
SQLite store over tests/fakes.py's guests (whose sysfs the candidates' settings are written
to and read back from, and whose metric follows the first disk's scheduler), then read
through the kind table: its report in md, html and json, its status line, its spec."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from orchestrator.campaign.file import Threshold
from orchestrator.cli import main
from orchestrator.kinds import table as kinds
from orchestrator.kinds.specs import SettingsSpec
from orchestrator.kinds.table import record, stored
from orchestrator.setbisect.campaign import parse_settings
from orchestrator.setbisect.setbisection import Rules, SetBisection
from orchestrator.setbisect.settings import SettingsMaker
from orchestrator.store import Store
from orchestrator.wiring import settings_kernel
from tests.fakes import FakeMeasurer


def settings_file(tmp_path: Path, **over: object) -> tuple[Path, dict[str, object]]:
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"not a real kernel")
    data: dict[str, object] = {
        "kind": "settings", "name": "sched", "kernel": {"file": "bzImage"},
        "good": {"cmdline": "quiet", "settings": {"scheduler": "none", "nomerges": 0}},
        "bad": {"cmdline": "quiet mitigations=off", "settings": {"scheduler": "bfq", "read_ahead_kb": 4096,
                                                                 "nomerges": 2, "sysfs": {"kernel/knob": "<b>"}}},
        "workload": {"name": "fio", "params": {"runtime": 2, "ramp_time": 0}},
        "metric": {"name": "iops", "threshold": "-20%"}, "guest": {"disks": {"count": 1}},
        "runs_per_boot": 2, "boots_per_commit": 2, "max_boots_per_commit": 6}
    data.update(over)
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump(data))
    return path, data


def test_a_refused_settings_file_stores_nothing_and_says_which_field(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    for over, field in (({"guest": {"disks": {"count": 0}}}, "guest.disks.count: fio needs at least 1"),
                        ({"kernel": {"file": "missing"}}, "kernel.file: "),
                        ({"kind": "kconfig"}, "kind: invalid value 'kconfig'; valid choices: settings, cmdline")):
        path, _data = settings_file(tmp_path, **over)
        assert main(["bisect", str(path), "--store", db]) == 2
        assert field in capsys.readouterr().err
    assert Store(db).campaigns() == []


def test_a_settings_campaign_names_the_scheduler_and_reads_back_through_the_kind_table(tmp_path: Path,
                                                                                      capsys) -> None:  # type: ignore[no-untyped-def]
    path, raw = settings_file(tmp_path)
    campaign = parse_settings(raw, base=tmp_path, source=path)
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    cid = record(store, campaign.name, SettingsSpec.of(raw, campaign))
    spec = stored(store.campaign(cid))
    assert isinstance(spec, SettingsSpec) and spec.campaign.kernel.file == tmp_path / "bzImage"
    units = spec.campaign.units()
    measurer = FakeMeasurer(noise=0.02, between=0.02, disks=1, seed=4)
    maker = SettingsMaker(settings_kernel(spec.campaign.kernel), spec.campaign.good, spec.campaign.bad, units)
    result = SetBisection(units, maker, measurer, store,
                          Rules("iops", "higher", Threshold("relative", -0.2), 2, 2, 6)).run(cid)
    assert (result.found, result.units) == ("one", ("scheduler",))
    assert (result.confirmation.verdict, result.revert.verdict) == ("confirmed", "restores")
    # the candidates' settings reached the guests and their command lines the boots
    assert {"quiet", "quiet mitigations=off"} <= set(measurer.appends)
    bfq_guests = [g for g in measurer.guests if g.sysfs["/sys/block/sda/queue/scheduler"] == "bfq"]
    assert bfq_guests and any(g.sysfs["/sys/block/sda/queue/read_ahead_kb"] == "4096" for g in bfq_guests)
    row = store.campaign(cid)
    assert kinds.status_line(row).startswith("scheduler (alone; confirmation confirmed, revert restores)")
    md = kinds.report(store, cid, "md")
    assert "| scheduler | none | bfq |" in md and "| good + scheduler |" in md and "named: scheduler" in md
    page = kinds.report(store, cid, "html")
    assert "&lt;b&gt;" in page and "<b>" not in page
    doc = json.loads(kinds.report(store, cid, "json"))
    assert doc["state"] == "done" and {"change": "scheduler", "good": "none", "bad": "bfq", "unit": ""} in doc["changes"]
    assert kinds.metric_of(row) == "iops"
    db = ["--store", f"sqlite:///{tmp_path / 'db.sqlite'}"]
    assert main(["status", *db]) == 0 and "settings" in capsys.readouterr().out
    assert main(["status", str(cid), *db]) == 0 and "candidate" in capsys.readouterr().out
    assert main(["report", str(cid), "--format", "md", *db]) == 0
    assert capsys.readouterr().out.startswith("# vmbisect settings bisection sched")


def test_a_settings_bisection_on_a_lab_of_two_hosts_gets_a_slot_per_host_as_commit_bisection_does(
        tmp_path: Path) -> None:
    """wiring.settings_bisection takes its slots from wiring.lab_slots: one measurer per host,
    pinned to it, repeated per slot of that host (the first host is home); on one slot, none."""
    from types import SimpleNamespace

    from orchestrator.hosts.labfile import Host, Lab, Slot
    from orchestrator.wiring import settings_bisection

    path, raw = settings_file(tmp_path)
    campaign = parse_settings(raw, base=tmp_path, source=path)
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    cid = record(store, campaign.name, SettingsSpec.of(raw, campaign))
    two = Lab((Host("a", "qemu:///system", (Slot(0), Slot(1))), Host("b", "qemu+libssh://b/system", (Slot(0),))))
    run = settings_bisection(campaign, store, cid, SimpleNamespace(lab=two), lambda _e: None)  # type: ignore[arg-type]
    assert [(m.host, m.pinned) for m in run.slots] == [("a", True), ("a", True), ("b", True)]
    assert run.slots[0] is run.slots[1] and run.measurer.inner is run.slots[0]
    one = Lab((Host("a", "qemu:///system", (Slot(0),)),))
    assert settings_bisection(campaign, store, cid, SimpleNamespace(lab=one), lambda _e: None).slots == []  # type: ignore[arg-type]
