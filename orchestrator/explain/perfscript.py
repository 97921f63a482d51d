"""`perf script` output folded into stacks (pure), as Brendan Gregg's stackcollapse-perf.pl
folds it: one stack per sample, the command's name first, then the frames from the outermost
caller to the sampled function, each sample counted once. A kernel frame (from the kernel or a
module, dso `[kernel.kallsyms]` or `[name]`) carries the suffix `_[k]`; a frame perf could not
name is named after its dso, `[libc.so.6]`, or `[unknown]`. Symbol offsets (`+0x1c`) are
dropped, so one function is one frame however many addresses it was sampled at. A kernel frame
perf named after a linker's section marker (`__sched_text_end` for the idle loop's
`native_safe_halt` at the same address) is named again from the guest's own symbol map
(orchestrator/explain/kallsyms.py): a marker is never a function.

The input is what `perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso` prints for a
`perf record -g` file: a header line per sample (`comm pid/tid [cpu] time: period event:`, the
command's name may hold spaces), its frames one per line (`address symbol (dso)`, innermost
first), a blank line after each sample.

Unlike stackcollapse-perf.pl, a run of one user-space frame repeated (`[unknown]` or
`__gxx_personality_v0` a hundred times over: programs built without frame pointers, walked by
guesswork) is folded into one frame: it says nothing but "somewhere in that program", and it
would make the flame graphs tower. Kernel frames are kept as they are. Folded text (`frame;frame;frame count` a line) is the
form profiles are kept and exchanged in (`folded_text`, `parse_folded`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from orchestrator.errors import InfraError
from orchestrator.explain.kallsyms import SymbolMap, is_marker, section_name

KERNEL = "_[k]"
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,event,ip,sym,dso"
_HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[\d+\]\s+[\d.]+:\s*(?:\d+\s+)?"
                     r"(?P<event>[^\s:]+(?::[a-z]+)?):\s*$")
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)$")
_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def frame_name(symbol: str, dso: str, address: str = "", kernel: SymbolMap | None = None) -> str:
    """One frame's name in a folded stack (see the module's text). A kernel frame perf named
    after a section marker (or could not name) is named again from `kernel`, the guest's symbol
    map, by its `address`: a marker is never a function (orchestrator/explain/kallsyms.py); without
    the map, after the marker's section."""
    sym = _OFFSET.sub("", symbol)
    in_kernel = dso.startswith("[") and dso != "[unknown]" and not dso.startswith("[vdso")
    if in_kernel and (is_marker(sym) or sym in ("", "[unknown]")):
        named = kernel.name(int(address, 16)) if kernel and address else None
        sym = named or (section_name(sym) if is_marker(sym) else sym)
    if sym in ("", "[unknown]"):
        base = dso.rsplit("/", 1)[-1]
        sym = f"[{base}]" if base and base != "[unknown]" and not base.startswith("[") else "[unknown]"
    if in_kernel:
        return sym + KERNEL
    return sym


def _clean(name: str) -> str:
    """A frame name without the two characters folded text uses: `;` between frames, a space
    before the count (C++ and Rust names may hold both)."""
    return name.replace(";", ":").replace(" ", "_")


def fold_script(text: str, kernel: SymbolMap | None = None) -> tuple[Counter[tuple[str, ...]], str]:
    """The folded stacks of `perf script` output and the event sampled (e.g. `cpu-clock`), its
    kernel frames named with `kernel` where perf named a section marker (`frame_name`);
    InfraError on a line this parser does not know (the profile would be wrong, not short)."""
    stacks: Counter[tuple[str, ...]] = Counter()
    events: set[str] = set()
    comm: str | None = None
    frames: list[str] = []

    def close() -> None:
        if comm is not None:
            stacks[(_clean(comm), *_unnamed_once(reversed(frames)))] += 1

    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            close()
            comm, frames = None, []
            continue
        if line.startswith("#"):
            continue
        if comm is None:
            header = _HEADER.match(line)
            if header is None:
                raise InfraError(f"perf script line {number}: not a sample's first line: {line[:120]!r}")
            comm = header["comm"].strip() or "[unknown]"
            events.add(header["event"])
            continue
        frame = _FRAME.match(line)
        if frame is None:
            raise InfraError(f"perf script line {number}: not a frame: {line[:120]!r}")
        frames.append(_clean(frame_name(frame["sym"], frame["dso"], frame["addr"], kernel)))
    close()
    return stacks, ",".join(sorted(events))


def _unnamed_once(frames: Iterable[str]) -> list[str]:
    out: list[str] = []
    for f in frames:
        if not (out and f == out[-1] and not f.endswith(KERNEL)):
            out.append(f)
    return out


def folded_text(stacks: Mapping[tuple[str, ...], int]) -> str:
    """Folded stacks as text, one `frame;frame count` a line, sorted."""
    return "".join(f"{';'.join(s)} {n}\n" for s, n in sorted(stacks.items()))


def parse_folded(text: str | Iterable[str]) -> Counter[tuple[str, ...]]:
    """Folded text back into stacks; InfraError on a line without a count."""
    lines = text.splitlines() if isinstance(text, str) else text
    stacks: Counter[tuple[str, ...]] = Counter()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        stack, _sp, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            raise InfraError(f"folded stacks line {number}: no `stack count`: {line[:120]!r}")
        stacks[tuple(_unmarked(f) for f in stack.split(";"))] += int(count)
    return stacks


def _unmarked(frame: str) -> str:
    """A kernel frame folded before markers were named again (a profile stored by an older
    vmbisect): named after the marker's section."""
    base = frame.removesuffix(KERNEL)
    return section_name(base) + KERNEL if base != frame and is_marker(base) else frame
