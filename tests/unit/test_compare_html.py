"""The comparison as HTML: what it says, which plots it draws, and the mmtests-like table."""

import dataclasses
import re
import statistics
import xml.etree.ElementTree as ET

from scipy import stats

from orchestrator.compare.html import render_html
from tests.synthetic import scheduler_comparison


def _svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg .*?</svg>", html, re.DOTALL)]


def test_page_states_variants_verdict_notes_and_the_test_escaped():
    html = render_html(scheduler_comparison())
    assert "<h1>Schedulers &lt;none&gt; &amp; bfq</h1>" in html
    assert "scheduler=bfq" in html and "none (baseline)" in html
    assert "read_iops: bfq differs significantly from none at 4 of 4 points" in html and "synthetic data" in html
    assert "with the boot as the unit" in html and "<script" not in html


def test_a_numeric_sweep_gets_a_line_plot_runs_and_host_cpu_per_vcpu():
    svgs = _svgs(render_html(scheduler_comparison()))
    assert [s.get("aria-label") for s in svgs] == ["read_iops: mean over the sweep", "read_iops: every run",
                                                   "host CPU used per vCPU at numjobs=1"]
    assert sum(1 for e in svgs[0].iter() if e.get("class") == "series") == 2
    assert sum(1 for e in svgs[1].iter() if e.get("class") == "dot") == 2 * 4 * 5
    assert sum(1 for e in svgs[2].iter() if e.get("class") == "bar") == 2 * 2


def test_without_a_numeric_sweep_there_is_no_line_plot():
    c = scheduler_comparison()
    c = dataclasses.replace(c, rows=tuple(dataclasses.replace(r, x=None) for r in c.rows))
    labels = [s.get("aria-label") for s in _svgs(render_html(c))]
    assert "read_iops: mean over the sweep" not in labels and "read_iops: every run" in labels


def test_error_bars_are_the_t_interval_of_the_mean_and_the_caption_says_so():
    c = scheduler_comparison()
    html = render_html(c)
    cell = c.rows[0].cells[0]
    values = c.samples["none"]["numjobs=1"]["read_iops"]
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    assert f"{cell.summary.mean - half:.4g}..{cell.summary.mean + half:.4g}" in html
    assert "95% confidence interval of the mean (Student&#x27;s t" in html


def test_table_marks_significant_means_and_says_descriptive_for_metrics_without_direction():
    c = scheduler_comparison()
    html = render_html(c)
    q = c.rows[0].cells[1].q_value
    assert re.search(r'<td class="first sig num">-5\d\.\d\d% \*</td>', html)
    assert "(descriptive)" in html and "<td class=\"quiet\">higher is better</td>" in html
    assert q is not None and q < 0.05 and "read_iops (IOPS)" in html and f"q={q:.3g}" in html
    assert "<td class=\"quiet\">boots</td>" in html and "5 boots x 1 run" in html


def test_table_lists_primary_metrics_first():
    c = scheduler_comparison()
    c = dataclasses.replace(c, rows=c.rows[::-1])
    html = render_html(c)
    assert html.index("read_iops (IOPS)</td>") < html.index("host_vcpu_used.0 (CPUs)</td>")


def test_without_primary_metrics_the_first_row_metric_is_plotted():
    c = dataclasses.replace(scheduler_comparison(), primary=())
    assert "<h2>read_iops</h2>" in render_html(c)
