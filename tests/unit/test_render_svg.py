"""The SVG plot primitives: well-formed, one drawn element per datum, the right axis, escaped."""

import itertools
import xml.etree.ElementTree as ET

import pytest

from orchestrator.render import palette
from orchestrator.render.scale import compact, is_log2_sweep, nice_ticks
from orchestrator.render.svg import bar_plot, line_plot, strip_plot

NS = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _with_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(NS + tag) if e.get("class") == cls]


def _texts(root: ET.Element) -> list[str]:
    return [e.text or "" for e in root.iter(NS + "text")]


def _sweep(xs, mean=100.0, err=5.0):
    return [(x, mean + x, mean + x - err, mean + x + err) for x in xs]


def test_line_plot_draws_one_line_and_one_marker_per_point_for_each_series():
    root = _parse(line_plot([("none", _sweep([1, 2, 4, 8])), ("bfq", _sweep([1, 2, 4, 8], 50))],
                            "numjobs", "IOPS", "read"))
    assert len(_with_class(root, "polyline", "series")) == 2
    assert len(_with_class(root, "circle", "marker")) == 8
    assert {e.get("stroke") for e in _with_class(root, "polyline", "series")} == set(palette.OKABE_ITO[:2])


def test_line_plot_draws_an_error_bar_per_point_unless_its_ends_coincide():
    points = _sweep([1, 2, 3]) + [(4, 10.0, 10.0, 10.0)]
    root = _parse(line_plot([("a", points)], "x", "y", "t"))
    assert len(_with_class(root, "path", "err")) == 3


def _marker_xs(svg: str) -> list[float]:
    return sorted(float(e.get("cx")) for e in _with_class(_parse(svg), "circle", "marker"))


def test_line_plot_uses_a_log2_axis_for_jobs_1_to_64():
    xs = _marker_xs(line_plot([("a", _sweep([1, 2, 4, 8, 16, 32, 64]))], "numjobs", "y", "t"))
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    assert max(gaps) - min(gaps) < 0.2
    assert is_log2_sweep([1, 2, 4, 8, 16, 32, 64])


def test_line_plot_keeps_a_linear_axis_for_values_that_are_not_a_wide_power_of_two_sweep():
    xs = _marker_xs(line_plot([("a", _sweep([1, 2, 4]))], "numjobs", "y", "t"))
    assert xs[2] - xs[1] == pytest.approx(2 * (xs[1] - xs[0]), abs=0.2)
    assert not is_log2_sweep([1, 2, 4]) and not is_log2_sweep([1, 3, 9, 27])


def test_line_plot_of_a_single_point_labels_its_x_value_and_draws_it():
    root = _parse(line_plot([("a", [(4.0, 7.0, 6.0, 8.0)])], "numjobs", "y", "t"))
    assert len(_with_class(root, "circle", "marker")) == 1 and "4" in _texts(root)
    assert "nan" not in ET.tostring(root, encoding="unicode")


def test_names_and_labels_are_escaped_and_the_svg_stays_well_formed():
    name = "<a&b>"
    for svg in (line_plot([(name, _sweep([1, 2]))], name, name, name),
                strip_plot([(name, name, [1.0, 2.0])], name, name, x_label=name, refs=[(name, 1.5, name)]),
                bar_plot([name], [(name, [1.0], None)], name, name)):
        root = _parse(svg)
        assert "<a&b>" not in svg and "&lt;a&amp;b&gt;" in svg
        assert name in _texts(root)


def test_strip_plot_draws_every_value_and_a_median_bar_per_group():
    groups = [("numjobs=1", "none", [1.0, 2.0, 3.0]), ("numjobs=1", "bfq", [4.0, 5.0]),
              ("numjobs=2", "none", []), ("numjobs=2", "bfq", [6.0])]
    root = _parse(strip_plot(groups, "IOPS", "runs"))
    assert len(_with_class(root, "circle", "dot")) == 6
    assert len(_with_class(root, "line", "median")) == 3
    assert _texts(root).count("numjobs=1") == 1 and _texts(root).count("numjobs=2") == 1


def test_strip_plot_median_bar_sits_at_the_median():
    root = _parse(strip_plot([("g", "k", [10.0, 30.0, 20.0])], "y", "t"))
    dots = {float(e.get("cy")) for e in _with_class(root, "circle", "dot")}
    (bar,) = _with_class(root, "line", "median")
    assert float(bar.get("y1")) == sorted(dots)[1]


def test_strip_plot_reference_lines_are_dashed_in_their_key_colour():
    fixed = {"good": "#009E73", "bad": "#D55E00"}
    root = _parse(strip_plot([("1", "good", [10.0]), ("2", "bad", [5.0])], "y", "t",
                             refs=[("good median", 10.0, "good"), ("bad median", 5.0, "bad")], colours=fixed))
    refs = _with_class(root, "line", "ref")
    assert [r.get("stroke") for r in refs] == ["#009E73", "#D55E00"] and all(r.get("stroke-dasharray") for r in refs)
    assert {e.get("fill") for e in _with_class(root, "circle", "dot")} == {"#009E73", "#D55E00"}


def test_bar_plot_draws_a_bar_per_category_and_series_with_whiskers_where_given():
    root = _parse(bar_plot(["vCPU 0", "vCPU 1", "vCPU 2"],
                           [("none", [0.3, 0.4, 0.5], [0.01, 0.02, 0.0]), ("bfq", [0.6, 0.7, 0.8], None)],
                           "CPUs", "host CPU"))
    assert len(_with_class(root, "rect", "bar")) == 6
    assert len(_with_class(root, "path", "err")) == 2
    assert "0" in _texts(root)


@pytest.mark.parametrize("value,text", [(12346, "12.35k"), (9999.7, "10k"), (2_500_000, "2.5M"), (0.5, "0.5"),
                                        (-1234.5, "-1234"), (0, "0"), (3e9, "3G")])
def test_axis_numbers_are_compact(value, text):
    assert compact(value) == text


def test_nice_ticks_cover_the_range_in_round_steps():
    ticks = nice_ticks(83.2, 107.9)
    assert ticks[0] <= 83.2 and ticks[-1] >= 107.9 and 4 <= len(ticks) <= 8
    assert len({round(b - a, 9) for a, b in itertools.pairwise(ticks)}) == 1


def test_nice_ticks_widen_a_single_value():
    ticks = nice_ticks(5.0, 5.0)
    assert ticks[0] < 5.0 < ticks[-1]


def test_fixed_colours_stay_and_the_others_never_reuse_them():
    colours = palette.assign(["more", "good", "bad", "other"], {"good": palette.OKABE_ITO[0]})
    assert colours["good"] == palette.OKABE_ITO[0]
    assert len(set(colours.values())) == 4
