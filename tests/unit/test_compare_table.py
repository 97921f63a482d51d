"""The comparison statistics and tables: signed differences, significance with the false
discovery rate controlled, verdicts that say "no difference" when there is none, and the
mmtests layout (golden files in tests/data/compare)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.compare.text import render_markdown, render_text
from orchestrator.metrictable.cells import Comparison, VariantInfo
from orchestrator.metrictable.tabulate import MetricMeta, Point, build, signed_diff
from orchestrator.stats import benjamini_hochberg

GOLDEN = Path(__file__).parent.parent / "data" / "compare"
VARIANTS = [VariantInfo("none", "kernel bzImage, sched=none"), VariantInfo("bfq", "kernel bzImage, sched=bfq")]
METRICS = {"iops": MetricMeta("IO/s", "higher"), "write_iops": MetricMeta("IO/s", "higher"),
           "read_clat_mean": MetricMeta("us", "lower"), "host_cpus_used": MetricMeta("CPUs", "lower"),
           "iostat_avgqu_sz": MetricMeta("requests", "none")}


def _sweep_samples() -> dict[str, dict[str, dict[str, list[float]]]]:
    """bfq halves IOPS and doubles latency at every point; CPU use is the same."""
    noise = [0.97, 1.02, 0.99, 1.03, 1.0]
    cpu = [1.01, 0.98, 1.0, 1.02, 0.99]
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for name, f, cpu_order in (("none", 1.0, cpu), ("bfq", 0.5, cpu[::-1])):
        out[name] = {f"numjobs={j}": {
            "iops": [12000 * f * j ** 0.5 * n for n in noise],
            "write_iops": [0.0] * 5,
            "read_clat_mean": [300 / f * n for n in noise[::-1]],
            "host_cpus_used": cpu_order,
            "iostat_avgqu_sz": [3.9 * j * n for n in noise],
        } for j in (1, 4, 16)}
    return out


def _sweep() -> Comparison:
    return build("fio-randread-4k: none vs bfq", "fio-randread-4k", "numjobs", VARIANTS,
                 [Point(f"numjobs={j}", j) for j in (1, 4, 16)], METRICS, _sweep_samples(), ["iops"])


def _same() -> Comparison:
    a = [11800.0, 12100.0, 12050.0, 11900.0, 12300.0]
    b = [12000.0, 11850.0, 12200.0, 12150.0, 11950.0]
    return build("fio: a vs b", "fio", None, [VariantInfo("a", "kernel x"), VariantInfo("b", "kernel y")],
                 [Point("", None)], {"iops": METRICS["iops"]}, {"a": {"": {"iops": a}}, "b": {"": {"iops": b}}},
                 ["iops"])


def test_difference_is_signed_so_that_plus_is_better_for_either_direction() -> None:
    assert signed_diff(100.0, 110.0, "higher") == pytest.approx(10.0)
    assert signed_diff(100.0, 110.0, "lower") == pytest.approx(-10.0)
    assert signed_diff(0.563, 0.4511, "lower") == pytest.approx(19.9, abs=0.1)
    assert signed_diff(100.0, 90.0, "none") == pytest.approx(-10.0)
    assert signed_diff(0.0, 5.0, "higher") is None


def test_benjamini_hochberg_matches_the_textbook_example() -> None:
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.005])
    assert q == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_a_halving_at_every_sweep_point_is_significant_and_said_so() -> None:
    c = _sweep()
    rows = [r for r in c.rows if r.metric == "iops"]
    assert [r.x for r in rows] == [1, 4, 16]
    assert all(r.cells[1].significant and r.cells[1].diff_pct == pytest.approx(-50.0, abs=0.5) for r in rows)
    assert c.verdict[0].startswith("iops: bfq differs significantly from none at 3 of 3 points")
    assert "read_clat_mean" in c.verdict[1] and "worse" in c.verdict[1]


def test_a_metric_that_did_not_change_is_not_marked_or_listed() -> None:
    c = _sweep()
    cpu = [r for r in c.rows if r.metric == "host_cpus_used"]
    assert cpu and not any(x.significant for r in cpu for x in r.cells)
    assert "host_cpus_used" not in " ".join(c.verdict)


def test_metrics_that_are_zero_everywhere_get_no_rows() -> None:
    assert "write_iops" not in {r.metric for r in _sweep().rows}


def test_no_difference_says_so_with_the_change_the_runs_could_have_detected() -> None:
    c = _same()
    assert not c.rows[0].cells[1].significant
    assert c.verdict == (c.verdict[0],)
    assert c.verdict[0].startswith("iops: no significant difference between b and a (largest change +0.0%)")
    assert "only changes above about" in c.verdict[0]
    assert "*" not in render_text(c)


def _boots(runs: dict[str, list[list[float]]], ids: dict[str, list[int]]) -> Comparison:
    """One metric; each variant's runs given per boot, the boots named by `ids`."""
    samples = {v: {"": {"iops": [x for boot in per for x in boot]}} for v, per in runs.items()}
    boots = {v: {"": {"iops": [i for i, boot in zip(ids[v], per) for _ in boot]}} for v, per in runs.items()}
    return build("t", "fio", None, VARIANTS, [Point("", None)], {"iops": METRICS["iops"]}, samples, ["iops"],
                 boots=boots)


