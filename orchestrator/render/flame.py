"""Differential flame graphs as self-contained SVG (pure), as Brendan Gregg's difffolded.pl and
flamegraph.pl draw them: two sets of folded stacks, each normalised to fractions of its own
samples, merged into one tree of call chains. A frame's width is its share of the samples of
the profile the graph is drawn for; its colour is the change of that share from before to
after in both graphs: red where it grew, blue where it shrank, white where it stayed, the
deepest colour at the largest change in the graph. Drawn for after it shows what grew; drawn for
before (difffolded.pl with the files swapped and flamegraph.pl's --negate) it shows what shrank
or vanished, which the first cannot show: a frame that after never ran has no width there.
Every name is escaped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape

WIDTH = 1200
FRAME_H = 16
FONT = 11
CHAR_W = 6.6  # the font's mean advance, for cutting labels to their frame
MIN_FRACTION = 0.001  # frames narrower than a thousandth of the graph are left out, as flamegraph.pl's minwidth
PAD_TOP, PAD_BOTTOM = 30, 8


@dataclass
class FlameNode:
    name: str
    mine: float = 0.0  # fraction of the drawn profile's samples
    other: float = 0.0  # fraction of the other profile's
    children: dict[str, "FlameNode"] = field(default_factory=dict)


def tree(mine: Mapping[tuple[str, ...], int], other: Mapping[tuple[str, ...], int]) -> FlameNode:
    """The merged call tree of both profiles, each normalised to its own total."""
    root = FlameNode("all")
    for stacks, attr in ((mine, "mine"), (other, "other")):
        total = sum(stacks.values())
        if not total:
            continue
        for stack, n in stacks.items():
            share = n / total
            node = root
            setattr(node, attr, getattr(node, attr) + share)
            for frame in stack:
                node = node.children.setdefault(frame, FlameNode(frame))
                setattr(node, attr, getattr(node, attr) + share)
    return root


def colour(delta: float, scale: float) -> str:
    """Red for a share that grew, blue for one that shrank, deeper with the change."""
    if scale <= 0 or delta == 0:
        return "rgb(250,250,250)"
    k = min(1.0, abs(delta) / scale)
    fade = int(round(250 - 200 * k))
    return f"rgb(250,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},250)"


def _largest_change(node: FlameNode) -> float:
    return max([abs(node.mine - node.other), *(_largest_change(c) for c in node.children.values())])


def _depth(node: FlameNode) -> int:
    return 1 + max((_depth(c) for c in node.children.values() if c.mine >= MIN_FRACTION), default=0)


def flame_svg(before: Mapping[tuple[str, ...], int], after: Mapping[tuple[str, ...], int], draw_after: bool,
              title: str, before_label: str, after_label: str) -> str:
    """The flame graph of `after` (or of `before`), coloured by each frame's change from before
    to after (see the module's text); a frame's tooltip says both shares."""
    mine, other = (after, before) if draw_after else (before, after)
    sign = 1.0 if draw_after else -1.0
    root = tree(mine, other)
    scale = _largest_change(root)
    depth = _depth(root)
    height = PAD_TOP + depth * FRAME_H + PAD_BOTTOM
    e = escape
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
             f'viewBox="0 0 {WIDTH} {height}" font-family="monospace" font-size="{FONT}" role="img">',
             f'<title>{e(title)}</title>',
             f'<text x="{WIDTH / 2:.0f}" y="18" text-anchor="middle" font-size="14">{e(title)}</text>']

    def draw(node: FlameNode, x: float, level: int) -> None:
        w = node.mine * WIDTH
        y = height - PAD_BOTTOM - (level + 1) * FRAME_H
        delta = sign * (node.mine - node.other)
        was, now = (node.other, node.mine) if draw_after else (node.mine, node.other)
        tip = f"{node.name}: {100 * was:.2f}% {before_label}, {100 * now:.2f}% {after_label} ({100 * delta:+.2f} points)"
        parts.append(f'<g><title>{e(tip)}</title><rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{FRAME_H - 1}" '
                     f'fill="{colour(delta, scale)}" stroke="#ffffff" stroke-width="0.5"/>')
        fits = int((w - 4) // CHAR_W)
        if fits >= 3:
            label = node.name if len(node.name) <= fits else node.name[:fits - 2] + ".."
            parts.append(f'<text x="{x + 2:.2f}" y="{y + FRAME_H - 4}">{e(label)}</text>')
        parts.append("</g>")
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            if child.mine >= MIN_FRACTION:
                draw(child, child_x, level + 1)
            child_x += child.mine * WIDTH

    if root.mine > 0:
        draw(root, 0.0, 0)
    parts.append("</svg>")
    return "".join(parts)
