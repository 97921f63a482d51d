"""The settings kind's pure parts: the changes between two sides, their units and order, the
candidates' command lines and settings, and the campaign file's one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.errors import UserError
from orchestrator.ports import KernelArtifact
from orchestrator.setbisect.campaign import parse_settings
from orchestrator.setbisect.settings import SettingsMaker, SettingsSide, changes, units

KERNEL = KernelArtifact(Path("/boot/vmlinuz"), "0" * 64)
GOOD = SettingsSide(("quiet", "scsi_mod.use_blk_mq=0"), (("scheduler", "none"), ("nomerges", "0")))
BAD = SettingsSide(("quiet", "scsi_mod.use_blk_mq=1", "mitigations=off"),
           (("scheduler", "bfq"), ("read_ahead_kb", "4096"), ("nomerges", "2"), ("nice", "5"),
            ("sysfs:block/{disk}/queue/iosched/slice_idle", "0")))


def test_changes_are_the_parameters_and_settings_that_differ_with_defaults_for_what_a_side_leaves_out() -> None:
    found = {c.name: (c.good, c.bad) for c in changes(GOOD, BAD)}
    assert found == {"scsi_mod.use_blk_mq": ("0", "1"), "mitigations": ("", "off"), "scheduler": ("none", "bfq"),
                     "read_ahead_kb": ("", "4096"), "nomerges": ("0", "2"), "nice": ("", "5"),
                     "sysfs:block/{disk}/queue/iosched/slice_idle": ("", "0")}


def test_a_schedulers_tunable_goes_with_the_scheduler_and_the_order_puts_the_scheduler_first() -> None:
    got = sorted(units(GOOD, BAD), key=lambda u: (u.rank, u.name))
    assert [u.name for u in got] == ["scheduler+sysfs:block/{disk}/queue/iosched/slice_idle", "mitigations",
                                     "scsi_mod.use_blk_mq", "nomerges", "read_ahead_kb", "nice"]
    assert "exist only under that scheduler" in got[0].why


def test_together_groups_merge_when_they_overlap_and_must_name_changes() -> None:
    got = {u.name: u for u in units(GOOD, BAD, [["mitigations", "nice"], ["nice", "nomerges"]])}
    assert "mitigations+nice+nomerges" in got and "nice" not in got
    with pytest.raises(UserError, match=r"together\[0\]: 'sched' is not a change between the sides"):
        units(GOOD, BAD, [["sched", "nice"]])


def test_a_candidate_has_goods_command_line_and_settings_with_the_applied_units_as_bad_has_them() -> None:
    all_units = units(GOOD, BAD)
    maker = SettingsMaker(KERNEL, GOOD, BAD, all_units)
    made = maker.make(frozenset({"scsi_mod.use_blk_mq", "read_ahead_kb", "nice"}))
    assert made.append == "quiet scsi_mod.use_blk_mq=1" and made.sched == "none"
    assert dict(made.sysfs) == {"block/{disk}/queue/read_ahead_kb": "4096", "block/{disk}/queue/nomerges": "0"}
    assert made.nice == 5 and made.kernel == KERNEL
    both = maker.make(frozenset({"mitigations", "scheduler+sysfs:block/{disk}/queue/iosched/slice_idle"}))
    assert both.append == "quiet scsi_mod.use_blk_mq=0 mitigations=off" and both.sched == "bfq"
    assert dict(both.sysfs)["block/{disk}/queue/iosched/slice_idle"] == "0"
    assert maker.make(frozenset()).same_as() != both.same_as()


def campaign(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "kind": "settings", "name": "s", "kernel": {"file": "/boot/vmlinuz"},
        "good": {"settings": {"scheduler": "none", "nomerges": 0}},
        "bad": {"settings": {"scheduler": "bfq", "read_ahead_kb": 4096, "nomerges": 2}},
        "workload": {"name": "fio"}, "metric": {"name": "iops", "threshold": "-10%"},
        "guest": {"disks": {"count": 1}}}
    data.update(over)
    return data


def test_a_settings_campaign_file_reads_into_its_sides_and_kernel() -> None:
    c = parse_settings(campaign(kind="cmdline", together=[["read_ahead_kb", "nomerges"]]))
    assert c.kernel.file == Path("/boot/vmlinuz") and c.common.metric.name == "iops"
    assert dict(c.bad.settings) == {"scheduler": "bfq", "read_ahead_kb": "4096", "nomerges": "2"}
    assert sorted(u.name for u in c.units()) == ["read_ahead_kb+nomerges", "scheduler"]


@pytest.mark.parametrize("over, error", [
    ({"kind": "kconfig"}, r"^kind: invalid value 'kconfig'; valid choices: settings, cmdline$"),
    ({"kernel": {"file": "/a", "stored": "b"}}, r"^kernel: give exactly one of file, stored, commit"),
    ({"kernel": {"commit": "v6.1"}}, r"^kernel.repository: missing"),
    ({"good": {"settings": {"scheduler": "cfq"}}},
     r"^good.settings.scheduler: invalid value 'cfq'; valid choices: none, mq-deadline, bfq, kyber$"),
    ({"bad": {"settings": {"nomerges": 3}}}, r"^bad.settings.nomerges: invalid value 3; valid choices: 0, 1, 2$"),
    ({"bad": {"settings": {"nice": 40}}}, r"^bad.settings.nice: expected a whole number from -20 to 19, got 40$"),
    ({"bad": {"settings": {"sysfs": {"../etc/passwd": "x"}}}}, r"^bad.settings.sysfs: sysfs path"),
    ({"bad": {"settings": {"swappiness": 1}}}, r"^bad.settings.swappiness: unknown key; valid keys: scheduler,"),
    ({"bad": {"cmdline": "init='/bin/sh -c x'"}}, r"^bad.cmdline: \"init='/bin/sh\" is not a parameter"),
    ({"bad": {"cmdline": "a=1 a=2"}}, r"^bad.cmdline: a given twice$"),
    ({"bad": {"settings": {"scheduler": "none", "nomerges": 0}}}, r"^bad: the two sides do not differ"),
    ({"repository": "/src/linux"}, r"^repository: unknown key; valid keys: kind, kernel, good, bad, together,"),
    ({"together": [["scheduler"]]}, r"^together\[0\]: a group names at least two changes"),
    ({"metric": {"name": "iops"}}, r"^metric.threshold: missing"),
])
def test_a_bad_settings_campaign_is_one_line_naming_the_field(over: dict[str, Any], error: str) -> None:
    with pytest.raises(UserError, match=error):
        parse_settings(campaign(**over))
