"""A kernel-shaped history as a DAG without files (pure): what bench.history writes with git and
what the bisection simulation (bench.bisect_accuracy --history kernel:N) runs on.

The shape of a kernel release's history (LWN's development statistics: 12,000 to 18,000
non-merge commits and on the order of a thousand merges a release): a first-parent chain made
almost only of merges of topic branches, 5 to 300 commits each (median about 10), half of
them based on the release the range starts from (outside the range, as a subsystem tree
forked at the previous release), the others on a point of the main line, recent or older; some
topic branches merge a sub-branch of their own or the main line (a back-merge); a few fixes
directly on the main line; two reverts of earlier changes. A commit changes compiled code (most),
a header many files include (a few), or only comments or documentation (the same kernel as its
parent). Planted, each inside a topic branch of its own: a build-broken range (a commit that
does not compile, fixed a few commits later in the same branch), a boot-broken pair (a commit
whose kernel panics at boot and the next one; the one after removes the panic), and the culprit.

Everything follows from (commits, seed): the same shape on every machine.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from enum import Enum


class Kind(str, Enum):
    MERGE = "merge"
    CODE = "code"  # compiled code in one to three .c files
    HEADER = "header"  # a header many files include
    COMMENT = "comment"  # a comment in a .c file: the same kernel as its parent
    DOC = "doc"  # Documentation/ only: the same kernel as its parent
    REVERT = "revert"  # reverts an earlier code change
    BUILD_BREAK = "build_break"
    BUILD_FIX = "build_fix"
    BOOT_BREAK = "boot_break"
    BOOT_FIX = "boot_fix"
    CULPRIT = "culprit"


NOOP = (Kind.COMMENT, Kind.DOC)
MIN_COMMITS = 50  # room for the three topic branches the planted changes go in


@dataclass(frozen=True)
class Node:
    """One commit: its parents (indices of earlier nodes; none: the release the range starts
    from), what it changes, the topic branch it is on (-1: the main line), the commit it
    reverts (a REVERT)."""

    parents: tuple[int, ...]
    kind: Kind
    topic: int = -1
    reverts: int = -1


@dataclass(frozen=True)
class Shape:
    """The nodes oldest first (parents before children; the last is the main line's tip, the
    range's bad end), the culprit, the commits that do not build and those that do not boot."""

    nodes: tuple[Node, ...]
    culprit: int
    build_broken: tuple[int, ...]
    boot_broken: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.nodes)

    def same_image(self) -> list[list[int]]:
        """Groups of commits with one kernel image: a comment or documentation commit has its
        first parent's (merges are counted as their own, whatever they bring)."""
        root = list(range(len(self.nodes)))
        for i, node in enumerate(self.nodes):
            if node.kind in NOOP and node.parents:
                root[i] = root[node.parents[0]]
        groups: dict[int, list[int]] = {}
        for i, r in enumerate(root):
            groups.setdefault(r, []).append(i)
        return [g for g in groups.values() if len(g) > 1]

    def real(self) -> list[int]:
        """The commits that change the kernel (neither merges nor comment-only)."""
        return [i for i, n in enumerate(self.nodes) if n.kind not in (Kind.MERGE, *NOOP)]


def topic_length(rng: random.Random) -> int:
    """5 to 300 commits, median about 10: a log-normal, clipped."""
    return max(5, min(300, round(math.exp(rng.gauss(math.log(10), 0.9)))))


def change(rng: random.Random) -> Kind:
    r = rng.random()
    return Kind.HEADER if r < 0.02 else Kind.DOC if r < 0.05 else Kind.COMMENT if r < 0.3 else Kind.CODE


