"""The config bisection's normalisation and grouping with the real `make olddefconfig` of
linux-source-6.1 (nothing is built): the guest recipe's .config as good, the same with a debug
option, a timer frequency and an option this kernel does not have as bad. Checks what only
Kconfig itself can say: a choice (HZ) switched by one of its members, a derived value (HZ) and a
symbol without a prompt (PREEMPT_COUNT) as followers, the option 6.1 lacks as no candidate, and
olddefconfig's output as a fixpoint (a candidate's .config normalised once is the one built).

The work directory is stable (~/.cache/vmbisect/test-kconfig): the first run clones the source
repository (about a minute), later runs take a few seconds per olddefconfig."""

from __future__ import annotations

import pytest

from orchestrator import paths
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.configdiff import values
from orchestrator.kbuild.configgroups import GroupReason
from orchestrator.kbuild.kernelstore import KernelStore
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kbuild.source import DEBIAN_TARBALL, ensure_linux_source_repo
from orchestrator.measure.kernels import Kernels
from orchestrator.setbisect.configsides import ConfigSide, prepare
from tests.conftest import require

pytestmark = [pytest.mark.slow]


def test_real_olddefconfig_groups_a_choice_a_derived_value_and_a_symbol_without_prompt(tmp_path):
    require(DEBIAN_TARBALL.is_file(), f"{DEBIAN_TARBALL} missing (make setup installs linux-source-6.1)")
    source = ensure_linux_source_repo()
    builder = KernelBuilder(KernelStore(tmp_path / "store"), paths.cache_dir() / "test-kconfig", None)
    kernels = Kernels(builder, source.path, parse_recipe([]))
    good = kernels.configured(source.commit, parse_recipe(["guest-base"]))
    assert kernels.olddefconfig(source.commit, good) == good  # a configured recipe is already normal
    bad = good + "CONFIG_DEBUG_ATOMIC_SLEEP=y\nCONFIG_HZ_1000=y\nCONFIG_VMBISECT_NO_SUCH_OPTION=y\n"
    sides = prepare(kernels, source.commit, ConfigSide("guest recipe", text=good), ConfigSide("+ debug, HZ", text=bad))
    print("\n" + "\n".join(sides.lines()))
    changed = {c.option: (c.good, c.bad) for c in sides.changes}
    assert changed["CONFIG_HZ"] == ("250", "1000") and changed["CONFIG_HZ_250"] == ("y", "n")
    units = {g.lead: g for g in sides.grouping.groups}
    assert set(units) == {"CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_HZ_1000"}
    assert all(g.why is GroupReason.ALONE for g in units.values())
    assert units["CONFIG_DEBUG_ATOMIC_SLEEP"].where == "lib/Kconfig.debug"
    followers = {f.option: f.by for f in sides.grouping.followers}
    assert followers["CONFIG_HZ"] == ("CONFIG_HZ_1000",) and followers["CONFIG_HZ_250"] == ("CONFIG_HZ_1000",)
    assert followers["CONFIG_PREEMPT_COUNT"] == ("CONFIG_DEBUG_ATOMIC_SLEEP",)
    assert [c.option for c in sides.vanished] == ["CONFIG_VMBISECT_NO_SUCH_OPTION"]
    # debug options first
    assert [u.name for u in sides.units()] == ["CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_HZ_1000"]
    # a candidate: good + HZ_1000, normalised, has the whole choice switched and is a fixpoint
    candidate = kernels.olddefconfig(source.commit, sides.candidate({"CONFIG_HZ_1000"}))
    assert values(candidate)["CONFIG_HZ"] == "1000" and "CONFIG_HZ_250" not in values(candidate)
    assert kernels.olddefconfig(source.commit, candidate + "\n") == candidate
