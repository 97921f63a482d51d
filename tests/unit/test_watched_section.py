"""The watched metrics' section, pure (orchestrator/explain/watched.py): its table and notes, and the
test it takes for a metric without a log scale."""

from __future__ import annotations

from orchestrator.explain.watched import (
    WatchedChange,
    WatchedSection,
    change,
    tcg_notes,
    watched_html,
    watched_markdown,
)
from orchestrator.stats import Boot, TwoSample
from orchestrator.workloads.system import METRICS


def test_the_section_renders_means_change_interval_and_p_and_says_when_boots_are_too_few():
    test = TwoSample(0.231, 0.18, 0.28, 0.0004, 4, 4)
    section = WatchedSection((
        WatchedChange("host_cpu_us_per_op", "CPU-us/op", "lower", 41.3, 50.84, 4, 4, test),
        WatchedChange("iostat_util_pct.sda", "%", "none", 80.0, 81.0, 1, 1, None)),
        ("host_cpu_us_per_op: " + METRICS["host_cpu_us_per_op"].tcg,))
    lines = watched_markdown(section)
    assert lines[2:5] == ["| metric | better | parent | culprit | change | 95% CI | p |", "|---|---|---|---|---|---|---|",
                          "| host_cpu_us_per_op | lower | 41.3 CPU-us/op | 50.84 CPU-us/op | +23.1%* | +18.0%..+28.0% "
                          "| 0.0004 |"]
    assert lines[5] == "| iostat_util_pct.sda | descriptive | 80 % | 81 % | - | too few boots | - |"
    assert lines[7] == ("Note: the runs ran under TCG; host_cpu_us_per_op: the host's CPU time includes the emulation "
                        "of every guest instruction, so a change can be the emulator's cost; guest_cpu_us_per_op "
                        "tracks the guest's own cost best")
    assert watched_markdown(None) == [] and watched_markdown(WatchedSection()) == []


def test_html_of_the_section_is_escaped():
    row = WatchedChange("<b>x</b>", "", "higher", 1.0, 2.0, 2, 2, None)
    page = watched_html(WatchedSection((row,), ("<i>note</i>",)))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page and "&lt;i&gt;note&lt;/i&gt;" in page


def test_boot_noise_is_pooled_over_the_campaign_and_a_metric_with_zeros_takes_welchs_test():
    parent, culprit = [Boot(0, (10.0, 10.2)), Boot(1, (9.9, 10.1))], [Boot(2, (12.0, 12.1)), Boot(3, (11.9, 12.2))]
    others = [[Boot(4 + i, (10.0 + i * 0.1,)) for i in range(4)], [Boot(8 + i, (12.0 - i * 0.1,)) for i in range(4)]]
    pooled = change(METRICS["guest_cpu_us_per_op"], parent, culprit, others).test
    alone = change(METRICS["guest_cpu_us_per_op"], parent, culprit).test
    assert pooled is not None and alone is not None and pooled.pooled and pooled.df > alone.df
    zeros = change(METRICS["iostat_util_pct"], [Boot(0, (0.0,)), Boot(1, (1.0,))], [Boot(2, (5.0,)), Boot(3, (6.0,))],
                   others).test
    assert zeros is not None and not zeros.pooled and zeros.change > 1


def test_only_runs_under_tcg_get_the_notes_and_only_for_metrics_that_have_one():
    cpu = [METRICS["host_cpu_us_per_op"], METRICS["ctxt_per_op"], METRICS["guest_cpu_us_per_op"]]
    assert [n.split(":")[0] for n in tcg_notes(cpu, "tcg")] == ["host_cpu_us_per_op", "guest_cpu_us_per_op"]
    assert tcg_notes(cpu, "kvm") == () and tcg_notes(cpu, "") == ()
