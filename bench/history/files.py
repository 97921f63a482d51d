"""What each commit of a kernel-shaped history changes in the files of the release it starts
from (pure, over the release's tree listing and the contents of the files it touches).

A file's content at a commit follows from the changes in the commit's history, applied oldest
first (as a merge of changes that never overlap): compiled code is a line after the end of one
of a .c file's functions, drawn at random (`static const char vmbisect_gen_N[] __used = "N";`:
a symbol kept in the image, no behaviour; changes at different places revert cleanly, as most
of a real history's do), a header change a macro before the header's last `#endif` (every file
including it is compiled again, nothing changes in the image), a comment a comment line after a
function, a documentation change a line at the end of a .rst file. The build break is such a
line without its semicolon in kernel/fork.c (the fix adds it), the boot break a late
initcall in init/main.c that panics (the fix removes it), a revert removes the lines of the
commit it reverts, and the culprit is the mechanism's patch, from the example series that
plants it (examples/: one file set nothing else touches).
"""

from __future__ import annotations

import posixpath
import random
from dataclasses import dataclass, field
from typing import Callable, Iterable

from bench.history.shape import Kind, Node, Shape

BUILD_FILE = "kernel/fork.c"  # compiled in every configuration
BOOT_FILE = "init/main.c"
# Headers most of the tree includes: a change rebuilds most of what is compiled.
HEADERS = ("include/linux/kernel.h", "include/linux/slab.h", "include/linux/fs.h", "include/linux/sched.h",
           "include/linux/mm.h", "include/linux/blkdev.h", "include/linux/netdevice.h", "include/linux/skbuff.h",
           "include/linux/device.h", "include/linux/interrupt.h")
# Where compiled code is drawn from (x86 and the architecture-independent tree) and where not:
# code built for the boot loader, the vDSO, the EFI stub or the host has other compiler flags.
TOPS = ("arch/x86/", "block/", "certs/", "crypto/", "drivers/", "fs/", "init/", "io_uring/", "ipc/", "kernel/",
        "lib/", "mm/", "net/", "security/", "sound/", "virt/")
NOT_KERNEL = ("arch/x86/boot/", "arch/x86/realmode/", "arch/x86/purgatory/", "arch/x86/entry/vdso/",
              "arch/x86/tools/", "drivers/firmware/efi/libstub/", "lib/vdso/", "kernel/bpf/preload/", "lib/raid6/",
              "lib/decompress", "lib/zlib", "lib/xz/", "lib/lz4/", "lib/zstd/")
MAX_SIZE = 40_000  # bytes: files this large at most are changed (the history's volume)


@dataclass(frozen=True)
class Pools:
    """The release's files a generated change may touch."""

    code: tuple[str, ...]
    docs: tuple[str, ...]
    headers: tuple[str, ...]


def pools(listing: Iterable[tuple[str, int]], host_dirs: set[str], reserved: set[str]) -> Pools:
    """From the release's files and sizes: the .c files of the kernel proper (not in a
    directory that builds host or user programs, `host_dirs`, nor `reserved` for the planted
    changes), the .rst files of Documentation/, and the HEADERS the release has."""
    code, docs, names = [], [], set()
    for path, size in listing:
        names.add(path)
        if path in reserved or size > MAX_SIZE:
            continue
        if (path.endswith(".c") and path.startswith(TOPS) and not path.startswith(NOT_KERNEL)
                and posixpath.dirname(path) not in host_dirs):
            code.append(path)
        elif path.startswith("Documentation/") and path.endswith(".rst"):
            docs.append(path)
    return Pools(tuple(sorted(code)), tuple(sorted(docs)), tuple(h for h in HEADERS if h in names))


@dataclass(frozen=True)
class Op:
    """One change to one file: `text` added under `key` (a commit's index; the fix of a build
    break sets its break's line again), or the key's line removed (`text` None). `at`: where,
    as a fraction of the file's function ends (1.0: the end of the file)."""

    commit: int
    key: int
    text: str | None
    at: float = 1.0


@dataclass
class Changes:
    """Every commit's changes: file -> its operations oldest first; commit -> the files it
    touches; the culprit's files, replaced whole by the mechanism's patch."""

    ops: dict[str, list[Op]] = field(default_factory=dict)
    touched: dict[int, list[str]] = field(default_factory=dict)
    subjects: dict[int, str] = field(default_factory=dict)

    def add(self, path: str, op: Op) -> None:
        self.ops.setdefault(path, []).append(op)
        self.touched.setdefault(op.commit, [])
        if path not in self.touched[op.commit]:
            self.touched[op.commit].append(path)


def area(path: str) -> str:
    """The subsystem a path names in a subject: its directory (two levels under drivers/,
    arch/, fs/ and net/)."""
    parts = path.split("/")[:-1]
    return "/".join(parts[:2 if parts and parts[0] in ("drivers", "arch", "fs", "net") else 1]) or path


