"""The pure parts of a config bisection: .config values, the differences of two sides, a
candidate's .config, where options are defined (golden .config snippets in
tests/data/kbuild/configdiff/)."""

from pathlib import Path

from orchestrator.kbuild.configdiff import OptionChange, apply, config_sha, definitions, diff, values, vanished

DATA = Path(__file__).resolve().parent.parent / "data" / "kbuild" / "configdiff"


def _side(name: str) -> dict[str, str]:
    return values((DATA / f"{name}.config").read_text())


def test_values_read_strings_numbers_modules_and_leave_not_set_out():
    good = _side("good")
    assert good["CONFIG_LOCALVERSION"] == '""' and good["CONFIG_NR_CPUS"] == "64" and good["CONFIG_XFS_FS"] == "m"
    assert "CONFIG_PROVE_LOCKING" not in good and "CONFIG_KASAN" not in good


def test_diff_of_the_golden_sides_matches_the_expected_changes():
    changes = diff(_side("good"), _side("bad"))
    assert [c.describe() for c in changes] == (DATA / "diff.expected").read_text().splitlines()


def test_not_set_and_absent_are_the_same_value():
    # KASAN is "not set" on the good side and absent on the bad one: no difference
    assert "CONFIG_KASAN" not in {c.option for c in diff(_side("good"), _side("bad"))}
    assert diff(values("# CONFIG_A is not set\n"), values("CONFIG_A=n\n")) == []


def test_vanished_lists_what_the_files_differ_in_but_olddefconfig_made_equal():
    raw_good, raw_bad = values("CONFIG_A=y\n"), values("CONFIG_A=y\nCONFIG_NEW=y\nCONFIG_B=y\n")
    kept = [OptionChange("CONFIG_B", "n", "y")]  # after olddefconfig NEW is y on both sides
    assert [c.option for c in vanished(raw_good, raw_bad, kept)] == ["CONFIG_NEW"]


def test_apply_rewrites_lines_in_place_and_appends_options_the_file_lacks():
    text = (DATA / "good.config").read_text()
    out = apply(text, {"CONFIG_PROVE_LOCKING": "y", "CONFIG_HZ_250": "n", "CONFIG_LOCKDEP": "y",
                       "CONFIG_LOCALVERSION": '"-debug"'})
    assert out == (DATA / "apply.expected").read_text()
    assert values(out)["CONFIG_PROVE_LOCKING"] == "y" and "CONFIG_HZ_250" not in values(out)


def test_apply_keeps_one_line_per_option_when_the_file_repeats_one():
    assert apply("CONFIG_A=y\nCONFIG_A=m\n", {"CONFIG_A": "n"}) == "# CONFIG_A is not set\n"


def test_config_sha_tells_configs_apart_by_content():
    assert config_sha("CONFIG_A=y\n") == config_sha("CONFIG_A=y\n") != config_sha("CONFIG_A=m\n")


def test_definitions_prefer_generic_files_then_the_architecture_measured():
    lines = ["c0ffee1:arch/arm/Kconfig:config HZ", "c0ffee1:kernel/Kconfig.hz:config HZ",
             "c0ffee1:arch/x86/Kconfig:config NR_CPUS", "c0ffee1:arch/arm64/Kconfig:config NR_CPUS",
             "c0ffee1:lib/Kconfig.debug:\tmenuconfig PROVE_LOCKING", "c0ffee1:README:not a definition"]
    assert definitions(lines) == {"CONFIG_HZ": "kernel/Kconfig.hz", "CONFIG_NR_CPUS": "arch/x86/Kconfig",
                                  "CONFIG_PROVE_LOCKING": "lib/Kconfig.debug"}
