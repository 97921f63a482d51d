"""Variant specs, the run schedule and guest-setting plans: pure parsing and ordering."""

from __future__ import annotations

import pytest

from orchestrator.compare import sysfs
from orchestrator.compare.schedule import BootPlan, RunSlot, default_boots, remaining, schedule
from orchestrator.compare.variant import Variant, boot_groups, parse_variant, parse_variants
from orchestrator.errors import UserError


def test_variant_spec_reads_every_item_kind() -> None:
    v = parse_variant(r"x=commit:v6.1~3,append:console=ttyS0\,115200 quiet,sched:bfq,"
                      r"sysfs:block/{disk}/queue/nr_requests=32,sysfs:/sys/kernel/mm/ksm/run=1,nice:-5")
    assert v == Variant("x", commit="v6.1~3", append="console=ttyS0,115200 quiet", sched="bfq",
                        sysfs=(("block/{disk}/queue/nr_requests", "32"), ("kernel/mm/ksm/run", "1")), nice=-5)


def test_variant_without_kernel_takes_the_command_defaults() -> None:
    v = parse_variant("none=sched:none", default_kernel="/k/bzImage", default_modules="6.1.0-9", default_append="a=1")
    assert (v.kernel, v.modules, v.append, v.sched) == ("/k/bzImage", "6.1.0-9", "a=1", "none")


@pytest.mark.parametrize("text, message", [
    ("noequals", "expected NAME=ITEM"),
    ("bad name=sched:bfq", "expected NAME=ITEM"),
    ("a=sched", "expected key:value items"),
    ("a=colour:red", "key: invalid value 'colour'; valid choices: commit, kernel, modules"),
    ("a=sched:cfq", "sched: invalid value 'cfq'; valid choices: none, mq-deadline, bfq, kyber"),
    ("a=nice:99", "nice must be an integer from -20 to 19, got 99"),
    ("a=nice:x", "nice must be an integer from -20 to 19, got 'x'"),
    ("a=commit:v1,kernel:/k", "give commit or kernel, not both"),
    ("a=sched:bfq,sched:none", "sched given twice"),
    ("a=sysfs:block/../../etc/passwd=1", "must be a plain path under /sys"),
    ("a=sysfs:block/sda/queue/x", "sysfs expects PATH=VALUE"),
    ("a=sysfs:block/{cpu}/x=1", "the only placeholder is {disk}"),
    ("a=commit:$(reboot)", "is not a revision"),
    ("a=sched:bfq", "no kernel; add commit:REV or kernel:PATH"),
])
def test_bad_variant_specs_are_one_line_errors_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        parse_variant(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_comparison_needs_two_uniquely_named_variants() -> None:
    with pytest.raises(UserError, match="at least two"):
        parse_variants(["a=kernel:/k"])
    with pytest.raises(UserError, match="name 'a' used twice"):
        parse_variants(["a=kernel:/k", "a=kernel:/j"])


def test_variants_of_one_kernel_and_command_line_share_a_guest() -> None:
    vs = parse_variants(["a=sched:none", "b=sched:bfq", "c=append:quiet", "d=kernel:/j"], default_kernel="/k")
    assert [[v.name for v in g] for g in boot_groups(vs)] == [["a", "b"], ["c"], ["d"]]


def test_schedule_alternates_variants_abba_inside_a_shared_guest() -> None:
    plans = schedule([["a", "b"]], points=1, reps=4, boots=2)
    assert [[s.variant for s in p.slots] for p in plans] == [["a", "b", "b", "a"], ["a", "b", "b", "a"]]
    assert [s.rep for s in plans[1].slots] == [2, 2, 3, 3]


def test_schedule_alternates_kernels_abba_boot_by_boot() -> None:
    plans = schedule([["a"], ["b"]], points=2, reps=3, boots=3)
    assert [p.group for p in plans] == [0, 1, 1, 0, 0, 1]
    assert plans[0].slots == (RunSlot("a", 0, 0), RunSlot("a", 1, 0))


def test_schedule_gives_every_variant_reps_runs_at_every_point() -> None:
    plans = schedule([["a", "b"], ["c"]], points=3, reps=5, boots=2)
    counts: dict[tuple[str, int], list[int]] = {}
    for p in plans:
        for s in p.slots:
            counts.setdefault((s.variant, s.point), []).append(s.rep)
    assert all(sorted(reps) == [0, 1, 2, 3, 4] for reps in counts.values()) and len(counts) == 9


def test_default_boots_is_one_run_per_boot_only_when_kernels_differ() -> None:
    assert default_boots(groups=2, reps=5) == 5
    assert default_boots(groups=1, reps=5) == 2
    assert default_boots(groups=1, reps=1) == 1


def test_resumed_schedule_skips_stored_runs_and_empty_boots() -> None:
    plans = schedule([["a"], ["b"]], points=1, reps=2, boots=2)
    left = remaining(plans, {("a", 0): 2, ("b", 0): 1})
    assert left == [BootPlan(1, (RunSlot("b", 0, 1),))]


def test_settings_write_values_as_arguments_never_as_shell_text() -> None:
    argv = sysfs.write_argv("/sys/block/sda/queue/scheduler", "bfq; reboot")
    assert argv[:3] == ["sh", "-c", 'echo "$1" > "$2"'] and argv[4:] == ["bfq; reboot", "/sys/block/sda/queue/scheduler"]


def test_settings_expand_disks_and_read_the_selected_choice() -> None:
    v = Variant("b", kernel="/k", sched="bfq", sysfs=(("block/{disk}/queue/nr_requests", "8"),))
    assert sysfs.wanted(v, ["sda", "sdb"]) == {
        "/sys/block/sda/queue/scheduler": "bfq", "/sys/block/sdb/queue/scheduler": "bfq",
        "/sys/block/sda/queue/nr_requests": "8", "/sys/block/sdb/queue/nr_requests": "8"}
    assert sysfs.current("mq-deadline kyber [bfq] none\n") == "bfq"
    assert sysfs.current("128\n") == "128"
    assert sysfs.choices("mq-deadline [none]\n") == ["mq-deadline", "none"]


def test_a_variant_without_a_setting_gets_the_boot_value_back() -> None:
    original = {"/sys/block/sda/queue/scheduler": "none", "/sys/kernel/x": "0"}
    assert sysfs.plan_writes(original, {"/sys/kernel/x": "1"}) == {
        "/sys/block/sda/queue/scheduler": "none", "/sys/kernel/x": "1"}


def test_a_scheduler_goes_in_before_its_tunable_and_an_unread_tunable_is_left_alone() -> None:
    sched, tunable = "/sys/block/sda/queue/scheduler", "/sys/block/sda/queue/iosched/slice_idle"
    original: dict[str, str | None] = {tunable: None, sched: "none"}
    assert list(sysfs.plan_writes(original, {tunable: "0", sched: "bfq"}).items()) == [(sched, "bfq"),
                                                                                       (tunable, "0")]
    assert sysfs.plan_writes(original, {}) == {sched: "none"}
    assert sysfs.plan_writes({**original, tunable: "8"}, {sched: "bfq"}) == {sched: "bfq", tunable: "8"}
    assert sysfs.is_tunable(tunable) and not sysfs.is_tunable(sched)
