"""A config bisection's sides as the campaign keeps them (config-sides.json), and the candidate
.config of a set of units."""

from orchestrator.kbuild.configdiff import values
from orchestrator.setbisect.configrun import inputs_digest, sides_for, stored_sides
from orchestrator.setbisect.configsides import ConfigSide, ConfigSides, prepare
from orchestrator.setbisect.configspec import parse_config_campaign
from tests.fakes import FakeConfigKernels, FakeKconfig

KCONFIG = {"CONFIG_DEBUG_KERNEL": {}, "CONFIG_PROVE_LOCKING": {"depends": ["CONFIG_DEBUG_KERNEL"],
                                                               "selects": ["CONFIG_LOCKDEP"]},
           "CONFIG_LOCKDEP": {"prompt": False}, "CONFIG_HZ_1000": {}}
BAD = "CONFIG_DEBUG_KERNEL=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_HZ_1000=y\n"


def _sides() -> ConfigSides:
    return prepare(FakeConfigKernels(FakeKconfig(KCONFIG)), "c0ffee", ConfigSide("good", text=""), ConfigSide("bad", text=BAD))


def test_sides_survive_their_json_form_unit_for_unit():
    sides = _sides()
    again = ConfigSides.from_dict(sides.to_dict())
    assert again == sides and [u.name for u in again.units()] == [u.name for u in sides.units()]


def test_a_candidate_is_good_with_the_units_options_and_all_units_is_bad_itself():
    sides = _sides()
    pl = values(sides.candidate({"CONFIG_PROVE_LOCKING"}))
    assert pl["CONFIG_PROVE_LOCKING"] == "y" and pl["CONFIG_DEBUG_KERNEL"] == "y" and "CONFIG_HZ_1000" not in pl
    assert sides.candidate({u.name for u in sides.units()}) == sides.bad


def test_the_sides_are_prepared_once_per_inputs_and_again_when_a_side_changes(tmp_path):
    kconfig = FakeKconfig(KCONFIG)
    kernels = FakeConfigKernels(kconfig)
    (tmp_path / "good.config").write_text("# CONFIG_DEBUG_KERNEL is not set\n")
    (tmp_path / "bad.config").write_text(BAD)
    raw = {"kind": "config", "name": "x", "repository": str(tmp_path), "commit": "main",
           "good": {"config": "good.config"}, "bad": {"config": "bad.config"}, "workload": "fio",
           "metric": {"name": "read_iops", "threshold": "-10%"}}
    spec = parse_config_campaign(raw, base=tmp_path)
    first = sides_for(spec, "c0ffee", kernels, tmp_path / "work")
    runs = kconfig.runs
    assert sides_for(spec, "c0ffee", kernels, tmp_path / "work") == first and kconfig.runs == runs
    assert stored_sides(tmp_path / "work", inputs_digest(spec, "beef")) is None  # another commit
    (tmp_path / "bad.config").write_text("CONFIG_HZ_1000=y\n")
    other = parse_config_campaign(raw, base=tmp_path)
    assert inputs_digest(other, "c0ffee") != inputs_digest(spec, "c0ffee")
