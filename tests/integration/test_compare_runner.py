"""`vmbisect compare`'s runner over fake guests and a real SQLite store: the interleaved order,
guest settings switched and restored inside one guest, every run stored as it completes, and a
killed controller resumed without a lost or duplicated run. No guest boots here."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import _parser
from orchestrator.compare.collect import comparison, stored_runs
from orchestrator.compare.plan import ComparePlan, plan_from_args
from orchestrator.compare.runner import run_plan, stored_counts
from orchestrator.errors import BuildFailed, UserError
from orchestrator.store import Store
from tests.compare_fakes import FakeKernels, FakeLauncher, FakeWorkload


def _plan(*args: str) -> ComparePlan:
    return plan_from_args(_parser().parse_args(["compare", "--workload", "fio", "--disks", "2", *args]))


def _store(tmp_path: Path) -> tuple[Store, int]:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    return store, store.new_campaign("compare-fio", {"kind": "compare"})


def test_settings_variants_share_one_guest_per_boot_and_alternate_abba(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k/bzImage", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                 "--reps", "4")
    store, cid = _store(tmp_path)
    launcher, work = FakeLauncher(), FakeWorkload()
    run_plan(plan, store, cid, FakeKernels(), launcher, "tcg", run_fn=work)
    assert launcher.booted == [Path("/k/bzImage")] * 2
    assert [s for s, _p in work.calls] == ["none", "bfq", "bfq", "none"] * 2
    assert [(r.raw["variant"], r.raw["rep"]) for r in store.runs(cid)][:4] == [
        ("none", 0), ("bfq", 0), ("bfq", 1), ("none", 1)]


def test_both_disks_get_the_scheduler_and_a_halving_is_reported_significant(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "5")
    store, cid = _store(tmp_path)
    launcher = FakeLauncher()
    run_plan(plan, store, cid, FakeKernels(), launcher, "tcg", run_fn=FakeWorkload())
    assert launcher.guests[0].sysfs["/sys/block/sdb/queue/scheduler"] in ("none", "bfq")
    c = comparison(plan, stored_runs(store, cid))
    iops = next(r for r in c.rows if r.metric == "iops")
    assert iops.cells[1].significant and iops.cells[1].diff_pct == pytest.approx(-50, abs=3)
    assert iops.cells[1].tested.paired and iops.cells[1].boots == 2  # both ran in the same two guests
    assert c.variants[1].description == "kernel /k, sched=bfq"


def test_a_setting_one_variant_lacks_goes_back_to_its_boot_value(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "base=nice:0", "--variant", "knob=sysfs:kernel/knob=1",
                 "--reps", "2", "--boots", "1")
    store, cid = _store(tmp_path)
    launcher = FakeLauncher()
    run_plan(plan, store, cid, FakeKernels(), launcher, "tcg", run_fn=FakeWorkload())
    writes = [(c[5], c[4]) for c in launcher.guests[0].commands if c[:2] == ["sh", "-c"]]
    assert writes == [("/sys/kernel/knob", "0"), ("/sys/kernel/knob", "1"), ("/sys/kernel/knob", "0")]


def test_nice_runs_the_workload_under_nice(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=nice:10", "--reps", "1")
    store, cid = _store(tmp_path)
    launcher = FakeLauncher()
    run_plan(plan, store, cid, FakeKernels(), launcher, "tcg", run_fn=FakeWorkload())
    fio = [c for c in launcher.guests[0].commands if "fio" in c]
    assert fio == [["nice", "-n", "0", "fio", "job"], ["nice", "-n", "10", "fio", "job"]]


def test_different_kernels_boot_in_turn_one_run_per_boot(tmp_path: Path) -> None:
    plan = _plan("--variant", "old=kernel:/k/old", "--variant", "new=kernel:/k/new", "--reps", "3",
                 "--sweep", "numjobs=1,2")
    store, cid = _store(tmp_path)
    launcher = FakeLauncher()
    run_plan(plan, store, cid, FakeKernels(), launcher, "tcg", run_fn=FakeWorkload())
    assert [p.name for p in launcher.booted] == ["old", "new", "new", "old", "old", "new"]
    assert stored_counts(store, cid) == {("old", 0): 3, ("old", 1): 3, ("new", 0): 3, ("new", 1): 3}


def test_a_killed_controller_resumes_without_losing_or_repeating_runs(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq", "--reps", "3",
                 "--sweep", "numjobs=1,4")
    store, cid = _store(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, store, cid, FakeKernels(), FakeLauncher(), "tcg", run_fn=FakeWorkload(crash_after=5))
    kept = [(r.raw["variant"], r.raw["point"], r.raw["rep"]) for r in store.runs(cid)]
    assert len(kept) == 5
    work = FakeWorkload(seed=1)
    run_plan(plan, store, cid, FakeKernels(), FakeLauncher(), "tcg", run_fn=work)
    assert len(work.calls) == 12 - 5
    after = [(r.raw["variant"], r.raw["point"], r.raw["rep"]) for r in store.runs(cid)]
    assert after[:5] == kept and len(set(after)) == len(after) == 12


def test_a_scheduler_the_guest_kernel_lacks_is_an_error_listing_its_choices(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "none=sched:none", "--variant", "dl=sysfs:block/{disk}/queue/"
                 "scheduler=cfq", "--reps", "1")
    store, cid = _store(tmp_path)
    with pytest.raises(UserError, match=r"variant dl: cannot set /sys/block/sda/queue/scheduler to 'cfq'; "
                       r"valid choices: mq-deadline, kyber, bfq, none"):
        run_plan(plan, store, cid, FakeKernels(), FakeLauncher(), "tcg", run_fn=FakeWorkload())


def test_a_sysfs_path_missing_in_the_guest_names_the_variant(tmp_path: Path) -> None:
    plan = _plan("--kernel", "/k", "--variant", "a=nice:0", "--variant", "b=sysfs:kernel/nope=1", "--reps", "1")
    store, cid = _store(tmp_path)
    with pytest.raises(UserError, match="variant a: cannot read /sys/kernel/nope"):
        run_plan(plan, store, cid, FakeKernels(), FakeLauncher(), "tcg", run_fn=FakeWorkload())


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
    launcher = FakeLauncher()
    with pytest.raises(BuildFailed):
        run_plan(plan, store, cid, BrokenSecond(), launcher, "tcg", run_fn=FakeWorkload())
    assert launcher.booted == [] and list(store.runs(cid)) == []


def test_stored_options_rebuild_the_same_plan_for_resume_and_report(tmp_path: Path) -> None:
    from orchestrator.commands.compare import KIND, stored_args
    from orchestrator.compare.plan import args_to_json

    a = _parser().parse_args(["compare", "--workload", "fio", "--disks", "2", "--disk-dir", str(tmp_path),
                              "--kernel", "/k", "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                              "--sweep", "numjobs=1,4", "--report", str(tmp_path / "r.md")])
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    cid = store.new_campaign("compare-fio", {"kind": KIND, "args": args_to_json(a)})
    again = stored_args(store, cid)
    assert again is not None and plan_from_args(again) == plan_from_args(a) and again.report == a.report
    assert stored_args(store, store.new_campaign("bisect", {"name": "x"})) is None
