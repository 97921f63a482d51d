"""A comparison's regressed row -> the campaign that bisects it (orchestrator/compare/tobisect.py):
the threshold sized from the measured change, a swept parameter pinned to the row's value, the
direction of lower-is-better metrics, the refusals, and the file parsed back by the campaign
parser unchanged. Pure: no store, no git, no guest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from orchestrator.campaign.file import parse_campaign
from orchestrator.campaign.workload import choose_workload
from orchestrator.cli import _parser
from orchestrator.commands.compare import spec_from_args
from orchestrator.compare.collect import comparison
from orchestrator.compare.plan import ComparePlan, plan_from_spec
from orchestrator.compare.tobisect import (
    bisect_commands,
    bisectable,
    campaign_for,
    campaign_text,
    threshold_for,
)
from orchestrator.errors import UserError
from orchestrator.metrictable.cells import Comparison
from orchestrator.stats import TwoSample

BASE = [1000.0, 1012.0, 991.0, 1004.0, 996.0]


def _plan(*args: str, workload: str = "fio", variants: tuple[str, ...] = ("v1=commit:v6.1", "v2=commit:v6.2"),
          ) -> ComparePlan:
    argv = ["compare", "--workload", workload, "--disks", "2", "--repo", "/src/linux"]
    for v in variants:
        argv += ["--variant", v]
    return plan_from_spec(spec_from_args(_parser().parse_args([*argv, *args])))


def _runs(plan: ComparePlan, factor: Mapping[tuple[str, str, str], float]) -> list[dict[str, Any]]:
    """Five boots of one run per variant and point; the second variant's metric times
    `factor[(metric, point, variant)]` (1 where not given)."""
    runs = []
    boot = 0
    for v in plan.variants:
        for p in plan.points:
            for value in BASE:
                boot += 1
                metrics = {m: {"value": value * factor.get((m, p.point.label, v.name), 1.0)}
                           for m in ("iops", "read_clat_mean", "guest_cpu_us_per_op")}
                runs.append({"variant": v.name, "point": p.point.label, "kernel": v.source(),
                             "result": {"metrics": metrics}, "boot_id": boot})
    return runs


def _compare(plan: ComparePlan, **moved: float) -> Comparison:
    """The unswept plan's runs, the second variant's metric `m` times `moved[m]`."""
    return comparison(plan, _runs(plan, {(m, "", "v2"): f for m, f in moved.items()}))


def test_the_threshold_is_half_the_interval_bound_nearest_zero_rounded_toward_zero() -> None:
    drop = TwoSample(change=-0.172, low=-0.184, high=-0.159, p=1e-6, n_a=5, n_b=5)
    assert threshold_for(drop, "higher") == pytest.approx(-0.079)  # half of -15.9%, toward zero
    rise = TwoSample(change=0.23, low=0.201, high=0.26, p=1e-6, n_a=5, n_b=5)
    assert threshold_for(rise, "lower") == pytest.approx(0.100)
    tiny = TwoSample(change=0.01, low=0.0008, high=0.02, p=0.04, n_a=5, n_b=5)
    assert threshold_for(tiny, "lower") == pytest.approx(0.001), "never 0: a threshold is non-zero"


def test_a_throughput_drop_gives_a_higher_is_better_campaign_between_the_two_commits() -> None:
    plan = _plan("--param", "iodepth=8")
    c = _compare(plan, iops=0.8)
    data = campaign_for(c, plan, 12, "iops")
    t = next(m for m in bisectable(c) if m.key == "iops").cell.tested
    assert t is not None and t.change == pytest.approx(-0.2, abs=0.01)
    assert data["good"] == "v6.1" and data["bad"] == "v6.2" and data["repository"] == "/src/linux"
    assert data["metric"]["name"] == "iops" and data["metric"]["direction"] == "higher"
    threshold = float(data["metric"]["threshold"].rstrip("%")) / 100
    assert t.high < threshold < 0 and threshold == pytest.approx(threshold_for(t, "higher"))
    assert data["workload"] == {"name": "fio", "params": {"iodepth": 8}}
    assert data["guest"]["disks"]["count"] == 2 and data["name"] == "compare12-iops"


def test_a_rise_of_a_lower_is_better_metric_is_bisected_with_a_positive_threshold() -> None:
    plan = _plan()
    c = _compare(plan, read_clat_mean=1.3, guest_cpu_us_per_op=1.25)
    for metric in ("read_clat_mean", "guest_cpu_us_per_op"):
        data = campaign_for(c, plan, 3, metric)
        assert data["metric"]["direction"] == "lower" and data["metric"]["threshold"].startswith("+")
        parse_campaign(data)  # the sign check agrees: a rise is the regression
    assert data["metric"]["watch"] == ["iops"], "the comparison's primary metric is watched"


def test_an_improvement_is_refused_with_the_rows_that_regressed() -> None:
    plan = _plan()
    c = _compare(plan, iops=1.3, read_clat_mean=1.3)
    with pytest.raises(UserError, match=r"^row: iops got better, and a bisection looks for a regression; "
                                         r"rows that regressed: read_clat_mean$"):
        campaign_for(c, plan, 3, "iops")


def test_a_row_that_did_not_move_is_refused_naming_the_rows_that_did() -> None:
    plan = _plan()
    c = _compare(plan, iops=0.8)
    with pytest.raises(UserError, match=r"^row: 'write_iops' did not move significantly; rows that regressed: "
                                         r"iops$"):
        campaign_for(c, plan, 3, "write_iops")
    quiet = _compare(plan)
    with pytest.raises(UserError, match=r"rows that regressed: none \(no row got significantly worse\)$"):
        campaign_for(quiet, plan, 3, "iops")


def test_a_preset_s_sweep_is_pinned_to_the_row_s_value_and_the_bisection_accepts_it() -> None:
    plan = _plan(workload="fio-randread-4k")
    c = comparison(plan, _runs(plan, {("iops", "numjobs=16", "v2"): 0.8}))
    assert [m.key for m in bisectable(c)] == ["iops@numjobs=16"]
    data = campaign_for(c, plan, 4, "iops@numjobs=16")
    assert data["workload"] == {"name": "fio-randread-4k", "params": {"numjobs": 16}}
    assert choose_workload(parse_campaign(data)).params["numjobs"] == 16


def test_two_sweeps_pin_both_and_keep_the_fixed_parameters() -> None:
    plan = _plan("--param", "bs=64k", "--sweep", "numjobs=1,4", "--sweep", "iodepth=1,8")
    c = comparison(plan, _runs(plan, {("iops", "numjobs=4 iodepth=8", "v2"): 0.7}))
    data = campaign_for(c, plan, 5, "iops@numjobs=4,iodepth=8")
    assert data["workload"]["params"] == {"bs": "64k", "numjobs": 4, "iodepth": 8}
    choose_workload(parse_campaign(data))


@pytest.mark.parametrize("variants, message", [
    (("v1=kernel:/boot/vmlinuz", "v2=commit:v6.2"), r"^variant v1: kernel /boot/vmlinuz is not a commit; "),
    (("v1=commit:v6.1", "v2=commit:v6.2", "v3=commit:v6.3"), r"^variant: a bisection runs between two commits; "
                                                               r"the comparison has 3 variants \(v1, v2, v3\)$"),
    (("v1=commit:v6.1", "v2=commit:v6.2,sched:bfq"), r"^variant v2: sets sched=bfq; "),
    (("v1=commit:v6.1", "v2=commit:v6.2,append:quiet"), r"^variant v2: append 'quiet' differs from v1's ''"),
])
def test_a_comparison_that_is_not_two_plain_commits_is_refused_and_prints_no_command(
        variants: tuple[str, ...], message: str) -> None:
    plan = _plan(variants=variants)
    c = _compare(plan, iops=0.8)
    with pytest.raises(UserError, match=message):
        campaign_for(c, plan, 3, "iops")
    assert bisect_commands(c, plan, 3) == ()


def test_the_commands_name_each_regressed_row_with_its_change_and_threshold() -> None:
    plan = _plan(workload="fio-randread-4k")
    c = comparison(plan, _runs(plan, {("iops", "numjobs=16", "v2"): 0.8, ("iops", "numjobs=1", "v2"): 1.2}))
    (line,) = bisect_commands(c, plan, 9)
    t = bisectable(c)[0].cell.tested
    assert t is not None
    assert line.startswith("vmbisect bisect --from-compare 9 iops@numjobs=16   # iops at numjobs=16: ")
    assert line.endswith(f"; threshold {threshold_for(t, 'higher') * 100:+.1f}%")


def test_the_written_file_parses_back_to_the_comparison_s_campaign_and_round_trips() -> None:
    plan = _plan("--vcpus", "4", "--memory", "2048", "--controller", "lsisas1078", "--pin", "0,1,0,1",
                 "--config", "defconfig", "--config", "cc=gcc-12", "--accel", "tcg", "--append", "mitigations=off")
    c = _compare(plan, iops=0.8)
    text = campaign_text(c, plan, 7, "iops")
    assert text.startswith("# From comparison 7, row iops: iops: -20.")
    raw = yaml.safe_load(text)
    assert raw == campaign_for(c, plan, 7, "iops")
    campaign = parse_campaign(raw)
    assert campaign.guest == plan.spec and campaign.accel == "tcg" and campaign.append == "mitigations=off"
    assert campaign.kernel.config == ("defconfig",) and campaign.kernel.cc == "gcc-12"
    assert (campaign.good, campaign.bad, campaign.metric.direction) == ("v6.1", "v6.2", "higher")
    assert f"{campaign.metric.threshold.value * 100:+.1f}%" == raw["metric"]["threshold"]
    assert yaml.safe_load(yaml.safe_dump(raw, sort_keys=False)) == raw


def test_the_markdown_and_html_reports_and_the_text_output_carry_the_commands() -> None:
    from orchestrator.compare.tobisect import with_commands
    from orchestrator.kinds.compare_kind import render, summary_text

    plan = _plan()
    c = with_commands(_compare(plan, iops=0.8), plan, 9)
    (line,) = c.bisect
    assert line.startswith("vmbisect bisect --from-compare 9 iops   # iops: -20.")
    assert "## Bisect\n\nEach row that regressed" in render(c, "md") and line in render(c, "md")
    assert "<h2>Bisect</h2><pre>vmbisect bisect --from-compare 9 iops   # iops: -20." in render(c, "html")
    lines = summary_text(c).splitlines()
    at = lines.index("Bisect a row that regressed:")
    assert lines[at + 1] == line and lines[at - 1] == "" and lines[at - 2].startswith("- ")
    assert with_commands(_compare(plan, iops=1.2), plan, 9).bisect == ()


def test_a_relative_repo_is_kept_as_the_absolute_path_it_named_when_compared(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = _plan("--repo", "linux")
    monkeypatch.chdir("/")
    assert campaign_for(_compare(plan, iops=0.8), plan, 1, "iops")["repository"] == str(tmp_path / "linux")
