import pytest

from orchestrator.errors import UserError
from orchestrator.kbuild.kconfig import (
    has_modules,
    parse_config,
    requested_options,
    unmet,
)
from orchestrator.kbuild.recipe import KCONFIGS_DIR, parse_recipe


def test_no_items_is_the_guest_base_recipe_on_tinyconfig():
    recipe = parse_recipe([])
    assert recipe.base == "tinyconfig" and [f.name for f in recipe.fragments] == ["guest-base"]
    assert recipe.wanted()["CONFIG_PRINTK_TIME"] == "y" and recipe.cc == "gcc"


def test_items_become_base_fragments_extras_and_compiler(tmp_path):
    frag = tmp_path / "mine.config"
    frag.write_text("CONFIG_FOO=y\n")
    recipe = parse_recipe(["defconfig", "guest-base", str(frag), "CONFIG_BAR=m", "cc=gcc-10"])
    assert recipe.base == "defconfig" and recipe.cc == "gcc-10" and recipe.extras == ("CONFIG_BAR=m",)
    assert [f.name for f in recipe.fragments] == ["guest-base", str(frag.resolve())]
    assert recipe.wanted()["CONFIG_FOO"] == "y" and recipe.wanted()["CONFIG_BAR"] == "m"


def test_a_full_config_file_is_a_base_only_with_base_prefix(tmp_path):
    base = tmp_path / "dot.config"
    base.write_text("CONFIG_X=y\n")
    recipe = parse_recipe([f"base={base}", "CONFIG_Y=y"])
    assert recipe.base == "file" and recipe.base_text == "CONFIG_X=y\n" and "CONFIG_X" not in recipe.wanted()


def test_digest_changes_with_fragment_contents_not_just_names(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_A=y\n")
    first = parse_recipe([str(frag)]).digest()
    frag.write_text("CONFIG_A=n\n")
    assert parse_recipe([str(frag)]).digest() != first
    assert parse_recipe(["CONFIG_A=y"]).digest() != parse_recipe(["CONFIG_A=y", "cc=gcc-10"]).digest()


@pytest.mark.parametrize("items, message", [
    (["guest-base", "defconfig"], "config: base 'defconfig' must be the first --config item"),
    (["no-such-fragment"], ("config: unknown item 'no-such-fragment'; valid choices: tinyconfig, defconfig, "
                            "base=PATH, cc=COMPILER, CONFIG_X=VALUE, a fragment name (debug-off, guest-base, "
                            "kasan, lockdep) or a fragment file path")),
    (["cc=gcc 10"], "config: cc must be a compiler command name like gcc-10, got 'gcc 10'"),
    (["base=/nonexistent/.config"], "config: cannot read base config /nonexistent/.config: No such file or directory"),
])
def test_bad_items_are_one_line_errors_naming_the_field(items, message):
    with pytest.raises(UserError) as caught:
        parse_recipe(items)
    assert str(caught.value) == message


def test_every_shipped_fragment_parses_and_asks_for_something():
    for path in sorted(KCONFIGS_DIR.glob("*.config")):
        assert requested_options([path.read_text()]), path


def test_parse_config_reads_set_unset_and_n_lines_later_ones_winning():
    text = "# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=n\nCONFIG_S=\"x y\"\nCONFIG_A=m\n"
    assert parse_config(text) == {"CONFIG_A": "m", "CONFIG_B": "n", "CONFIG_C": "n", "CONFIG_S": '"x y"'}


def test_unmet_names_absent_changed_and_forced_options_and_accepts_unset_as_absent():
    wanted = {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "n", "CONFIG_D": "n", "CONFIG_E": "64"}
    final = {"CONFIG_B": "m", "CONFIG_C": "y", "CONFIG_E": "64"}
    assert unmet(wanted, final) == [
        "CONFIG_A=y is absent (no such option in this kernel, or its dependencies are off)",
        "CONFIG_B=y became m (an unmet dependency or a select/range rule)",
        "CONFIG_C is forced to y (asked: not set)",
    ]


def test_has_modules_needs_modules_enabled_and_one_module():
    assert has_modules({"CONFIG_MODULES": "y", "CONFIG_X": "m"})
    assert not has_modules({"CONFIG_MODULES": "y", "CONFIG_X": "y"})
    assert not has_modules({"CONFIG_MODULES": "n"})
