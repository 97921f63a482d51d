"""Named set-bisection cases, one table: the real search, runner, judge and SQLite store, the
fakes of tests/fakes.py for candidates and guests (FakeMaker: each candidate its own kernel
named by its changes; FakeMeasurer(by_changes(...)): the metric depends on which changes a
candidate has). No guest boots here. Every case is checked against one expectation record,
as tests/integration/test_engine_cases.py does for commit bisection. A case with `hosts` runs
on one slot per host (one FakeMeasurer each, as wiring.lab_slots gives one measurer per host):
the candidates the search may ask next are measured at once on the other slots."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from orchestrator.campaign.file import Threshold
from orchestrator.decisions import Basis, Role
from orchestrator.report.sets import collect
from orchestrator.results import SetBisectResult
from orchestrator.setbisect.model import Change, Unit, key_of
from orchestrator.setbisect.setbisection import Rules, SetBisection, SetRefused, replay
from orchestrator.store import Store
from tests.fakes import FakeMaker, FakeMeasurer, Meeting, by_changes

NAMES = tuple("abcdefgh")


def drop_when(needed: set[str], drop: float = 0.4) -> Callable[[frozenset[str]], float]:
    """8000 IOPS, `drop` lower once a candidate holds every change of `needed`."""
    return lambda applied: 8000.0 * (1 - drop) if needed <= applied else 8000.0


@dataclass(frozen=True)
class Expect:
    """`found`: one, together or refused; `units`: the set named; `note`: a regular expression
    one of the result's notes (or the refusal) must match; `max_candidates`: the search's budget."""

    found: str
    units: tuple[str, ...] = ()
    confirmation: str = "confirmed"
    revert: str = "restores"
    note: str = ""
    max_candidates: int = 0
    skipped_kind: Basis | None = None
    inherited: bool = False  # some candidate carried another's verdict without a boot


@dataclass(frozen=True)
class Case:
    name: str
    expect: Expect
    value: Callable[[frozenset[str]], float]
    units: tuple[Unit, ...] = tuple(Unit.of(Change(n, "0", "1"), i) for i, n in enumerate(NAMES))
    between: float = 0.03
    noise: float = 0.02
    max_boots: int = 8
    needs: dict[str, str] = field(default_factory=dict)  # FakeMaker: a unit that does not build without another
    same_as_good: frozenset[str] = frozenset()  # FakeMaker: units the normalisation drops
    seed: int = 1
    hosts: tuple[str, ...] = ()  # one slot per host (the first is home); none: one slot, as before


GROUPED = (*(Unit.of(Change(n, "0", "1"), i) for i, n in enumerate("abcd")),
           Unit("x+y", (Change("x", "off", "on"), Change("y", "", "1")), 5, "x can only be set with y"))

CASES = [
    Case("one responsible change among eight", Expect("one", ("f",), max_candidates=6), drop_when({"f"})),
    Case("the first change in the maintainer's order", Expect("one", ("a",), max_candidates=6), drop_when({"a"})),
    Case("two changes needed together, in different halves",
         Expect("together", ("c", "f"), note="no single change moves the metric: these 2 do together"),
         drop_when({"c", "f"})),
    Case("a change settable only with another goes as one unit and is named as one",
         Expect("one", ("x+y",), note="x\\+y goes as one unit: x can only be set with y"),
         drop_when({"x+y"}), units=GROUPED),
    Case("nothing alone moves it: three changes needed, reported as a set, never a wrong single change",
         Expect("together", ("b", "e", "h"), note="none alone moved it"), drop_when({"b", "e", "h"})),
    Case("one change carries most of the regression, another the rest: the one is named with its share and the "
         "rest is said, as on the real lockdep fragment",
         Expect("one", ("f",), note=r"carries about 8\d% of the regression: bad without it is still -1\d\.\d% from good"),
         lambda applied: 8000.0 * (0.4 if "f" in applied else 1.0) * (0.88 if "b" in applied else 1.0)),
    Case("a change that does not build without another, ungrouped: a skip, and the other is not dragged in",
         Expect("one", ("g",), note="could not be judged", skipped_kind=Basis.BUILD_FAILED),
         drop_when({"g"}), needs={"h": "e"}),
    Case("a candidate the normalisation brings back to good carries good's verdict without a boot",
         Expect("one", ("e",), inherited=True), drop_when({"e"}), same_as_good=frozenset("abcd")),
    Case("sides that do not differ in the metric are refused", Expect("refused", note="bad is not bad"),
         drop_when({"c"}, 0.0)),
    Case("noise too large for the boots allowed is refused",
         Expect("refused", note="do not differ significantly|the noise needs"), drop_when({"c"}, 0.15),
         between=0.5, max_boots=3),
    Case("two slots: one responsible change, each split's second half measured while its first is asked",
         Expect("one", ("f",), max_candidates=6), drop_when({"f"}), hosts=("a", "b")),
    Case("two slots: two changes needed together, in different halves",
         Expect("together", ("c", "f"), note="no single change moves the metric: these 2 do together"),
         drop_when({"c", "f"}), hosts=("a", "b")),
    Case("three slots on three hosts: three changes needed, none alone moves it",
         Expect("together", ("b", "e", "h"), note="none alone moved it"), drop_when({"b", "e", "h"}),
         hosts=("a", "b", "c")),
    Case("two slots: a change that does not build without another is a skip on whichever slot",
         Expect("one", ("g",), note="could not be judged", skipped_kind=Basis.BUILD_FAILED),
         drop_when({"g"}), needs={"h": "e"}, hosts=("a", "b")),
]
SLOT_CASES = [c for c in CASES if c.hosts]


def measurers(case: Case, crash_after: int | None = None, value_of: Callable[[str], float] | None = None,
              **on_host: dict[str, object]) -> list[FakeMeasurer]:
    """The case's guests: one FakeMeasurer (no `hosts`), or one per host, the first (home) killed
    at `crash_after` runs; `on_host[h]`: host h's own FakeMeasurer options."""
    value = value_of or by_changes(case.value)
    if not case.hosts:
        return [FakeMeasurer(value, noise=case.noise, between=case.between, seed=case.seed, crash_after=crash_after,
                             **on_host.get("local", {}))]  # type: ignore[arg-type]
    return [FakeMeasurer(value, noise=case.noise, between=case.between, seed=case.seed + 100 * i, host=h,
                         crash_after=crash_after if i == 0 else None, **on_host.get(h, {}))  # type: ignore[arg-type]
            for i, h in enumerate(case.hosts)]


