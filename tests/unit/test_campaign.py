import re
from pathlib import Path

import pytest
import yaml

from orchestrator.campaign.file import Explain, load_campaign, parse_campaign
from orchestrator.errors import UserError

MINIMAL = {
    "name": "scsi-mq",
    "repository": "/src/linux",
    "good": "v4.18",
    "bad": "v4.19-rc4",
    "workload": "fio-seqread-4k",
    "metric": {"name": "read_iops", "direction": "higher", "threshold": "-10%"},
}


def with_(**changes):
    data = dict(MINIMAL)
    data.update(changes)
    return data


def test_minimal_campaign_gets_documented_defaults():
    c = parse_campaign(MINIMAL)
    assert c.repository == Path("/src/linux") and c.workload.name == "fio-seqread-4k"
    assert c.metric.threshold.scale == "relative" and c.metric.threshold.value == pytest.approx(-0.10)
    assert (c.boots_per_commit, c.max_boots_per_commit, c.runs_per_boot, c.confirm) == (2, 8, 3, "revert")
    assert c.skip_policy.build_failure == "skip" and c.skip_policy.boot_failure == "skip"
    assert c.kernel.config == ("guest-base",) and c.accel == "auto" and not c.first_parent


def test_full_guest_shape_of_the_seed_report():
    c = parse_campaign(with_(guest={"vcpus": 16, "memory_mib": 4096, "machine": "q35",
                                    "topology": {"sockets": 2, "cores": 8, "threads": 1},
                                    "disks": {"count": 8, "controller": "lsisas1068", "size_mib": 512}}))
    assert c.guest.vcpus == 16 and c.guest.topology.cpus == 16 and c.guest.disks.controller == "lsisas1068"


@pytest.mark.parametrize(
    "data, message",
    [
        (with_(bogus=1), "bogus: unknown key; valid keys: name, repository, good, bad, workload, metric"),
        (with_(guest={"disks": {"controler": "x"}}), "guest.disks.controler: unknown key; valid keys: count,"),
        (with_(guest={"disks": {"controller": "ide"}}),
         "guest.disks.controller: invalid value 'ide'; valid choices: virtio-blk, virtio-scsi, lsisas1068"),
        (with_(guest={"vcpus": 0}), "guest.vcpus: must be at least 1, got 0"),
        (with_(guest={"vcpus": 16, "topology": {"sockets": 2, "cores": 2}}), "guest.topology: 2 sockets x 2 cores"),
        (with_(metric={"name": "x", "threshold": "banana"}), "metric.threshold: expected a relative change like -10%"),
        (with_(metric={"name": "x", "direction": "up", "threshold": "-5%"}),
         "metric.direction: invalid value 'up'; valid choices: higher, lower"),
        (with_(metric={"name": "lat", "direction": "lower", "threshold": "-10%"}),
         "metric.threshold: -10.0% is an improvement for a metric where lower is better"),
        (with_(boots_per_commit=5, max_boots_per_commit=4),
         "max_boots_per_commit: must be at least boots_per_commit (5), got 4"),
        (with_(boots_per_commit=1), "boots_per_commit: must be at least 2, got 1"),
        (with_(confirm="yes"), "confirm: invalid value 'yes'; valid choices: revert, none"),
        (with_(skip_policy={"boot_failure": "ignore"}),
         "skip_policy.boot_failure: invalid value 'ignore'; valid choices: skip, bad"),
        (with_(runs_per_boot="3"), "runs_per_boot: expected a whole number, got '3'"),
        ({k: v for k, v in MINIMAL.items() if k != "good"}, "good: missing (required)"),
        (with_(name="my campaign!"), "name: 'my campaign!' must be 1-64 letters"),
        ([1, 2], "campaign: expected a mapping of keys to values, got a list"),
    ],
)
def test_bad_fields_are_one_line_errors_with_path_and_choices(data, message):
    with pytest.raises(UserError) as err:
        parse_campaign(data)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_thresholds_relative_fraction_and_absolute():
    assert parse_campaign(with_(metric={"name": "x", "threshold": -0.05})).metric.threshold.value == -0.05
    absolute = parse_campaign(with_(metric={"name": "x", "threshold": {"absolute": 12000}})).metric.threshold
    assert absolute.scale == "absolute" and absolute.value == 12000