def changes(shape: Shape, pool: Pools, seed: int, culprit_files: tuple[str, ...], culprit_subject: str) -> Changes:
    """What each commit changes; each topic branch draws half its files from one directory."""
    rng = random.Random(seed)
    out = Changes()
    by_dir: dict[str, list[str]] = {}
    for path in pool.code:
        by_dir.setdefault(posixpath.dirname(path), []).append(path)
    home: dict[int, str] = {}
    for i, node in enumerate(shape.nodes):
        if node.topic >= 0 and node.topic not in home:
            home[node.topic] = posixpath.dirname(rng.choice(pool.code))
        kind = node.kind
        if kind is Kind.CODE or kind is Kind.COMMENT:
            local = by_dir[home[node.topic]] if node.topic >= 0 and rng.random() < 0.5 else pool.code
            files = rng.sample(local, min(len(local), rng.choice((1, 1, 1, 2, 3))))
            for f in files:
                line = (f'static const char vmbisect_gen_{i}[] __used = "{i}";\n' if kind is Kind.CODE else
                        f"/* {i}: see the history's generated changes */\n")
                out.add(f, Op(i, i, line, rng.random()))
            what = "keep symbol" if kind is Kind.CODE else "comment"
            out.subjects[i] = f"{area(files[0])}: {what} {i} in {posixpath.basename(files[0])}"
        elif kind is Kind.HEADER:
            f = rng.choice(pool.headers)
            out.add(f, Op(i, i, f"#define VMBISECT_GEN_{i} {i}\n"))
            out.subjects[i] = f"{posixpath.basename(f)}: define VMBISECT_GEN_{i}"
        elif kind is Kind.DOC:
            f = rng.choice(pool.docs)
            out.add(f, Op(i, i, f"\nChange {i} of the generated history.\n"))
            out.subjects[i] = f"Documentation: {posixpath.basename(f)}: note change {i}"
        elif kind is Kind.BUILD_BREAK:
            out.add(BUILD_FILE, Op(i, i, f'static const char vmbisect_gen_{i}[] __used = "{i}"\n'))
            out.subjects[i] = f"fork: keep symbol {i}"
        elif kind is Kind.BUILD_FIX:
            broken = next(j for j in reversed(range(i)) if shape.nodes[j].kind is Kind.BUILD_BREAK)
            out.add(BUILD_FILE, Op(i, broken, f'static const char vmbisect_gen_{broken}[] __used = "{broken}";\n'))
            out.subjects[i] = f"fork: fix the build after keeping symbol {broken}"
        elif kind is Kind.BOOT_BREAK:
            out.add(BOOT_FILE, Op(i, i, f"\nstatic int __init vmbisect_gen_{i}(void)\n{{\n"
                                        f'\tpanic("vmbisect: the boot check of change {i} failed");\n'
                                        f"\treturn 0;\n}}\nlate_initcall(vmbisect_gen_{i});\n"))
            out.subjects[i] = f"init: check the boot at late init ({i})"
        elif kind is Kind.BOOT_FIX:
            broken = next(j for j in reversed(range(i)) if shape.nodes[j].kind is Kind.BOOT_BREAK)
            out.add(BOOT_FILE, Op(i, broken, None))
            out.subjects[i] = f"init: drop the boot check of change {broken}"
        elif kind is Kind.REVERT:
            target = node.reverts
            for f in out.touched.get(target, []):
                out.add(f, Op(i, target, None))
            out.subjects[i] = f'Revert "{out.subjects.get(target, target)}"'
        elif kind is Kind.CULPRIT:
            out.touched[i] = list(culprit_files)
            out.subjects[i] = culprit_subject
        elif kind is Kind.MERGE:
            out.subjects[i] = merge_subject(shape, node)
    return out


def merge_subject(shape: Shape, node: Node) -> str:
    other = shape.nodes[node.parents[-1]]
    if node.topic < 0:
        return f"Merge branch 'topic-{other.topic}'"
    if other.topic < 0:
        return f"Merge branch 'master' into topic-{node.topic}"
    return f"Merge branch 'topic-{node.topic}-sub' into topic-{node.topic}"


def function_ends(base: str) -> list[int]:
    """The offsets just past each line of `base` that is "}" (a function's end), then the end."""
    ends, at = [], base.find("\n}\n")
    while at >= 0:
        ends.append(at + 3)
        at = base.find("\n}\n", at + 2)
    if base.startswith("}\n"):
        ends.insert(0, 2)
    return ends


def content(base: str, path: str, ops: list[Op], holds: Callable[[int], bool], ends: list[int]) -> str:
    """`path`'s content at a commit: `base` with the ops of the commits its history `holds`,
    oldest first; each line after the function end its `at` names (`ends`, function_ends), or
    at the end; a header's before its last #endif."""
    present: dict[int, Op] = {}
    for op in ops:
        if holds(op.commit):
            if op.text is None:
                present.pop(op.key, None)
            else:
                present[op.key] = op
    if path.endswith(".h"):
        lines = "".join(str(present[k].text) for k in sorted(present))
        at = base.rfind("#endif")
        return base[:at] + lines + base[at:] if at >= 0 else base + lines
    if not present:
        return base
    places = sorted((ends[min(len(ends) - 1, int(op.at * len(ends)))] if ends and op.at < 1.0 else len(base), k)
                    for k, op in present.items())
    out, last = [], 0
    for where, k in places:
        out += [base[last:where], str(present[k].text)]
        last = where
    out.append(base[last:])
    return "".join(out)