def run_case(case: Case, tmp_path: Path, crash_after: int | None = None, store: Store | None = None,
             cid: int | None = None, guests: list[FakeMeasurer] | None = None
             ) -> tuple[SetBisectResult, Store, int, list[FakeMeasurer]]:
    store = store or Store(f"sqlite:///{tmp_path / 'sets.db'}")
    cid = cid or store.new_campaign("t", {}, "settings")
    guests = guests or measurers(case, crash_after)
    rules = Rules("iops", "higher", Threshold("relative", -0.1), runs_per_boot=2, boots=2, max_boots=case.max_boots)
    search = SetBisection(case.units, FakeMaker(needs=case.needs, same_as_good=case.same_as_good), guests[0], store,
                          rules, slots=guests if case.hosts else ())
    return search.run(cid), store, cid, guests


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_set_bisection_case(case: Case, tmp_path: Path) -> None:
    e = case.expect
    if e.found == "refused":
        with pytest.raises(SetRefused, match=e.note):
            run_case(case, tmp_path)
        return
    result, store, cid, _m = run_case(case, tmp_path)
    assert (result.found, result.units) == (e.found, e.units)
    assert result.confirmation.verdict == e.confirmation and result.revert.verdict == e.revert
    if e.note:
        assert any(re.search(e.note, n) for n in result.notes), result.notes
    if e.max_candidates:
        assert result.candidates <= e.max_candidates
    decisions = store.decisions(cid)
    if e.skipped_kind is not None:
        assert any(d.role is Role.CANDIDATE and d.basis is e.skipped_kind for d in decisions)
    inherited = [d for d in decisions if d.role is Role.CANDIDATE and d.basis is Basis.INHERITED]
    assert bool(inherited) == e.inherited
    assert all(not any(b.commit == d.commit for b in store.boots(cid)) for d in inherited)
    assert store.campaign(cid).state == "done"
    assert SetBisectResult.from_dict(store.campaign(cid).result) == result
    candidates = [d.commit for d in decisions if d.role is Role.CANDIDATE]
    assert len(candidates) == len(set(candidates)), "every candidate judged once"
    asked, replayed = replay(case.units, decisions)
    assert replayed is not None and replayed.units == result.units and result.candidates == len(asked)
    if not case.hosts:
        assert [k for k, _a in asked] == candidates and result.ahead == 0
    else:  # the search asked some of what was measured ahead; the rest is kept, counted and noted
        assert {k for k, _a in asked} <= set(candidates) and len(candidates) - len(asked) == result.ahead
        assert not result.ahead or any(n.startswith(f"{result.ahead} candidate(s) measured ahead") for n in result.notes)
        assert {b.host for b in store.boots(cid)} == set(case.hosts), "every slot measured"
        rows = collect(store, cid, case.units, "iops", []).rows
        ahead = [r for r in rows if r.what == "measured ahead, not needed by the search" and r.verdict]
        assert len(ahead) == result.ahead, "the report lists every verdict measured ahead the search did not need"
        assert not result.ahead or f"{result.ahead} measured ahead, not needed" in result.line()


