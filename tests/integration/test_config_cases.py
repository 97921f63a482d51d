"""Named config-bisection cases, one table: the real set bisection runner (orchestrator/setbisect/)
and the real config side (sides, grouping, ConfigMaker) on a tiny Kconfig whose olddefconfig is
tests/fakes.py's FakeKconfig, kernels from FakeConfigKernels, guests from FakeMeasurer (nothing
is built or booted), the real SQLite store. Every case is checked against one Expect record;
`test_the_case_table_itself` checks the table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from orchestrator.campaign.file import Threshold
from orchestrator.setbisect.configmaker import ConfigMaker
from orchestrator.setbisect.configsides import ConfigSide, prepare
from orchestrator.setbisect.setbisection import Rules, SetBisection
from orchestrator.store import Store
from tests.fakes import FakeConfigKernels, FakeKconfig, FakeMeasurer, by_options

# A small kernel: lock debugging (PROVE_LOCKING selects LOCKDEP, needs DEBUG_KERNEL), a
# scheduler tick, the page allocator's checks and a tracer that only acts with a second switch.
KCONFIG: dict[str, dict[str, Any]] = {
    "CONFIG_DEBUG_KERNEL": {},
    "CONFIG_PROVE_LOCKING": {"depends": ["CONFIG_DEBUG_KERNEL"], "selects": ["CONFIG_LOCKDEP"]},
    "CONFIG_LOCKDEP": {"prompt": False},
    "CONFIG_DEBUG_PAGEALLOC": {"depends": ["CONFIG_DEBUG_KERNEL"]},
    "CONFIG_HZ_1000": {},
    "CONFIG_SLUB_STATS": {},
    "CONFIG_FTRACE": {},
    "CONFIG_FUNCTION_TRACER": {"depends": ["CONFIG_FTRACE"]},
    "CONFIG_NUMA": {},
}
WHERE = {"CONFIG_DEBUG_KERNEL": "lib/Kconfig.debug", "CONFIG_PROVE_LOCKING": "lib/Kconfig.debug",
         "CONFIG_DEBUG_PAGEALLOC": "mm/Kconfig.debug", "CONFIG_HZ_1000": "kernel/Kconfig.hz",
         "CONFIG_SLUB_STATS": "mm/Kconfig", "CONFIG_FTRACE": "kernel/trace/Kconfig",
         "CONFIG_FUNCTION_TRACER": "kernel/trace/Kconfig", "CONFIG_NUMA": "arch/x86/Kconfig"}
ALL_ON = "".join(f"{o}=y\n" for o in KCONFIG)
BASE = 8000.0


def cost(*factors: tuple[frozenset[str], float]) -> Callable[[frozenset[str]], float]:
    """The metric of a kernel with these options set: BASE times the factor of every entry whose
    options are all set."""
    def value(on: frozenset[str]) -> float:
        out = BASE
        for options, factor in factors:
            if options <= on:
                out *= factor
        return out
    return value


@dataclass(frozen=True)
class Expect:
    """`found`: one or together; `units`: the named set (unit names, CONFIG_ dropped); `grouped`:
    unit -> what it was grouped with; `followers`: options not tried on their own; `note`: text
    one of the result's notes must hold."""

    found: str
    units: tuple[str, ...]
    grouped: dict[str, tuple[str, ...]] = field(default_factory=dict)
    followers: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    good: str
    bad: str
    value: Callable[[frozenset[str]], float]
    expect: Expect


