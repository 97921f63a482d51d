"""The HTML shell and table helper shared by the reports."""

from orchestrator.render.page import page, table


def test_page_is_a_complete_utf8_document_with_an_escaped_title():
    html = page("a <b> & c", "<p>body</p>")
    assert html.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in html
    assert "<title>a &lt;b&gt; &amp; c</title>" in html and "<p>body</p>" in html
    assert "<script" not in html


def test_table_escapes_cells_and_gives_each_its_classes():
    html = table(["metric", "mean"], [["<x>", "1.5"], ["y", "2"]], [["", "num sig"], ["first", "num"]])
    assert "<th>metric</th>" in html and "<td>&lt;x&gt;</td>" in html
    assert '<td class="num sig">1.5</td>' in html and '<td class="first">y</td>' in html