def test_the_case_table_itself() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert {c.expect.found for c in CASES} == {"one", "together", "refused"}
    for c in CASES:
        assert set(c.expect.units) <= {u.name for u in c.units}


def test_a_set_bisection_killed_mid_search_resumes_without_measuring_anything_twice(tmp_path: Path) -> None:
    case = CASES[2]  # two changes together: the longest search of the table
    with pytest.raises(KeyboardInterrupt):
        run_case(case, tmp_path, crash_after=40)
    store = Store(f"sqlite:///{tmp_path / 'sets.db'}")
    before = store.decisions(1)
    decided = {d.commit for d in before if d.role is Role.CANDIDATE}
    boots_before = Counter(b.commit for b in store.boots(1))
    assert decided and store.campaign(1).state == "running"
    result, store, cid, measurer = run_case(case, tmp_path, store=store, cid=1)
    assert (result.found, result.units) == ("together", ("c", "f"))
    after = [d for d in store.decisions(cid) if d.role is Role.CANDIDATE]
    assert len([d.commit for d in after]) == len({d.commit for d in after}), "no candidate judged again"
    again = Counter(b.commit for b in store.boots(cid)) - boots_before
    assert not (set(again) & decided), f"a decided candidate booted again: {set(again) & decided}"
    assert all(d in store.decisions(cid) for d in before)


def _controller(db: str, hosts: tuple[str, ...]) -> None:
    """A controller process: the longest case of the table (on one slot per host of `hosts`), each
    boot a little slow, to be killed."""
    import time

    case = dataclasses.replace(CASES[2], hosts=hosts)

    def slow(applied: frozenset[str]) -> float:
        time.sleep(0.02)
        return case.value(applied)

    store = Store(db)
    guests = measurers(case, value_of=by_changes(slow))
    rules = Rules("iops", "higher", Threshold("relative", -0.1), runs_per_boot=2, boots=2, max_boots=case.max_boots)
    SetBisection(case.units, FakeMaker(), guests[0], store, rules, slots=guests if hosts else ()).run(1)