def kernel_shape(commits: int, seed: int) -> Shape:
    """A kernel-shaped history of `commits` commits (MIN_COMMITS at least)."""
    if commits < MIN_COMMITS:
        raise ValueError(f"commits: {commits}: a kernel-shaped history needs {MIN_COMMITS} commits at least")
    rng = random.Random(seed)
    nodes: list[Node] = []
    main: list[int] = []  # the main line's commits, oldest first
    topics = 0
    planned: list[int] = []
    while len(nodes) < commits - 1:
        left = commits - len(nodes)
        if not main or rng.random() < 0.05 or left < 7:  # a fix directly on the main line (it starts with one)
            nodes.append(Node(tuple(main[-1:]), change(rng)))
            main.append(len(nodes) - 1)
            continue
        length = min(topic_length(rng) if len(planned) >= 3 else max(8, min(topic_length(rng), commits // 5)),
                     left - 2)
        r = rng.random()
        base = (() if not main or r < 0.5 else (main[max(0, len(main) - 1 - rng.randrange(20))],) if r < 0.8
                else (main[rng.randrange(len(main))],))
        tip = base
        plain = len(planned) < 3  # the first three long ones are kept plain, to plant in
        sub = not plain and 8 <= length <= left - 5 and rng.random() < 0.08  # a sub-branch merged into the topic halfway
        back = not plain and not sub and length >= 8 and rng.random() < 0.03  # the main line merged into it
        for k in range(length):
            if k == length // 2 and sub:
                side = tip
                for _ in range(3):
                    nodes.append(Node(side, change(rng), topics))
                    side = (len(nodes) - 1,)
                nodes.append(Node(tip + side, Kind.MERGE, topics))
                tip = (len(nodes) - 1,)
                continue
            if k == length // 2 and back:
                nodes.append(Node(tip + (main[-1],), Kind.MERGE, topics))
                tip = (len(nodes) - 1,)
                continue
            nodes.append(Node(tip, change(rng), topics))
            tip = (len(nodes) - 1,)
        if not sub and not back and length >= 8:
            planned.append(topics)
        nodes.append(Node((main[-1],) + tip, Kind.MERGE))
        main.append(len(nodes) - 1)
        topics += 1
    while len(nodes) < commits:
        nodes.append(Node((main[-1],), change(rng)))
        main.append(len(nodes) - 1)
    return plant(nodes, planned, rng)


def plant(nodes: list[Node], simple: list[int], rng: random.Random) -> Shape:
    """The build-broken range, the boot-broken pair, the culprit and two reverts, each in a
    topic branch of its own among the `simple` ones (linear, eight commits or more)."""
    by_topic: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        if n.topic >= 0:
            by_topic.setdefault(n.topic, []).append(i)
    if len(simple) < 3:
        raise ValueError("too few topic branches to plant a build break, a boot break and a culprit in")
    chosen = rng.sample(simple, 3)
    build = by_topic[chosen[0]]
    start = rng.randrange(1, len(build) - 5)
    width = rng.randrange(3, 6)
    broken = tuple(build[start:start + width])
    nodes[broken[0]] = Node(nodes[broken[0]].parents, Kind.BUILD_BREAK, chosen[0])
    fix = build[start + width]
    nodes[fix] = Node(nodes[fix].parents, Kind.BUILD_FIX, chosen[0])
    boot = by_topic[chosen[1]]
    at = rng.randrange(0, len(boot) - 3)
    nodes[boot[at]] = Node(nodes[boot[at]].parents, Kind.BOOT_BREAK, chosen[1])
    nodes[boot[at + 2]] = Node(nodes[boot[at + 2]].parents, Kind.BOOT_FIX, chosen[1])
    culprit = rng.choice(by_topic[chosen[2]])
    nodes[culprit] = Node(nodes[culprit].parents, Kind.CULPRIT, chosen[2])
    # two reverts on the main line, each of a code change of a topic branch merged before it
    merge_of = {nodes[i].parents[-1]: i for i, n in enumerate(nodes) if n.topic < 0 and n.kind is Kind.MERGE}
    merged_at = {t: merge_of[ids[-1]] for t, ids in by_topic.items() if ids[-1] in merge_of}
    main = [i for i, n in enumerate(nodes) if n.topic < 0 and n.kind is not Kind.MERGE and i > len(nodes) // 4]
    for where in sorted(rng.sample(main, min(2, len(main)))):
        code = [i for t, m in merged_at.items() if m < where for i in by_topic[t] if nodes[i].kind is Kind.CODE]
        if code:
            nodes[where] = Node(nodes[where].parents, Kind.REVERT, reverts=rng.choice(code))
    return Shape(tuple(nodes), culprit, broken, (boot[at], boot[at + 1]))
