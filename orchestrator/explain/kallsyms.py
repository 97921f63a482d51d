"""A kernel's symbol map (pure): `/proc/kallsyms` or a `System.map` (`address type name [module]`
a line) and the function an address lies in.

perf names a kernel address after the nearest symbol at or before it, and a kernel's symbol
table holds, beside its functions, the linker's section markers (`__sched_text_end`, `_etext`,
`__cpuidle_text_start`, `__entry_text_start` ...): where a marker shares an address with the first
function of the next section (in a 6.1 guest-base kernel `__sched_text_end`,
`__cpuidle_text_start` and `native_safe_halt`, the idle loop's halt), perf may name the marker,
and half of a guest's samples then read as a function that does not exist. Here a marker is
never a function: an address takes the last function at or before it, and when a marker lies
between that function and the address (a section the map names no function in) the address is
named after its section (`[.cpuidle.text]`, `[after:.sched.text]`). Only text symbols (types t, T, w, W) are functions;
the linker's `__start_SECTION` / `__stop_SECTION` of data sections are never text."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

TEXT_TYPES = frozenset("tTwW")
# the linker's markers among text symbols: section starts and ends, the kernel's text bounds
_MARKER = re.compile(r"^(__\w+_text_(start|end)|_s?text|_etext|_sinittext|_einittext|_end|_edata|_sdata|__init_begin"
                     r"|__init_end|__indirect_thunk_(start|end)|__bss_(start|stop)|__end_rodata\w*|__start_rodata)$")
_SECTION = re.compile(r"^__(\w+)_text_(start|end)$")
IDLE_SECTION = "cpuidle"  # .cpuidle.text: the idle loop's own section (noinstr)


def is_marker(name: str) -> bool:
    """A linker's section marker, never a function."""
    return bool(_MARKER.match(name))


def section_name(marker: str) -> str:
    """What a kernel frame that perf named after `marker` is, as far as the name tells (one word,
    as a frame of folded text): the idle loop for the idle section's start, else the code after
    (or at the start of) a section."""
    m = _SECTION.match(marker)
    if m is None:
        return "[kernel.text]"
    section, end = m.group(1), m.group(2) == "end"
    if section == IDLE_SECTION and not end:
        return "[idle:.cpuidle.text]"
    return f"[after:.{section}.text]" if end else f"[.{section}.text]"


@dataclass(frozen=True)
class SymbolMap:
    """The functions of a kernel by address, and its section markers."""

    starts: tuple[int, ...]  # functions' addresses, ascending
    names: tuple[str, ...]
    markers: tuple[int, ...]  # the markers' addresses, ascending
    marker_names: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> "SymbolMap":
        """`/proc/kallsyms` or `System.map` text; lines of other forms and zero addresses (a
        kernel that hides them) are left out."""
        functions: dict[int, str] = {}
        markers: dict[int, str] = {}
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 3 or parts[1] not in TEXT_TYPES:
                continue
            try:
                addr = int(parts[0], 16)
            except ValueError:
                continue
            if addr == 0:
                continue
            name = parts[2]
            if is_marker(name):
                if addr not in markers or (name.endswith("_start") and not markers[addr].endswith("_start")):
                    markers[addr] = name  # of a section's end and the next one's start, the start names what follows
            else:
                functions.setdefault(addr, name)  # of two at one address, the first listed
        fs, ms = sorted(functions.items()), sorted(markers.items())
        return cls(tuple(a for a, _ in fs), tuple(n for _, n in fs), tuple(a for a, _ in ms), tuple(n for _, n in ms))

    def __bool__(self) -> bool:
        return bool(self.starts)

    def name(self, address: int) -> str | None:
        """The function `address` lies in, its section when the map names none there, None
        below the first function."""
        at = bisect.bisect_right(self.starts, address) - 1
        if at < 0:
            return None
        m = bisect.bisect_right(self.markers, address) - 1
        if m >= 0 and self.markers[m] > self.starts[at]:
            return section_name(self.marker_names[m])
        return self.names[at]