def test_runs_of_one_boot_are_not_independent_samples() -> None:
    """Two boots a side, five tight runs in each: every run of bfq is below every run of none
    (a rank test on runs says p < 0.001), but two boots a side with this between-boot spread do
    not show a difference."""
    c = _boots({"none": [[100.0, 100.1, 99.9, 100.2, 99.8], [102.0, 102.1, 101.9, 102.2, 101.8]],
                "bfq": [[97.0, 97.1, 96.9, 97.2, 96.8], [99.0, 99.1, 98.9, 99.2, 98.8]]},
               {"none": [1, 3], "bfq": [2, 4]})
    cell = c.rows[0].cells[1]
    assert cell.boots == 2 and cell.tested is not None and not cell.tested.paired
    assert cell.p_value is not None and cell.p_value > 0.05 and not cell.significant
    assert "with 2 boots x 5 runs per variant only changes above about" in c.verdict[0]
    assert "Workload fio; 2 boots x 5 runs per variant." in render_markdown(c)


def test_variants_sharing_a_guest_are_paired_by_boot() -> None:
    """sched variants switched between runs in the same three guests: the guests' levels differ
    by 30%, bfq is 5% below none in each of them; paired by boot, that is significant."""
    levels = (100.0, 80.0, 110.0)
    c = _boots({"none": [[lv * f for f in (1.0, 1.01, 0.99)] for lv in levels],
                "bfq": [[lv * 0.95 * f for f in (0.99, 1.0, 1.01)] for lv in levels]},
               {"none": [7, 8, 9], "bfq": [7, 8, 9]})
    cell = c.rows[0].cells[1]
    assert cell.tested is not None and cell.tested.paired and cell.significant
    assert cell.tested.change == pytest.approx(-0.05, abs=0.002)
    assert "iops: bfq differs significantly from none: -5.0% worse (boot means, 95% CI" in c.verdict[0]
    assert "3 boots, paired" in c.verdict[0]


def test_one_boot_per_variant_is_never_tested_however_far_apart() -> None:
    c = _boots({"none": [[100.0, 101.0, 100.5]], "bfq": [[50.0, 51.0, 50.5]]}, {"none": [1], "bfq": [2]})
    cell = c.rows[0].cells[1]
    assert cell.tested is None and cell.p_value is None and not cell.significant
    assert any("too few boots to test" in n for n in c.notes)


def test_mmtests_table_layout_matches_the_golden_file() -> None:
    assert render_text(_sweep()) == (GOLDEN / "sweep.txt").read_text()


def test_markdown_report_matches_the_golden_file() -> None:
    assert render_markdown(_sweep()) == (GOLDEN / "sweep.md").read_text()


def test_markdown_report_of_no_difference_matches_the_golden_file() -> None:
    assert render_markdown(_same()) == (GOLDEN / "same.md").read_text()
