"""`vmbisect verify` by flags: the flags become a campaign mapping (pure), alone or over a
campaign file's keys; parse_campaign then checks it as it checks a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.campaign.file import parse_campaign
from orchestrator.cli import _parser
from orchestrator.commands.verify import split_target, with_flags, with_metric_defaults
from orchestrator.errors import UserError

FILE = {"name": "lsi", "repository": "/src/linux", "good": "v6.0", "bad": "v6.1",
        "workload": {"name": "fio", "params": {"rw": "randread", "disks": 4}},
        "metric": {"name": "read_iops", "threshold": "-15%"}, "runs_per_boot": 5,
        "guest": {"vcpus": 4, "memory_mib": 2048, "disks": {"count": 4, "controller": "lsisas1078"}}}


def flags(*argv: str):  # type: ignore[no-untyped-def]
    return _parser().parse_args(["verify", *argv])


def mapping(raw, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    a = flags(*argv)
    path, commit = split_target(a.target)
    return with_metric_defaults(with_flags(raw, a, commit))


def test_flags_alone_make_a_campaign_judged_by_the_headline_metric_at_10_percent():
    raw = mapping(None, "abc123", "--repo", "/src/linux", "--workload", "fio", "--param", "rw=randread",
                  "--disks", "2", "--controller", "lsisas1078", "--vcpus", "4", "--topology", "1:2:2")
    c = parse_campaign(raw)
    assert (c.repository, c.workload.name, dict(c.workload.params)) == (Path("/src/linux"), "fio", {"rw": "randread"})
    assert (c.metric.name, c.metric.threshold.value) == ("iops", -0.10)
    assert (c.guest.vcpus, c.guest.disks.count, c.guest.disks.controller) == (4, 2, "lsisas1078")
    assert (c.guest.topology.sockets, c.guest.topology.cores, c.guest.topology.threads) == (1, 2, 2)
    assert c.kernel.config == ("guest-base",) and c.runs_per_boot == 3 and c.accel == "auto"


def test_a_lower_is_better_metric_gets_its_threshold_in_the_rising_direction():
    raw = mapping(None, "abc123", "--repo", "/r", "--workload", "fio", "--metric", "read_clat_p99")
    assert parse_campaign(raw).metric.threshold.value == 0.10
    for system in ("guest_cpu_us_per_op", "iostat_await.sda"):
        raw = mapping(None, "abc123", "--repo", "/r", "--workload", "fio", "--metric", system)
        assert parse_campaign(raw).metric.threshold.value == 0.10, system


def test_flags_override_the_files_keys_and_keep_the_rest():
    raw = mapping(FILE, "lsi.yaml", "abc123", "--disks", "8", "--param", "runtime=5", "--config", "tinyconfig",
                  "--config", "guest-base", "--runs-per-boot", "2", "--accel", "tcg")
    c = parse_campaign(raw)
    assert (c.guest.disks.count, c.guest.disks.controller, c.guest.vcpus, c.guest.memory_mib) == (8, "lsisas1078", 4,
                                                                                                2048)
    assert dict(c.workload.params) == {"rw": "randread", "disks": 4, "runtime": "5"}
    assert (c.metric.name, c.metric.threshold.value) == ("read_iops", -0.15)
    assert c.kernel.config == ("tinyconfig", "guest-base") and c.runs_per_boot == 2 and c.accel == "tcg"
    assert FILE["guest"]["disks"]["count"] == 4, "the file's mapping was changed in place"


def test_a_new_workload_replaces_the_files_parameters():
    raw = mapping(FILE, "lsi.yaml", "abc123", "--workload", "dbench", "--metric", "throughput")
    assert raw["workload"] == {"name": "dbench", "params": {}}


@pytest.mark.parametrize("argv, error", [
    (["a", "b", "c"], "verify: expected [CAMPAIGN.yaml] COMMIT, got 3 arguments"),
    (["abc", "--workload", "fio"], "repository: missing; give --repo PATH or a campaign file"),
    (["abc", "--repo", "/r"], "workload: missing; give --workload NAME or a campaign file"),
    (["abc", "--repo", "/r", "--param", "rw=read"], "param: a workload parameter needs a workload; add --workload"),
    (["abc", "--repo", "/r", "--workload", "fio", "--param", "rw"], "param: expected KEY=VALUE, got 'rw'"),
    (["abc", "--repo", "/r", "--workload", "fio", "--topology", "2x2"], "topology: expected SOCKETS:CORES:THREADS"),
])
def test_bad_flags_are_one_line_naming_the_field(argv, error):
    with pytest.raises(UserError, match=r"^" + error.replace("[", r"\[").replace("]", r"\]")):
        mapping(None, *argv)


def test_guest_flags_are_checked_as_the_campaigns_guest_with_its_choices():
    raw = mapping(None, "abc123", "--repo", "/r", "--workload", "fio", "--controller", "ide")
    with pytest.raises(UserError, match=r"^guest\.disks\.controller: invalid value 'ide'; valid choices: virtio-blk"):
        parse_campaign(raw)