def test_threshold_measured_is_its_own_kind_and_a_misspelling_names_the_choices():
    assert parse_campaign(with_(metric={"name": "x", "threshold": "measured"})).metric.threshold.scale == "measured"
    with pytest.raises(UserError, match=r"metric.threshold: expected a relative change like -10%, "
                                        r"\{absolute: VALUE\} or measured, got 'measure'"):
        parse_campaign(with_(metric={"name": "x", "threshold": "measure"}))


def test_boot_bisect_mode_marks_boot_failures_bad():
    assert parse_campaign(with_(skip_policy={"boot_failure": "bad"})).skip_policy.boot_failure == "bad"


def test_relative_repository_resolves_against_the_campaign_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(with_(repository="linux")))
    c = load_campaign(path)
    assert c.repository == tmp_path / "linux" and c.source == path


def test_unreadable_and_invalid_yaml_files_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="cannot read"):
        load_campaign(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(UserError, match="not valid YAML at line"):
        load_campaign(bad)


def test_a_lab_file_resolves_against_the_campaign_file_and_a_host_needs_one(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(with_(lab="lab.yaml", host="big1")))
    c = load_campaign(path)
    assert c.lab == tmp_path / "lab.yaml" and c.host == "big1"
    assert parse_campaign(MINIMAL).lab is None
    with pytest.raises(UserError, match="^host: needs lab: naming the lab file of the hosts$"):
        parse_campaign(with_(host="big1"))


def test_a_preset_whose_sweep_the_user_never_wrote_names_the_values_to_pick():
    from orchestrator.campaign.workload import choose_workload

    dbench = with_(workload={"name": "dbench"}, metric={"name": "throughput", "threshold": "-10%"})
    with pytest.raises(UserError) as err:
        choose_workload(parse_campaign(dbench))
    assert str(err.value) == ("workload.params.clients: the dbench preset sweeps clients over 1, 2, 4, 8 and a "
                              "bisection measures one setting; give one, e.g. workload: {name: dbench, params: "
                              "{clients: 8}}")
    chosen = choose_workload(parse_campaign(with_(workload={"name": "dbench", "params": {"clients": 8}},
                                                  metric={"name": "throughput", "threshold": "-10%"})))
    assert chosen.params["clients"] == 8 and chosen.params["fs"] == "ext4"


def test_a_sweep_the_user_wrote_is_refused_as_a_sweep():
    from orchestrator.campaign.workload import choose_workload

    swept = with_(workload={"name": "dbench", "params": {"clients": "1,2"}},
                  metric={"name": "throughput", "threshold": "-10%"})
    with pytest.raises(UserError, match="a bisection measures one setting; clients is a sweep"):
        choose_workload(parse_campaign(swept))


def test_explain_profile_is_on_by_default_none_switches_it_off_and_a_mapping_sets_its_boots():
    assert parse_campaign(MINIMAL).explain == Explain(True, 2)
    assert parse_campaign(with_(explain="none")).explain.profile is False
    assert parse_campaign(with_(explain={"profile": False})).explain.profile is False
    assert parse_campaign(with_(explain="profile")).explain == Explain(True, 2)
    assert parse_campaign(with_(explain={"profile_boots": 3})).explain == Explain(True, 3)


@pytest.mark.parametrize("value, message", [
    ("perf", "explain: invalid value 'perf'; valid choices: profile, none"),
    ({"profil": True}, "explain.profil: unknown key; valid keys: profile, profile_boots"),
    ({"profile_boots": 0}, "explain.profile_boots"),
    ({"profile": "yes"}, "explain.profile"),
])
def test_a_bad_explain_is_one_line_naming_the_field(value, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_campaign(with_(explain=value))
