"""The guest's clock (orchestrator/workloads/clock.py): its clocksource at the start of a boot
and around each run, a run whose clocksource changed flagged, the boot's clock stored with its
facts and read back (boots stored before it read as "not recorded"), and the reports that say
it: the Reproduce section of a bisection and the notes of a comparison."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from orchestrator.campaign.file import parse_campaign
from orchestrator.measure.judge import boot_facts
from orchestrator.report import reproduce
from orchestrator.store import Store
from orchestrator.workloads import clock
from orchestrator.workloads.clock import BootClock

HELLO = {"clocksource": "hpet", "clock_log": ["[    0.211004] tsc: Marking TSC unstable due to TSCs unsynchronized",
                                              "[    1.730009] clocksource: Switched to clocksource hpet"]}
CAMPAIGN = {"name": "n", "repository": "/r", "good": "a" * 40, "bad": "b" * 40, "workload": {"name": "fio"},
            "metric": {"name": "guest_run_us_per_op", "threshold": "10%"}}


def snap(source: str | None) -> dict:
    files = {"/proc/stat": "cpu  1 0 1 1 0 0 0 0\n"}
    return {"files": files | ({clock.CURRENT: source + "\n"} if source is not None else {}), "monotonic_ns": 1}


def test_a_runs_clocksource_is_read_from_its_two_snapshots():
    assert clock.of_run((snap("tsc"), snap("hpet"))) == ("tsc", "hpet")
    assert clock.of_run((snap(None), snap(None))) == ("", "")  # an agent before the copy
    assert clock.of_run(()) == ("", "")  # a run stored without snapshots


def test_a_run_whose_clocksource_changed_carries_a_note_and_one_that_did_not_none():
    assert clock.run_notes(("tsc", "hpet")) == ("the guest's clocksource changed during the run: tsc -> hpet",)
    assert clock.run_notes(("hpet", "hpet")) == ()
    assert clock.run_notes(("", "hpet")) == ()  # half recorded is not a change


def test_a_boots_clock_says_its_start_its_runs_and_which_runs_changed():
    bc = clock.from_hello(HELLO, [("hpet", "hpet"), ("hpet", "acpi_pm"), ("acpi_pm", "acpi_pm")])
    assert bc.start == "hpet" and bc.log == tuple(HELLO["clock_log"])
    assert bc.changed_runs == (1,)
    assert bc.sources == ("hpet", "acpi_pm")


def test_a_boots_clock_comes_back_from_its_stored_facts():
    bc = clock.from_hello(HELLO, [("hpet", "tsc")])
    assert BootClock.from_facts({"clock": bc.to_dict()}) == bc
    assert bc.to_dict()["changed_runs"] == [0]


@pytest.mark.parametrize("facts", [None, {}, {"host_state": None, "phases": {}}, {"clock": None}])
def test_a_boot_stored_before_the_clock_reads_as_none(facts):
    assert BootClock.from_facts(facts) is None


def test_the_boots_facts_hold_the_sessions_clock_and_none_for_a_session_without_one():
    bc = clock.from_hello(HELLO).to_dict()
    assert boot_facts(SimpleNamespace(clock=bc))["clock"] == bc
    assert boot_facts(SimpleNamespace())["clock"] is None


@pytest.mark.parametrize("boots, expected", [
    ([BootClock("hpet"), BootClock("hpet", (("hpet", "hpet"),))], "hpet"),
    ([BootClock("hpet")] * 3 + [BootClock("tsc")], "hpet in 3 boots, tsc in 1 boot"),
    ([BootClock("tsc", (("tsc", "hpet"), ("hpet", "hpet")))], "tsc then hpet; changed during 1 run"),
    ([BootClock("")], ""),
    ([], ""),
])
def test_the_summary_of_a_set_of_boots(boots, expected):
    assert clock.summary(boots) == expected


def test_sides_on_one_clocksource_say_it_and_sides_on_two_are_warned_of():
    assert clock.sides_note({"a": [("hpet", "hpet")], "b": [("hpet", "hpet")]}) == "the guest's clocksource: hpet"
    note = clock.sides_note({"hpet": [("hpet", "hpet")], "tsc": [("tsc", "tsc")], "old": [("", "")]})
    assert note.startswith("the guest's clocksource differed: hpet hpet, tsc tsc;") and "old" not in note
    assert clock.sides_note({"a": [("", "")]}) == ""


def _facts(clocks: dict[str, tuple[BootClock, ...]]) -> reproduce.Facts:
    return reproduce.Facts(CAMPAIGN, parse_campaign(CAMPAIGN), {"culprit": "c" * 40, "parent": "p" * 40}, {}, {},
                           clocks=clocks)


def _words(r: reproduce.Reproduce) -> str:
    return " ".join(" ".join(reproduce.lines(r, "c" * 40, "attached")).split())


def test_the_reproduce_section_names_the_guests_clocksource():
    r = reproduce.reproduce(_facts({"c" * 40: (BootClock("hpet"),), "p" * 40: (BootClock("hpet"),)}))
    assert "guest clocksource hpet." in _words(r)


def test_the_reproduce_section_says_when_the_culprit_and_its_parent_kept_time_apart():
    r = reproduce.reproduce(_facts({"c" * 40: (BootClock("tsc"),) * 2, "p" * 40: (BootClock("hpet"),) * 2}))
    assert ("guest clocksource tsc in 2 boots, hpet in 2 boots (the culprit's tsc, the parent's hpet)."
            in _words(r))


def test_a_campaign_of_boots_without_a_clock_says_it_was_not_recorded():
    assert "guest clocksource not recorded." in _words(reproduce.reproduce(_facts({})))


def test_the_clock_stored_with_a_boot_reaches_the_reproduce_section(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("n", CAMPAIGN)
    for commit, facts in (("c" * 40, {"clock": clock.from_hello(HELLO, [("hpet", "hpet")]).to_dict()}),
                          ("p" * 40, {"host_state": None, "phases": {}})):  # a boot stored before the clock
        boot = store.start_boot(cid, commit)
        store.end_boot(boot, "ok", 1.0, facts=facts)
    f = reproduce.facts(store, store.campaign(cid), {"culprit": "c" * 40, "parent": "p" * 40})
    assert f.clocks == {"c" * 40: (clock.from_hello(HELLO, [("hpet", "hpet")]),)}
    assert reproduce.reproduce(f).clocksource == "hpet"


def _compare_run(variant: str, source: str, i: int) -> dict:
    result = {"metrics": {"iops": {"value": 1000.0 + i, "unit": "IO/s", "direction": "higher"}},
              "snapshots": [snap(source), snap(source)], "notes": [], "lab_host": ""}
    return {"variant": variant, "point": "", "point_index": 0, "kernel": "/k", "boot_id": i, "result": result}


def test_a_comparisons_notes_name_the_clocksource_and_warn_when_its_variants_differ():
    from orchestrator.cli import _parser
    from orchestrator.commands.compare import spec_from_args
    from orchestrator.compare.collect import comparison
    from orchestrator.compare.plan import plan_from_spec

    plan = plan_from_spec(spec_from_args(_parser().parse_args(
        ["compare", "--workload", "fio", "--disks", "1", "--kernel", "/k", "--variant", "hpet=append:clocksource=hpet",
         "--variant", "tsc=append:clocksource=tsc"])))
    same = [_compare_run(v, "hpet", i) for i, v in enumerate(["hpet", "tsc"] * 2)]
    assert "the guest's clocksource: hpet" in comparison(plan, same).notes
    apart = [_compare_run(v, v, i) for i, v in enumerate(["hpet", "tsc"] * 2)]
    assert any(n.startswith("the guest's clocksource differed: hpet hpet, tsc tsc;")
               for n in comparison(plan, apart).notes)
