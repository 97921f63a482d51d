"""Grouping a config bisection's option changes by what olddefconfig does with each one alone,
and the order they are tried in, on a tiny Kconfig (tests/fakes.py FakeKconfig)."""

from orchestrator.kbuild.configdiff import diff, values
from orchestrator.kbuild.configgroups import Group, GroupReason, group_changes, is_debug, order, shrink
from tests.fakes import FakeKconfig

# PROVE_LOCKING selects LOCKDEP (no prompt: set only by a select); DEBUG_ATOMIC_SLEEP depends
# on DEBUG_KERNEL; FTRACE selects TRACING and, when on, keeps RING_BUFFER on (RING_BUFFER's
# prompt is only reachable through it); HZ_1000 stands alone.
KCONFIG = {
    "CONFIG_DEBUG_KERNEL": {},
    "CONFIG_PROVE_LOCKING": {"selects": ["CONFIG_LOCKDEP"]},
    "CONFIG_LOCKDEP": {"prompt": False},
    "CONFIG_DEBUG_ATOMIC_SLEEP": {"depends": ["CONFIG_DEBUG_KERNEL"]},
    "CONFIG_FTRACE": {"selects": ["CONFIG_RING_BUFFER"]},
    "CONFIG_RING_BUFFER": {},
    "CONFIG_HZ_1000": {},
}
WHERE = {"CONFIG_PROVE_LOCKING": "lib/Kconfig.debug", "CONFIG_DEBUG_ATOMIC_SLEEP": "lib/Kconfig.debug",
         "CONFIG_DEBUG_KERNEL": "lib/Kconfig.debug", "CONFIG_HZ_1000": "kernel/Kconfig.hz",
         "CONFIG_FTRACE": "kernel/trace/Kconfig"}


def _grouped(good: str, bad: str):
    kconfig = FakeKconfig(KCONFIG)
    good_n, bad_n = kconfig.normalise(good), kconfig.normalise(bad)
    changes = diff(values(good_n), values(bad_n))
    return changes, group_changes(good_n, changes, lambda t: values(kconfig.normalise(t)), WHERE)


def test_an_option_that_stays_alone_is_its_own_group_and_lists_what_it_pulls_in():
    changes, g = _grouped("", "CONFIG_PROVE_LOCKING=y\nCONFIG_HZ_1000=y\n")
    assert [c.option for c in changes] == ["CONFIG_HZ_1000", "CONFIG_LOCKDEP", "CONFIG_PROVE_LOCKING"]
    assert {x.lead: (x.why, x.pulls) for x in g.groups} == {
        "CONFIG_PROVE_LOCKING": (GroupReason.ALONE, ("CONFIG_LOCKDEP",)), "CONFIG_HZ_1000": (GroupReason.ALONE, ())}


def test_an_option_only_a_select_sets_is_a_follower_not_a_candidate():
    _changes, g = _grouped("", "CONFIG_PROVE_LOCKING=y\n")
    assert [(f.option, f.by) for f in g.followers] == [("CONFIG_LOCKDEP", ("CONFIG_PROVE_LOCKING",))]
    assert "CONFIG_LOCKDEP" not in {x.lead for x in g.groups}


def test_an_option_olddefconfig_undoes_alone_is_grouped_with_the_dependency_it_needs():
    _changes, g = _grouped("", "CONFIG_DEBUG_KERNEL=y\nCONFIG_DEBUG_ATOMIC_SLEEP=y\nCONFIG_HZ_1000=y\n")
    sleep = next(x for x in g.groups if x.lead == "CONFIG_DEBUG_ATOMIC_SLEEP")
    assert sleep.why is GroupReason.NEEDS and sleep.needs == ("CONFIG_DEBUG_KERNEL",)
    assert sleep.options == ("CONFIG_DEBUG_ATOMIC_SLEEP", "CONFIG_DEBUG_KERNEL")


def test_an_option_a_select_pulls_back_is_grouped_with_the_option_that_selects_it():
    # good has FTRACE (selecting RING_BUFFER); bad has neither: RING_BUFFER=n alone is undone
    _changes, g = _grouped("CONFIG_FTRACE=y\nCONFIG_RING_BUFFER=y\n", "")
    ring = next(x for x in g.groups if x.lead == "CONFIG_RING_BUFFER")
    assert ring.why is GroupReason.NEEDS and ring.needs == ("CONFIG_FTRACE",)
    assert next(x for x in g.groups if x.lead == "CONFIG_FTRACE").why is GroupReason.ALONE


def test_a_change_no_set_of_the_others_keeps_is_unsettable():
    kconfig = FakeKconfig(KCONFIG)
    good = kconfig.normalise("")
    # not from a normalised bad side: LOCKDEP=y cannot be had without PROVE_LOCKING
    changes = diff(values(good), values("CONFIG_LOCKDEP=y\nCONFIG_HZ_1000=y\n"))
    g = group_changes(good, changes, lambda t: values(kconfig.normalise(t)))
    assert g.unsettable == ("CONFIG_LOCKDEP",) and [x.lead for x in g.groups] == ["CONFIG_HZ_1000"]


def test_groups_come_debug_first_then_by_kconfig_file_then_unknown():
    groups = [Group("CONFIG_Z", GroupReason.ALONE), Group("CONFIG_HZ_1000", GroupReason.ALONE, where="kernel/Kconfig.hz"),
              Group("CONFIG_SCSI_MQ", GroupReason.ALONE, where="drivers/scsi/Kconfig"),
              Group("CONFIG_KASAN", GroupReason.ALONE, where="lib/Kconfig.kasan"),
              Group("CONFIG_PROVE_LOCKING", GroupReason.ALONE, where="lib/Kconfig.debug")]
    assert [g.lead for g in order(groups)] == ["CONFIG_PROVE_LOCKING", "CONFIG_KASAN", "CONFIG_SCSI_MQ",
                                               "CONFIG_HZ_1000", "CONFIG_Z"]
    assert is_debug("mm/Kconfig.debug") and is_debug("arch/x86/Kconfig.debug") and not is_debug("mm/Kconfig")


def test_shrink_finds_the_needed_items_in_fewer_tries_than_one_per_item():
    tries = []

    def keeps(subset: list[str]) -> bool:
        tries.append(subset)
        return {"c", "n"} <= set(subset)

    items = [chr(ord("a") + i) for i in range(16)]
    assert shrink(items, keeps) == ["c", "n"]
    assert len(tries) < 2 * len(items)


def test_an_option_selected_by_a_grouped_option_is_its_follower_not_a_group_of_its_own():
    # DEBUG_KERNEL off on the good side: PROVE_LOCKING needs it, LOCKDEP comes with PROVE_LOCKING
    symbols = {**KCONFIG, "CONFIG_PROVE_LOCKING": {"depends": ["CONFIG_DEBUG_KERNEL"], "selects": ["CONFIG_LOCKDEP"]}}
    kconfig = FakeKconfig(symbols)
    good = kconfig.normalise("")
    changes = diff(values(good), values(kconfig.normalise("CONFIG_DEBUG_KERNEL=y\nCONFIG_PROVE_LOCKING=y\n")))
    g = group_changes(good, changes, lambda t: values(kconfig.normalise(t)))
    assert [(x.lead, x.needs) for x in g.groups] == [("CONFIG_DEBUG_KERNEL", ()),
                                                      ("CONFIG_PROVE_LOCKING", ("CONFIG_DEBUG_KERNEL",))]
    assert [(f.option, f.by) for f in g.followers] == [("CONFIG_LOCKDEP", ("CONFIG_PROVE_LOCKING",))]