@pytest.mark.parametrize("hosts", [(), ("a", "b")], ids=["one slot", "two slots"])
def test_a_set_bisection_sigkilled_mid_search_loses_no_run_and_judges_no_candidate_twice(
        tmp_path: Path, hosts: tuple[str, ...]) -> None:
    import multiprocessing
    import os
    import signal
    import time

    db = f"sqlite:///{tmp_path / 'sets.db'}"
    store = Store(db)
    store.new_campaign("t", {}, "settings")
    child = multiprocessing.get_context("fork").Process(target=_controller, args=(db, hosts))
    child.start()
    deadline = time.monotonic() + 60
    while sum(d.role is Role.CANDIDATE for d in store.decisions(1)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    decided = {d.commit for d in store.decisions(1) if d.role is Role.CANDIDATE}
    runs_before = {r.id for r in store.runs(1)}
    boots_before = Counter(b.commit for b in store.boots(1))
    assert 3 <= len(decided) and store.campaign(1).state == "running"
    assert not any(d.role is Role.CONFIRM for d in store.decisions(1)), "the kill should fall in the search"
    result, store, cid, _m = run_case(dataclasses.replace(CASES[2], hosts=hosts), tmp_path, store=store, cid=1)
    assert (result.found, result.units) == ("together", ("c", "f"))
    assert runs_before <= {r.id for r in store.runs(cid)}, "a run stored before the kill is gone"
    judged = [d.commit for d in store.decisions(cid) if d.role is Role.CANDIDATE]
    assert len(judged) == len(set(judged)) == result.candidates + result.ahead
    again = Counter(b.commit for b in store.boots(cid)) - boots_before
    assert not (set(again) & decided)


# FakeMaker's kernels of the first split's two halves (Meeting: booted at once, on the first two slots)
FIRST_SPLIT = frozenset({"a,b,c,d", "e,f,g,h"})

HOST_FAILS = {
    "one slot: its guests move to a spare host": ((), "local", 30),
    "two slots: host b fails under the candidate it measures ahead, which goes to a": (("a", "b"), "b", 9),
    "two slots: the home host fails under the candidate asked, which goes to b, where it is confirmed":
        (("a", "b"), "a", 13),  # its endpoint check takes 3 + 3 boots of 2 runs
}


@pytest.mark.parametrize("hosts, failing, runs", HOST_FAILS.values(), ids=HOST_FAILS.keys())
def test_a_host_failing_mid_search_moves_the_set_bisection_to_another_host(
        tmp_path: Path, hosts: tuple[str, ...], failing: str, runs: int) -> None:
    """The failing host's boot in flight is stored as lost and is its last; the move is a
    decision; the campaign names the same change on the host(s) left. With slots, the move names
    the candidate, which is judged after it on another slot; the home host's failure makes the
    next host home, which confirms."""
    case = dataclasses.replace(CASES[0], hosts=hosts)
    spare = {"spare_hosts": ["lab2"]} if not hosts else {}
    halves = Meeting(by_changes(case.value), FIRST_SPLIT) if hosts else None  # on a and b at once
    guests = measurers(case, value_of=halves, **{failing: {"host_fails_after": {failing: runs}, **spare}})
    result, store, cid, _g = run_case(case, tmp_path, guests=guests)
    left = "lab2" if not hosts else next(h for h in hosts if h != failing)
    assert (result.found, result.units, result.host) == ("one", ("f",), left)
    decisions = store.decisions(cid)
    moved = [i for i, d in enumerate(decisions) if d.role is Role.HOST]
    assert len(moved) == 1 and decisions[moved[0]].reason.startswith(f"host {failing} failed: ssh: connection lost")
    there = [b for b in store.boots(cid) if b.host == failing]
    assert [b.status for b in there].count("lost") == 1 and there[-1].status == "lost", "the last boot is not lost"
    if hosts:
        candidate = decisions[moved[0]].commit
        assert candidate == there[-1].commit and candidate not in ("good", "bad"), "the host failed mid-round"
        assert any(d.role is Role.CANDIDATE and d.commit == candidate for d in decisions[moved[0]:])
        assert {b.host for b in store.boots(cid) if b.commit == candidate and b.status == "ok"} == {left}
        assert all(b.host == left for b in store.boots(cid) if b.id > there[-1].id), "a boot on the failed host later"
        assert any(d.role is Role.CONFIRM and d.basis is not Basis.MEASURING for d in decisions)


def rounds(store: Store, cid: int, units: tuple[Unit, ...]) -> int:
    """The search's rounds, from the store: each candidate the search asked whose first boot came
    after the previous one it asked had its verdict (it waited for it from scratch) starts one;
    one measured ahead (its first boot before that) joins the round before."""
    asked, _done = replay(units, store.decisions(cid))
    ids: dict[str, list[int]] = {}
    for b in store.boots(cid):
        ids.setdefault(b.commit, []).append(b.id)
    keys = [k for k, _a in asked if k in ids]  # a candidate inherited without a boot takes no time
    return 1 + sum(min(ids[k]) > max(ids[prev]) for prev, k in zip(keys, keys[1:]))


def test_two_slots_boot_both_halves_of_a_split_at_once_and_name_the_one_slot_answer_in_fewer_rounds(
        tmp_path: Path) -> None:
    """The first split's halves (good + a..d, good + e..h) meet: the first boot of each waits for
    the other's (tests/fakes.py Meeting), so the campaign ends only if they were booted at the same
    time, on the two hosts; the store shows their boots interleaved. The answer is the one slot's,
    and the search takes fewer rounds."""
    case = CASES[0]
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    alone, store1, cid1, _g = run_case(case, tmp_path / "one")
    two = dataclasses.replace(case, hosts=("a", "b"))
    meeting = Meeting(by_changes(case.value), FIRST_SPLIT)
    result, store, cid, _g = run_case(two, tmp_path / "two", guests=measurers(two, value_of=meeting))
    assert meeting.met
    assert (result.found, result.units) == (alone.found, alone.units) == ("one", ("f",))
    first, second = key_of(set("abcd"), NAMES), key_of(set("efgh"), NAMES)
    boots = store.boots(cid)
    a = [b.id for b in boots if b.commit == first]
    b = [b.id for b in boots if b.commit == second]
    assert {x.host for x in boots if x.commit == first} == {"a"} and {x.host for x in boots if x.commit == second} == {"b"}
    assert min(a) < max(b) and min(b) < max(a), "their boots interleave: each started before the other's last"
    assert rounds(store, cid, case.units) < rounds(store1, cid1, case.units) == alone.candidates


def test_two_slots_killed_mid_round_resume_it_with_no_candidate_judged_or_booted_twice(tmp_path: Path) -> None:
    """The controller dies as a slot boots a candidate after two were judged (the other slot
    stops at its next boot). Resumed, the candidates under way go on from their stored boots
    on their own hosts, no candidate is judged twice, no judged one is booted again, every run
    stored before is kept, and the answer is the one slot's."""
    case = next(c for c in SLOT_CASES if c.expect.units == ("c", "f"))
    store = Store(f"sqlite:///{tmp_path / 'sets.db'}")
    cid = store.new_campaign("t", {}, "settings")

    def killed(commit: str) -> float:
        if commit not in ("good", ",".join(NAMES)) and sum(
                d.role is Role.CANDIDATE for d in store.decisions(cid)) >= 2:
            raise KeyboardInterrupt("controller killed")
        return by_changes(case.value)(commit)

    with pytest.raises(KeyboardInterrupt):
        run_case(case, tmp_path, store=store, cid=cid, guests=measurers(case, value_of=Meeting(killed, FIRST_SPLIT)))
    before = store.decisions(cid)
    decided = {d.commit for d in before if d.role is Role.CANDIDATE}
    boots_before = store.boots(cid)
    runs_before = store.runs(cid)
    under_way = {b.commit for b in boots_before} - decided - {"good", "bad"}
    assert len(decided) >= 2 and under_way and store.campaign(cid).state == "running", "the kill falls mid-round"
    booted = {r.boot_id for r in runs_before}
    hosts_of = {k: {b.host for b in boots_before if b.commit == k and b.id in booted} for k in under_way}
    result, store, cid, _g = run_case(case, tmp_path, store=store, cid=cid)
    assert (result.found, result.units) == ("together", ("c", "f"))
    after = store.decisions(cid)
    judged = [d.commit for d in after if d.role is Role.CANDIDATE]
    assert len(judged) == len(set(judged)), "a candidate judged twice"
    assert after[:len(before)] == before and {r.id for r in runs_before} <= {r.id for r in store.runs(cid)}
    again = store.boots(cid)[len(boots_before):]
    assert not {b.commit for b in again} & decided, "a candidate judged before the kill booted again"
    for key in under_way & {b.commit for b in again}:
        if hosts_of[key]:  # booted with runs before the kill: goes on where those boots count
            assert {b.host for b in again if b.commit == key} <= hosts_of[key], f"{key} went on on another host"
    left = {k for k in under_way if hosts_of[k]} - set(judged)  # measured ahead, no longer needed after the resume
    rows = {r.key: r.what for r in collect(store, cid, case.units, "iops", []).rows}
    assert all(rows[k] == "measured ahead, stopped before a verdict" for k in left)
