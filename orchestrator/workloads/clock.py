"""The guest's clock, from what its agent says (docs/agent-protocol.md): the clocksource the
kernel kept time with when the guest came up (hello's `clocksource`) and around each run (every
snapshot copies current_clocksource), and the kernel's own lines about it (hello's
`clock_log`: a TSC marked unstable, a switch of clocksource, the watchdog).

Under TCG the clocksource decides what every time read costs and what clock the guest's CPU
times run on (docs/metrics.md, "CPU time"), and the kernels of one range can pick different
ones on the same guest: a boot stores its `BootClock` with its facts (BootRow.facts["clock"]),
and the reports say which clocksource their boots kept time with. Boots and runs stored
before it have none, and read as "not recorded"."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CURRENT = "/sys/devices/system/clocksource/clocksource0/current_clocksource"


def of_snapshot(snapshot: Mapping[str, Any]) -> str:
    """The clocksource a snapshot was taken on ("" when its agent did not copy it)."""
    return str((snapshot.get("files") or {}).get(CURRENT, "")).strip()


def of_run(snapshots: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The clocksource before and after a run, from its two snapshots ("" for a run stored
    without them)."""
    if len(snapshots) != 2:
        return "", ""
    return of_snapshot(snapshots[0]), of_snapshot(snapshots[1])


def changed(span: tuple[str, str]) -> bool:
    """Whether the clocksource changed between two readings that were both taken."""
    return all(span) and span[0] != span[1]


def run_notes(span: tuple[str, str]) -> tuple[str, ...]:
    """A run's note when its clocksource changed between its snapshots (every time the run read
    is then on two clocks)."""
    return (f"the guest's clocksource changed during the run: {span[0]} -> {span[1]}",) if changed(span) else ()


@dataclass(frozen=True)
class BootClock:
    """One boot's clock: the clocksource when the guest came up ("" from an agent that does not
    say), before and after each of its runs, and the kernel's clock lines up to then."""

    start: str
    runs: tuple[tuple[str, str], ...] = ()
    log: tuple[str, ...] = ()

    @property
    def changed_runs(self) -> tuple[int, ...]:
        """The runs (0-based, in the boot's order) whose clocksource changed mid-run."""
        return tuple(i for i, span in enumerate(self.runs) if changed(span))

    @property
    def sources(self) -> tuple[str, ...]:
        """Every clocksource the boot was seen on, first seen first."""
        return tuple(dict.fromkeys(s for s in (self.start, *(x for span in self.runs for x in span)) if s))

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "runs": [list(span) for span in self.runs],
                "changed_runs": list(self.changed_runs), "log": list(self.log)}

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any] | None) -> BootClock | None:
        """The clock a boot's facts hold (BootRow.facts), None for a boot stored without one."""
        d = (facts or {}).get("clock")
        if not isinstance(d, Mapping):
            return None
        runs = tuple((str(span[0]), str(span[1])) for span in d.get("runs") or () if len(span) == 2)
        return cls(str(d.get("start") or ""), runs, tuple(str(line) for line in d.get("log") or ()))


def from_hello(hello: Mapping[str, Any], runs: Iterable[tuple[str, str]] = ()) -> BootClock:
    """A boot's clock from its agent's hello and the (before, after) clocksources of its runs."""
    return BootClock(str(hello.get("clocksource") or ""), tuple(runs),
                     tuple(str(line) for line in hello.get("clock_log") or ()))


def summary(clocks: Iterable[BootClock]) -> str:
    """The clocksource of a set of boots for a report: "hpet"; "hpet in 10 boots, tsc in 2";
    with "changed during N run(s)" when a run's changed; "" when no boot recorded one."""
    boots = list(clocks)
    seen = Counter(" then ".join(c.sources) for c in boots if c.sources)
    if not seen:
        return ""
    text = (next(iter(seen)) if len(seen) == 1 else
            ", ".join(f"{name} in {n} boot{'s' * (n != 1)}" for name, n in seen.most_common()))
    moved = sum(len(c.changed_runs) for c in boots)
    return text + (f"; changed during {moved} run{'s' * (moved != 1)}" if moved else "")


def sides_note(sides: Mapping[str, Iterable[tuple[str, str]]]) -> str:
    """A line for a table of sides (variants, parent and culprit) measured from their runs'
    (before, after) clocksources: each side's clocksources, and a warning when they differ
    ("" when no run recorded one)."""
    named = {side: tuple(dict.fromkeys(x for span in spans for x in span if x)) for side, spans in sides.items()}
    named = {side: names for side, names in named.items() if names}
    if not named:
        return ""
    kinds = set(named.values())
    if len(kinds) == 1 and len(next(iter(kinds))) == 1:
        return f"the guest's clocksource: {next(iter(kinds))[0]}"
    listed = ", ".join(f"{side} {'/'.join(names)}" for side, names in named.items())
    return (f"the guest's clocksource differed: {listed}; a difference in CPU time or latency between them can be "
            "the clock's (docs/metrics.md)")
