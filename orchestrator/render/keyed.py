"""Text tables whose last column is a name (a metric, a profile key) kept within a width without
wrapping a row (pure): a name too long for its row is shortened there, cut in the middle with a
mark (`sched_run_del[1]slice (better)`), and given whole in a key below the table (`[1]
sched_run_delay_us_per_slice (better)`), so every row keeps its columns."""

from __future__ import annotations

from collections.abc import Sequence

MIN_NAME = 12  # the fewest columns a shortened name keeps


def keyed_rows(rows: Sequence[tuple[str, str]], width: int, head: float = 0.6) -> tuple[list[str], list[str]]:
    """(figures, name) rows as lines of at most `width` columns where the figures leave room
    (a name shortened in its row when it does not fit: `head` of what it keeps from its start,
    the rest from its end), and the key: one line a shortened name, `[n] name`, each within
    `width` (a longer name continues on lines of its own, indented)."""
    lines: list[str] = []
    key: list[str] = []
    for figures, name in rows:
        room = max(width - len(figures), MIN_NAME)
        if len(name) <= room:
            lines.append(figures + name)
            continue
        mark = f"[{sum(1 for line in key if not line.startswith(' ')) + 1}]"
        keep = room - len(mark)
        start = int(keep * head)
        lines.append(f"{figures}{name[:start]}{mark}{name[len(name) - (keep - start):]}")
        whole = f"{mark} {name}"
        key.append(whole[:width])
        key += [f"    {whole[i:i + width - 4]}" for i in range(width, len(whole), width - 4)]
    return lines, key
