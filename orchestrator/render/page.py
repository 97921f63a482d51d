"""The one HTML shell of every report (doctype, UTF-8, inline CSS, no scripts, no network) and
its table helper."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

CSS = """body{font-family:sans-serif;margin:2em;max-width:80em;color:#1f2328}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #d0d7de;padding:3px 8px;font-size:13px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{font-family:monospace;text-align:right;white-space:nowrap}
td.mono{font-family:monospace}
td.sig{background:#fff1b8;font-weight:bold}
td.first{border-top:2px solid #8c959f}
td.quiet{color:#656d76}
pre{background:#f6f8fa;padding:1em;overflow-x:auto}
figure{margin:1.5em 0}
svg{max-width:100%;height:auto}
figcaption{font-size:13px;color:#424a53;max-width:760px}"""


def page(title: str, body_html: str) -> str:
    """A complete HTML document: `title` is text (escaped here), `body_html` is HTML."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>\n'
            f"<style>{CSS}</style>\n</head><body><h1>{escape(title)}</h1>\n{body_html}</body></html>\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]],
          classes: Sequence[Sequence[str]] | None = None) -> str:
    """A table of text (escaped here). `classes`, parallel to `rows`, gives each cell's CSS
    classes: "num" (monospace, right-aligned), "mono", "sig" (highlighted), "first" (a line
    above: the start of a block), "quiet"; "" for none."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, text in enumerate(row):
            cls = classes[r][c] if classes else ""
            attr = f' class="{escape(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"