CASES = [
    Case("one responsible option among many", "CONFIG_DEBUG_KERNEL=y\n", ALL_ON,
         cost((frozenset({"PROVE_LOCKING"}), 0.6)),
         Expect("one", ("PROVE_LOCKING",), followers=("LOCKDEP",))),
    Case("two options needed together, neither alone", "CONFIG_DEBUG_KERNEL=y\n", ALL_ON,
         cost((frozenset({"SLUB_STATS", "NUMA"}), 0.6)),
         Expect("together", ("NUMA", "SLUB_STATS"), followers=("LOCKDEP",), note="no single change moves the metric")),
    Case("an option that needs another to be settable is grouped with it", "", ALL_ON,
         cost((frozenset({"DEBUG_PAGEALLOC"}), 0.6)),
         Expect("one", ("DEBUG_PAGEALLOC",), grouped={"DEBUG_PAGEALLOC": ("DEBUG_KERNEL",)},
                followers=("LOCKDEP",), note="goes as one unit")),
    Case("a tracer and its switch: nothing alone moves the metric", "CONFIG_FTRACE=y\n",
         "CONFIG_FTRACE=y\nCONFIG_FUNCTION_TRACER=y\nCONFIG_HZ_1000=y\nCONFIG_NUMA=y\n",
         cost((frozenset({"FUNCTION_TRACER", "HZ_1000"}), 0.5)),
         Expect("together", ("FUNCTION_TRACER", "HZ_1000"), note="none alone moved it")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_config_case(case: Case, tmp_path) -> None:
    kconfig = FakeKconfig(KCONFIG)
    kernels = FakeConfigKernels(kconfig, where=WHERE)
    sides = prepare(kernels, "c0ffee", ConfigSide("good", text=case.good), ConfigSide("bad", text=case.bad))
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    cid = store.new_campaign(case.name, {}, "config")
    measurer = FakeMeasurer(value_of=by_options(case.value), noise=0.01, between=0.01, seed=3)
    rules = Rules("iops", "higher", Threshold("relative", -0.2), runs_per_boot=2, boots=2, max_boots=6)
    result = SetBisection(sides.units(), ConfigMaker(kernels, "c0ffee", sides), measurer, store, rules).run(cid)
    e = case.expect
    assert (result.found, tuple(u.removeprefix("CONFIG_") for u in result.units)) == (e.found, e.units)
    for lead, needs in e.grouped.items():
        assert tuple(o.removeprefix("CONFIG_") for o in sides.group(f"CONFIG_{lead}").needs) == needs
    assert tuple(f.option.removeprefix("CONFIG_") for f in sides.grouping.followers) == e.followers
    if e.note:
        assert any(e.note in n for n in result.notes), result.notes
    assert result.confirmation.verdict == "confirmed" and result.revert.verdict == "restores"
    assert store.campaign(cid).state == "done"
    # a candidate normalised onto a .config already built is not built again
    assert len(kernels.built) == len(set(kernels.built))


def test_a_candidate_olddefconfig_brings_back_to_good_is_one_kernel_with_good() -> None:
    kconfig = FakeKconfig(KCONFIG)
    kernels = FakeConfigKernels(kconfig, where=WHERE)
    sides = prepare(kernels, "c0ffee", ConfigSide("good", text=""), ConfigSide("bad", text=ALL_ON))
    maker = ConfigMaker(kernels, "c0ffee", sides)
    # DEBUG_PAGEALLOC alone is undone by olddefconfig: it is grouped, so every candidate holding
    # it holds DEBUG_KERNEL too and keeps it
    pagealloc = maker.make(frozenset({"CONFIG_DEBUG_PAGEALLOC"}))
    assert pagealloc.notes == () and "DEBUG_PAGEALLOC" in pagealloc.kernel.commit
    assert maker.make(frozenset()).identity == maker.make(frozenset()).identity != pagealloc.identity


def test_the_sides_say_what_differs_how_it_is_grouped_and_what_is_no_candidate() -> None:
    kernels = FakeConfigKernels(FakeKconfig(KCONFIG), where=WHERE)
    sides = prepare(kernels, "c0ffee", ConfigSide("good", text="CONFIG_DEBUG_KERNEL=y\nCONFIG_NOT_IN_THIS_KERNEL=y\n"),
                    ConfigSide("bad", text=ALL_ON))
    text = "\n".join(sides.lines())
    assert "LOCKDEP: not set -> y (olddefconfig undoes it alone; set with PROVE_LOCKING)" in text
    assert "NOT_IN_THIS_KERNEL: y -> not set" in text  # only as written: olddefconfig drops it on both sides
    # debug and instrumentation first (settable alone, by Kconfig file; then what needs another), then the rest
    assert [u.name.removeprefix("CONFIG_") for u in sides.units()] == [
        "FTRACE", "PROVE_LOCKING", "DEBUG_PAGEALLOC", "FUNCTION_TRACER", "NUMA", "HZ_1000", "SLUB_STATS"]


def test_the_case_table_itself() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    kinds = {c.expect.found for c in CASES}
    assert kinds == {"one", "together"}
    assert any(c.expect.grouped for c in CASES) and any(c.expect.followers for c in CASES)


def test_the_revert_takes_out_the_units_that_would_select_the_named_option_back(tmp_path) -> None:
    # DEBUG_LOCK_ALLOC carries the cost; PROVE_LOCKING selects it: bad - DEBUG_LOCK_ALLOC alone
    # would be bad again after olddefconfig, so the revert leaves PROVE_LOCKING out too
    symbols = {**KCONFIG, "CONFIG_PROVE_LOCKING": {"selects": ["CONFIG_LOCKDEP", "CONFIG_DEBUG_LOCK_ALLOC"]},
               "CONFIG_DEBUG_LOCK_ALLOC": {"selects": ["CONFIG_LOCKDEP"]}}
    kernels = FakeConfigKernels(FakeKconfig(symbols), where={**WHERE, "CONFIG_DEBUG_LOCK_ALLOC": "lib/Kconfig.debug"})
    sides = prepare(kernels, "c0ffee", ConfigSide("good", text="CONFIG_DEBUG_KERNEL=y\n"),
                    ConfigSide("bad", text="CONFIG_DEBUG_KERNEL=y\nCONFIG_PROVE_LOCKING=y\nCONFIG_HZ_1000=y\n"))
    maker = ConfigMaker(kernels, "c0ffee", sides)
    assert maker.taken_out(frozenset({"CONFIG_DEBUG_LOCK_ALLOC"})) == {"CONFIG_DEBUG_LOCK_ALLOC",
                                                                       "CONFIG_PROVE_LOCKING"}
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    cid = store.new_campaign("revert", {}, "config")
    measurer = FakeMeasurer(value_of=by_options(cost((frozenset({"DEBUG_LOCK_ALLOC"}), 0.6))), noise=0.01,
                            between=0.01, seed=4)
    rules = Rules("iops", "higher", Threshold("relative", -0.2), runs_per_boot=2, boots=2, max_boots=6)
    result = SetBisection(sides.units(), maker, measurer, store, rules).run(cid)
    assert result.units == ("CONFIG_DEBUG_LOCK_ALLOC",) and result.revert.verdict == "restores"
    assert result.revert.units == ("CONFIG_DEBUG_LOCK_ALLOC", "CONFIG_PROVE_LOCKING")
