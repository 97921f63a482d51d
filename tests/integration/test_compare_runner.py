"""`vmbisect compare`'s runner over fake guests and a real SQLite store: the interleaved order,
guest settings switched and restored inside one guest, every run stored as it completes, and a
killed controller resumed without a lost or duplicated run. No guest boots here."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import _parser
from orchestrator.commands.compare import spec_from_args
from orchestrator.compare.collect import comparison, stored_runs
from orchestrator.compare.plan import ComparePlan, plan_from_spec
from orchestrator.compare.runplan import run_plan, stored_counts
from orchestrator.errors import BuildFailed, UserError, WorkloadFailed
from orchestrator.ports import Event
from orchestrator.store import Store
from tests.fakes import FakeKernels, FakeMeasurer


def _plan(*args: str) -> ComparePlan:
    return plan_from_spec(spec_from_args(_parser().parse_args(["compare", "--workload", "fio", "--disks", "2",
                                                               *args])))


def _store(tmp_path: Path) -> tuple[Store, int]:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    return store, store.new_campaign("compare-fio", {}, "compare")


def test_settings_variants_share_one_guest_per_boot_and_alternate_abba(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k/bzImage", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                 "--reps", "4")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    assert [k.image for k in measurer.kernels] == [Path("/k/bzImage")] * 2
    assert [s for s, _p, _n in measurer.calls] == ["none", "bfq", "bfq", "none"] * 2
    assert [(r.raw["variant"], r.raw["rep"]) for r in store.runs(cid)][:4] == [
        ("none", 0), ("bfq", 0), ("bfq", 1), ("none", 1)]


def test_both_disks_get_the_scheduler_and_a_halving_is_reported_significant(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "5")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    assert measurer.guests[0].sysfs["/sys/block/sdb/queue/scheduler"] in ("none", "bfq")
    c = comparison(plan, stored_runs(store, cid))
    iops = next(r for r in c.rows if r.metric == "iops")
    assert iops.cells[1].significant and iops.cells[1].diff_pct == pytest.approx(-50, abs=3)
    assert iops.cells[1].tested.paired and iops.cells[1].boots == 2  # both ran in the same two guests
    assert c.variants[1].description == "kernel /k, sched=bfq"


def test_a_scheduler_s_tunable_is_set_under_it_restored_while_it_stays_and_let_go_when_it_leaves(
        tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant",
                 "tuned=sched:bfq,sysfs:block/{disk}/queue/iosched/slice_idle=0", "--variant", "bfq=sched:bfq",
                 "--variant", "none=sched:none", "--reps", "1")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    writes = [(c[5].rsplit("/", 1)[1], c[4]) for c in measurer.guests[0].commands
              if c[:2] == ["sh", "-c"] and "/sda/" in c[5]]
    assert writes == [("scheduler", "bfq"), ("slice_idle", "0"),  # tuned: the tunable exists once bfq is in
                      ("scheduler", "bfq"), ("slice_idle", "8"),  # bfq: bfq's default back
                      ("scheduler", "none")]                      # none: the tunable went with bfq
    assert [r.raw["variant"] for r in store.runs(cid)] == ["tuned", "bfq", "none"]


def test_a_setting_one_variant_lacks_goes_back_to_its_boot_value(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "base=nice:0", "--variant", "knob=sysfs:kernel/knob=1",
                 "--reps", "2", "--boots", "1")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    writes = [(c[5], c[4]) for c in measurer.guests[0].commands if c[:2] == ["sh", "-c"]]
    assert writes == [("/sys/kernel/knob", "0"), ("/sys/kernel/knob", "1"), ("/sys/kernel/knob", "0")]


def test_nice_runs_each_variant_s_workload_under_its_nice(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:10", "--reps", "1")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    assert [n for _s, _p, n in measurer.calls] == [0, 10]


def test_different_kernels_boot_in_turn_one_run_per_boot(tmp_path: Path) -> None:
    plan = _plan("--variant", "old=kernel:/k/old", "--variant", "new=kernel:/k/new", "--reps", "3",
                 "--sweep", "numjobs=1,2")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    run_plan(plan, store, cid, FakeKernels(), measurer)
    assert [k.image.name for k in measurer.kernels] == ["old", "new", "new", "old", "old", "new"]
    assert stored_counts(store, cid, "local") == {("old", 0): 3, ("old", 1): 3, ("new", 0): 3, ("new", 1): 3}


def test_a_killed_controller_resumes_without_losing_or_repeating_runs(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "3",
                 "--sweep", "numjobs=1,4")
    store, cid = _store(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(crash_after=5))
    kept = [(r.raw["variant"], r.raw["point"], r.raw["rep"]) for r in store.runs(cid)]
    assert len(kept) == 5
    work = FakeMeasurer(seed=1)
    run_plan(plan, store, cid, FakeKernels(), work)
    assert len(work.calls) == 12 - 5
    after = [(r.raw["variant"], r.raw["point"], r.raw["rep"]) for r in store.runs(cid)]
    assert after[:5] == kept and len(set(after)) == len(after) == 12


def test_a_run_that_stalls_once_is_stored_and_its_guests_slots_left_run_in_a_new_guest(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "2",
                 "--boots", "1")
    store, cid = _store(tmp_path)
    events: list[Event] = []
    run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(stalls={"/k": 1}), on_event=events.append)
    first, second = store.boots(cid)
    assert (first.status, second.status) == ("stalled", "ok") and "412/415 D io_schedule fio" in first.error
    runs = list(store.runs(cid))  # the run before the stall kept, each slot run once
    assert [(r.raw["variant"], r.raw["rep"], r.boot_id) for r in runs] == [
        ("none", 0, first.id), ("bfq", 0, second.id), ("bfq", 1, second.id), ("none", 1, second.id)]
    assert [e.message for e in events if e.phase == "stalled"] == [
        "a run stalled in the guest (fio timed out): booting it again"]


def test_a_run_that_stalls_in_the_second_guest_too_stops_the_comparison_as_a_failed_workload(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "2",
                 "--boots", "1")
    store, cid = _store(tmp_path)
    with pytest.raises(WorkloadFailed, match="^fio timed out") as failed:
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(stalls={"/k": 2}))
    assert failed.value.timed_out and [b.status for b in store.boots(cid)] == ["stalled", "stalled"]


def test_a_scheduler_the_guest_kernel_lacks_is_an_error_listing_its_choices(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "dl=sysfs:block/{disk}/queue/"
                 "scheduler=cfq", "--reps", "1")
    store, cid = _store(tmp_path)
    with pytest.raises(UserError, match=r"variant dl: cannot set /sys/block/sda/queue/scheduler to 'cfq'; "
                       r"valid choices: mq-deadline, kyber, bfq, none"):
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer())


def test_a_sysfs_path_missing_in_the_guest_names_the_variant(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=sysfs:kernel/nope=1", "--reps", "1")
    store, cid = _store(tmp_path)
    with pytest.raises(UserError, match="variant a: cannot read /sys/kernel/nope"):
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer())


@pytest.mark.parametrize("args, message", [
    (["--variant", "a=commit:v1", "--variant", "b=commit:v2"], "repo: a variant names a commit"),
    (["--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:1", "--metric", "iopz"],
     "metric: invalid value 'iopz'; valid choices:"),
    (["--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:1", "--sweep", "jobs=1,2"],
     "sweep: fio parameter: invalid value 'jobs'"),
    (["--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:1", "--sweep", "numjobs=1,x"],
     "numjobs"),
    (["--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:1", "--reps", "2", "--boots", "3"],
     "boots: at most --reps (2)"),
])
def test_bad_compare_options_fail_before_anything_runs(args: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _plan(*args)


def test_two_sweeps_multiply_into_jobs_by_depth_points() -> None:
    plan = _plan("--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:1", "--sweep", "numjobs=1,4",
                 "--sweep", "iodepth=1,8,32")
    assert [p.point.label for p in plan.points][:4] == ["numjobs=1 iodepth=1", "numjobs=1 iodepth=8",
                                                       "numjobs=1 iodepth=32", "numjobs=4 iodepth=1"]
    assert plan.points[5].params["numjobs"] == 4 and plan.points[5].params["iodepth"] == 32
    assert plan.swept == "numjobs x iodepth" and plan.points[0].point.x is None


def test_a_preset_sweep_gives_numeric_points_for_a_curve() -> None:
    plan = _plan("--kernel", "/k", "--workload", "fio-randread-4k", "--variant", "a=nice:0", "--variant", "b=nice:1")
    assert [p.point.x for p in plan.points] == [1, 4, 8, 16, 32, 64] and plan.swept == "numjobs"


def test_every_kernel_is_built_before_the_first_run_so_a_broken_one_measures_nothing(tmp_path: Path) -> None:
    class BrokenSecond(FakeKernels):
        def kernel(self, variant):  # type: ignore[no-untyped-def]
            if variant.name == "new":
                raise BuildFailed("drivers/scsi/sd.c:12:3: error: expected ';'")
            return super().kernel(variant)

    plan = _plan("--variant", "old=kernel:/k/old", "--variant", "new=kernel:/k/new", "--reps", "2")
    store, cid = _store(tmp_path)
    measurer = FakeMeasurer()
    with pytest.raises(BuildFailed):
        run_plan(plan, store, cid, BrokenSecond(), measurer)
    assert measurer.booted == [] and list(store.runs(cid)) == []


def test_a_stored_comparison_comes_back_as_its_spec_and_the_same_plan(tmp_path: Path) -> None:
    from orchestrator.compare.spec import CompareSpec
    from orchestrator.kinds.table import record, stored

    a = _parser().parse_args(["compare", "--workload", "fio", "--disks", "2", "--disk-dir", str(tmp_path),
                              "--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                              "--sweep", "numjobs=1,4", "--report", str(tmp_path / "r.md")])
    spec = spec_from_args(a)
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    cid = record(store, "compare-fio", spec)
    row = store.campaign(cid)
    again = stored(row)
    assert row.kind == "compare" and isinstance(again, CompareSpec)
    assert again == spec and plan_from_spec(again) == plan_from_spec(spec)
    assert again.reports == (tmp_path / "r.md",) and again.guest.disk_dir == tmp_path


def test_a_comparison_stored_as_argparse_options_before_the_kind_column_gives_the_same_plan(tmp_path: Path) -> None:
    from orchestrator.compare.spec import CompareSpec

    a = _parser().parse_args(["compare", "--workload", "fio", "--disks", "2", "--kernel", "/k", "--memory", "512",
                              "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "3"])
    options = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()}  # as it was stored
    legacy = CompareSpec.from_dict({"kind": "compare", "args": options})
    assert legacy == spec_from_args(a) and legacy.guest.memory_mib == 512
    assert plan_from_spec(legacy) == plan_from_spec(spec_from_args(a))


def test_every_run_keeps_the_host_that_measured_it_and_the_report_names_a_lab_host(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "2")
    store, cid = _store(tmp_path)
    run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(host="big1"))
    assert {r.raw["result"]["lab_host"] for r in store.runs(cid)} == {"big1"}
    assert "measured on lab host big1" in comparison(plan, [r.raw for r in store.runs(cid)]).notes
    local, lcid = _store(tmp_path / "local")
    run_plan(plan, local, lcid, FakeKernels(), FakeMeasurer())
    assert not any("lab host" in n for n in comparison(plan, [r.raw for r in local.runs(lcid)]).notes)


def test_a_resumed_comparison_goes_on_on_the_host_of_its_last_run(tmp_path: Path, monkeypatch) -> None:
    from types import SimpleNamespace

    from orchestrator import wiring
    from orchestrator.kinds.compare_kind import execute

    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "3")
    store, cid = _store(tmp_path)
    asked: list[str | None] = []

    def comparison(_plan, _pool, host=None):  # type: ignore[no-untyped-def]
        asked.append(host)
        return FakeKernels(), FakeMeasurer(host=host or "big1", crash_after=None if asked[1:] else 2)

    pool = SimpleNamespace(close=lambda: None)
    monkeypatch.setattr(wiring, "comparison", comparison)
    with pytest.raises(KeyboardInterrupt):
        execute(plan, store, cid, pool, lambda _e: None)  # type: ignore[arg-type]
    execute(plan, store, cid, pool, lambda _e: None)  # type: ignore[arg-type]
    assert asked == [None, "big1"] and len(list(store.runs(cid))) == 6


def test_a_host_lost_mid_comparison_is_replaced_and_its_runs_are_kept_but_never_compared(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "4",
                 "--sweep", "numjobs=1,4")
    store, cid = _store(tmp_path)
    events: list[Event] = []
    measurer = FakeMeasurer(host="big1", host_fails_after={"big1": 5}, spare_hosts=["big2"])
    run_plan(plan, store, cid, FakeKernels(), measurer, events.append)
    hosts = [r.raw["result"]["lab_host"] for r in store.runs(cid)]
    assert hosts == ["big1"] * 5 + ["big2"] * 16, "big2 measured the whole schedule; big1's 5 runs are kept"
    assert stored_counts(store, cid, "big2") == {("none", 0): 4, ("none", 1): 4, ("bfq", 0): 4, ("bfq", 1): 4}
    c = comparison(plan, [r.raw for r in store.runs(cid)])
    assert sum(len(v) for per_point in c.samples.values() for m in per_point.values() for v in m.values()) == 16
    assert "measured on lab host big2" in c.notes
    assert "5 run(s) measured on host big1 before it failed are kept but not compared" in c.notes
    assert [e.commit for e in events if e.phase == "requeue"] == ["big1"]


def test_a_lost_host_that_was_asked_for_stops_the_comparison_and_with_no_host_left_it_stops_too(
        tmp_path: Path) -> None:
    from orchestrator.errors import HostFailed, InfraError

    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "2")
    store, cid = _store(tmp_path)
    with pytest.raises(HostFailed, match="^host big1: ssh: connection lost$"):
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(host="big1", host_fails_after={"big1": 1},
                                                               spare_hosts=["big2"], asked=True))
    with pytest.raises(InfraError, match="^no host is up$"):
        run_plan(plan, store, cid, FakeKernels(), FakeMeasurer(host="big1", host_fails_after={"big1": 1}))
