"""The HTML reports as a browser draws them: headless Chromium screenshots, checked for the
plots' series colours (an SVG a browser refuses or a plot that lost its data leaves none)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from orchestrator.compare.html import render_html as render_comparison
from orchestrator.render.palette import OKABE_ITO
from orchestrator.report.bisection import BisectReport
from orchestrator.report.bisection_html import VERDICT_COLOURS
from orchestrator.report.bisection_html import render_html as render_bisection
from tests.integration.test_engine_cases import report_of
from tests.screenshot import find_chromium, screenshot
from tests.synthetic import scheduler_comparison

pytestmark = pytest.mark.skipif(find_chromium() is None,
                                reason="no chromium binary on PATH (make setup installs Debian's chromium)")

NONE_COLOUR, BFQ_COLOUR = OKABE_ITO[0], OKABE_ITO[1]  # the first two variants' colours


def _shot(tmp_path: Path, name: str, html: str) -> Image.Image:
    page, png = tmp_path / f"{name}.html", tmp_path / f"{name}.png"
    page.write_text(html, encoding="utf-8")
    screenshot(page, png)
    with Image.open(png) as im:
        return im.convert("RGB")


def _pixels(im: Image.Image, hex_colour: str) -> int:
    """How many pixels have exactly this colour."""
    rgb = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return next((n for n, c in im.getcolors(maxcolors=im.width * im.height) if c == rgb), 0)


def _white_share(im: Image.Image) -> float:
    return _pixels(im, "#ffffff") / (im.width * im.height)


def _bisection_report(tmp_path: Path) -> BisectReport:
    return report_of(tmp_path)[1]


def test_comparison_report_draws_both_variants_in_their_colours(tmp_path):
    im = _shot(tmp_path, "comparison", render_comparison(scheduler_comparison(("none", "bfq"))))
    assert _white_share(im) < 0.97, "the page is almost blank"
    # legend swatches are 100 pixels per plot; lines, markers, dots and bars bring thousands
    assert _pixels(im, NONE_COLOUR) > 2000 and _pixels(im, BFQ_COLOUR) > 2000


def test_comparison_report_without_a_variant_shows_none_of_its_colour(tmp_path):
    im = _shot(tmp_path, "baseline-only", render_comparison(scheduler_comparison(("none",))))
    assert _pixels(im, NONE_COLOUR) > 2000
    assert _pixels(im, BFQ_COLOUR) == 0


def test_bisection_report_draws_good_and_bad_samples(tmp_path):
    report = _bisection_report(tmp_path)
    im = _shot(tmp_path, "bisection", render_bisection(report))
    assert _white_share(im) < 0.97, "the page is almost blank"
    # the legend swatch alone is 100 pixels; every dot adds about 30
    assert _pixels(im, VERDICT_COLOURS["good"]) > 200 and _pixels(im, VERDICT_COLOURS["bad"]) > 200
