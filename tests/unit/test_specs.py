"""Typed campaign specs: each kind written and read back as the same dataclass, stores from
before the kind column read as they were meant, a bad stored spec refused by name."""

from pathlib import Path

import pytest

from orchestrator.compare.spec import CompareSpec
from orchestrator.errors import UserError
from orchestrator.kinds.specs import BisectSpec, VerifySpec
from orchestrator.kinds.table import load
from orchestrator.store import legacy_kind
from orchestrator.vm.options import GuestOptions

CAMPAIGN = {"name": "scsi-mq", "repository": "/src/linux", "good": "v4.18", "bad": "v4.19-rc4",
            "workload": {"name": "fio"}, "metric": {"name": "iops", "threshold": "5%"}}


def test_a_bisection_spec_is_its_campaign_file_and_parses_once_into_the_campaign():
    spec = load("bisect", CAMPAIGN)
    assert isinstance(spec, BisectSpec) and spec.campaign.good == "v4.18"
    # stored before the guest's clock existed: read as booted with the kernel's own clock
    assert spec.to_dict() == {**CAMPAIGN, "guest": {"clock": "kernel"}} and load("bisect", spec.to_dict()) == spec


def test_a_verification_spec_round_trips_with_its_own_arguments():
    spec = VerifySpec(BisectSpec.from_dict(CAMPAIGN), "abc123", "v4.19-rc4", 6)
    again = load("verify", spec.to_dict())
    assert again == spec and isinstance(again, VerifySpec) and again.campaign.bad == "v4.19-rc4"


def test_a_comparison_spec_round_trips_paths_and_guest_options():
    spec = CompareSpec(("a=kernel:/k/a", "b=kernel:/k/b"), "fio", params=("bs=4k",), repo=Path("/src/linux"),
                       reports=(Path("/tmp/r.md"),), guest=GuestOptions(disks=2, disk_dir=Path("/dev/shm")))
    assert load("compare", spec.to_dict()) == spec


@pytest.mark.parametrize("kind, data, field", [
    ("compare", {"variants": ["a=x"], "workload": "fio", "colour": "red"}, "colour"),
    ("compare", {"variants": ["a=x"], "workload": "fio", "guest": {"cpus": 4}}, "cpus"),
    ("verify", CAMPAIGN, "verify"),
    ("bisect", {**CAMPAIGN, "colour": "red"}, "colour"),
    ("survey", {}, "kind"),
])
def test_a_stored_spec_that_does_not_fit_its_kind_is_refused_naming_the_field(kind, data, field):
    with pytest.raises(UserError, match=field):
        load(kind, data)


@pytest.mark.parametrize("spec, kind", [
    ('{"kind": "compare", "args": {}}', "compare"),
    ('{"name": "x", "verify": {"commit": "c"}}', "verify"),
    ('{"name": "x", "good": "v1"}', "bisect"),
    ("{}", "bisect"),
    ("", "bisect"),
    ("not json", "bisect"),
])
def test_the_kind_of_a_campaign_stored_before_the_kind_column(spec, kind):
    assert legacy_kind(spec) == kind


def test_a_bisection_spec_keeps_the_lab_file_absolute_for_a_resume_from_elsewhere(tmp_path):
    from orchestrator.campaign.file import parse_campaign

    raw = {**CAMPAIGN, "repository": "linux", "lab": "lab.yaml", "host": "big1"}
    spec = BisectSpec.of(raw, parse_campaign(raw, base=tmp_path))
    again = load("bisect", spec.to_dict())
    assert again.to_dict()["lab"] == str(tmp_path / "lab.yaml") and again.campaign.lab == tmp_path / "lab.yaml"
    assert again.campaign.repository == tmp_path / "linux" and again.campaign.host == "big1"
