"""Probabilistic bisection on the git DAG: a posterior over where the culprit is (pure).

The candidates are the commits in bad's ancestry and not in good's (`git rev-list bad ^good`),
bad included. "The culprit is c" means: a candidate x is bad exactly when c is an ancestor of x
or x itself, as git bisect reads a history with merges. Each measured commit x brings evidence
as a log likelihood ratio llr(x) = log P(its boots | x bad) / P(its boots | x good); the
posterior of culprit c is the prior times exp(sum of llr(x) over the measured x that c makes
bad) (Waeber, Frazier and Henderson's probabilistic bisection, on a DAG). A flat prior and
noiseless answers (llr = +-NOISELESS) leave exactly git bisect's remaining commits alive, and
the commit whose bad-side mass is nearest one half is git bisect's midpoint on a line.

Nothing here is kept between calls: the posterior is computed again from the evidence the
store holds (each commit's latest llr, from all its boots), so a campaign killed mid-round
resumes with the same posterior. Skipped commits carry no evidence; culprits that no testable
commit can tell apart form one class (git bisect's "only skipped commits left").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Mapping, Sequence

import numpy as np

# An answer from noiseless evidence (a test's mark, a build that decides): more than any sum of
# measured evidence, small enough that exp() of sums stays finite after normalisation.
NOISELESS = 1000.0
# Measured evidence is clipped to a chance of 1e-6 of being wrong: a model that is off (a stray
# boot, an unmodelled drift) may not make one verdict stronger than every later one together.
CLIP = math.log(1e6)
# A commit whose own posterior is below this is out of the search (git bisect's list no longer
# holds it): it is not picked.
ALIVE = 1e-12
# Masses this close count as equal: ties go to the older commit, as git bisect's.
TIE = 1e-9
# A commit whose kernel is already built is picked instead of the best split when its bad-side
# mass is this close to the best one's (posterior.pick).
READY_SLACK = 0.05


class Dag:
    """The candidates, oldest first (parents before children), with their ancestry among
    themselves, in memory and time about linear in the candidates for a kernel's history.

    The candidates fall into segments: runs along which every commit is the only child of the
    one before and has no other candidate parent. A segment enters another commit's ancestry
    whole (only its last commit has children elsewhere), so a commit's ancestors are the commits
    before it in its own segment and whole segments; each segment keeps the set of segments
    before it (a bitset). On a kernel's history, a first-parent chain of merges of topic
    branches, there are about two segments a merge: one decision is a few passes over the
    candidates, never a candidates-by-candidates table."""

    def __init__(self, commits: Sequence[str], parents: Mapping[str, Sequence[str]]) -> None:
        self.commits = tuple(commits)
        self.index = {c: i for i, c in enumerate(self.commits)}
        n = len(self.commits)
        if len(self.index) != n:
            raise ValueError("a candidate is listed twice")
        self.parents = {c: tuple(p for p in parents.get(c, ()) if p in self.index) for c in self.commits}
        up = [[self.index[p] for p in self.parents[c]] for c in self.commits]
        if any(p >= i for i, ps in enumerate(up) for p in ps):
            c = next(self.commits[i] for i, ps in enumerate(up) if any(p >= i for p in ps))
            raise ValueError(f"{c[:12]} is listed before its parent: candidates go oldest first")
        self.line = all(ps == ([i - 1] if i else []) for i, ps in enumerate(up))
        children = [0] * n
        for ps in up:
            for p in ps:
                children[p] += 1
        seg, pos, heads = [0] * n, [0] * n, list[int]()
        for i, ps in enumerate(up):
            if len(ps) == 1 and children[ps[0]] == 1:
                seg[i], pos[i] = seg[ps[0]], pos[ps[0]] + 1
            else:
                seg[i] = len(heads)
                heads.append(i)
        self.seg = np.array(seg, dtype=np.int64)  # each candidate's segment, numbered oldest head first
        self.pos = np.array(pos, dtype=np.int64)  # its place in it
        self.order = np.argsort(self.seg, kind="stable")  # the candidates segment by segment
        sizes = np.bincount(self.seg, minlength=len(heads))
        self.starts = (np.cumsum(sizes) - sizes).astype(np.int64)
        # each segment's ancestor segments (strict) and descendant segments, as bitsets
        above: list[int] = []
        for h in heads:
            bits = 0
            for p in up[h]:
                bits |= above[seg[p]] | (1 << seg[p])
            above.append(bits)
        below = [0] * len(heads)
        for s in range(len(heads) - 1, -1, -1):
            for p in up[heads[s]]:
                below[seg[p]] |= below[s] | (1 << s)
        self._above, self._below = above, below
        # the sums of ancestor segments, as a tree: a segment's ancestors are its first
        # parent's segment and that one's ancestors, plus the segments its head's other parents
        # bring in (`_new`, usually one topic branch's)
        first = np.full(len(heads), -1, dtype=np.int64)
        owner: list[int] = []
        brought: list[int] = []
        for s, h in enumerate(heads):
            if up[h]:
                f = seg[up[h][0]]
                first[s] = f
                extra = above[s] & ~(above[f] | (1 << f))
                for t in _bits(extra, len(heads)):
                    owner.append(s)
                    brought.append(t)
        self._first = first
        self._owner = np.array(owner, dtype=np.int64)
        self._brought = np.array(brought, dtype=np.int64)

    @classmethod
    def from_rev_list(cls, text: str, first_parent: bool = False) -> Dag:
        """From `git rev-list --topo-order --parents bad ^good` (newest first, one commit and its
        parents a line); with `first_parent` only each commit's first parent counts."""
        commits, parents = [], {}
        for line in text.split("\n"):
            if not line.strip():
                continue
            sha, *ps = line.split()
            commits.append(sha)
            parents[sha] = ps[:1] if first_parent else ps
        return cls(commits[::-1], parents)

    def __len__(self) -> int:
        return len(self.commits)

    @property
    def segments(self) -> int:
        return len(self._above)

    def _mask(self, bits: int) -> np.ndarray:
        """A bitset of segments as booleans over the segments."""
        if not bits:
            return np.zeros(self.segments, dtype=bool)
        raw = np.frombuffer(bits.to_bytes((self.segments + 7) // 8, "little"), dtype=np.uint8)
        return np.unpackbits(raw, count=self.segments, bitorder="little").astype(bool)

    def ancestry(self, i: int) -> np.ndarray:
        """The candidates that are ancestors of candidate i or i itself, as booleans."""
        s = int(self.seg[i])
        row = self._mask(self._above[s])[self.seg]
        row |= (self.seg == s) & (self.pos <= self.pos[i])
        return row

    def descent(self, i: int) -> np.ndarray:
        """The candidates that candidate i is an ancestor of, or i itself, as booleans."""
        s = int(self.seg[i])
        row = self._mask(self._below[s])[self.seg]
        row |= (self.seg == s) & (self.pos >= self.pos[i])
        return row

    def evidence_sum(self, llr: Mapping[int, float]) -> np.ndarray:
        """For every candidate c, the sum of llr[x] over the candidates x that c is an ancestor
        of or is (the culprits that make x bad)."""
        per_seg = np.zeros(self.segments)
        steps = np.zeros(len(self) + 1)  # along the candidates segment by segment
        for i, value in llr.items():
            s = int(self.seg[i])
            per_seg += value * self._mask(self._above[s])
            start = int(self.starts[s])
            steps[start] += value
            steps[start + int(self.pos[i]) + 1] -= value
        out = per_seg[self.seg]
        out[self.order] += np.cumsum(steps[:-1])
        return out

    def bad_mass(self, weights: np.ndarray) -> np.ndarray:
        """For every candidate x, the weight of the culprits that make x bad (its ancestry)."""
        if self.line:
            return np.cumsum(weights)
        per_seg = np.bincount(self.seg, weights=weights, minlength=self.segments)
        # the weight of each segment's ancestor segments: along the tree of first segments
        # (the first parent's), each adding its first segment's weight and the segments its
        # other parents brought; summed by pointer jumping (each round doubles the reach)
        step = np.bincount(self._owner, weights=per_seg[self._brought], minlength=self.segments).astype(float)
        has = self._first >= 0
        step[has] += per_seg[self._first[has]]
        ptr = self._first.copy()
        live = ptr >= 0
        while live.any():
            step[live] = step[live] + step[ptr[live]]
            ptr[live] = ptr[ptr[live]]
            live = ptr >= 0
        within = np.cumsum(weights[self.order])
        before = np.concatenate(([0.0], within))[self.starts]
        out = np.empty(len(self))
        out[self.order] = within - before[self.seg[self.order]] + step[self.seg[self.order]]
        return out

    def is_ancestor(self, a: str, b: str) -> bool:
        """`a` is an ancestor of `b` or `b` itself (both candidates)."""
        i, j = self.index[a], self.index[b]
        si, sj = int(self.seg[i]), int(self.seg[j])
        if si == sj:
            return bool(self.pos[i] <= self.pos[j])
        return bool(self._above[sj] >> si & 1)


def _bits(bits: int, width: int) -> list[int]:
    """The positions of a bitset's set bits, lowest first."""
    if bits.bit_count() < 64:
        out = []
        while bits:
            low = bits & -bits
            out.append(low.bit_length() - 1)
            bits ^= low
        return out
    raw = np.frombuffer(bits.to_bytes((width + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, count=width, bitorder="little")).tolist()


def llr_of(p_bad: float) -> float:
    """A step's evidence from the sequential test's P(bad) (stats.step_odds, equal prior odds):
    with a prior of one half the posterior odds are the likelihood ratio, so the log odds are
    the evidence, counted once however often the commit was looked at. Clipped (CLIP)."""
    p = min(max(p_bad, 1e-300), 1 - 1e-16)
    return max(-CLIP, min(CLIP, math.log(p) - math.log1p(-p)))


@dataclass(frozen=True)
class Posterior:
    """`weights`: P(culprit = candidate i); `bad`: P(candidate i is bad), its ancestry's mass."""

    dag: Dag
    weights: np.ndarray
    bad: np.ndarray

    def of(self, commit: str) -> float:
        return float(self.weights[self.dag.index[commit]])

    def p_bad(self, commit: str) -> float:
        return float(self.bad[self.dag.index[commit]])


def posterior(dag: Dag, evidence: Mapping[str, float], point: Mapping[str, float] | None = None,
              impossible: Iterable[str] = ()) -> Posterior:
    """The posterior over the culprit from a flat prior and:

    - `evidence`: commit -> llr that the commit is bad (the latest from all its boots, or
      +-NOISELESS); it moves every culprit in the commit's ancestry;
    - `point`: commit -> log Bayes factor for "this commit is the culprit" (the confirmation
      against its parent and the revert measure that, not a side);
    - `impossible`: commits that cannot be the culprit (a kernel image equal to its parent's).
    Commits outside the candidates are ignored."""
    # culprits that make a commit bad: its ancestors and itself
    log = dag.evidence_sum({dag.index[c]: llr for c, llr in evidence.items() if c in dag.index and llr})
    for commit, bf in (point or {}).items():
        if commit in dag.index:
            log[dag.index[commit]] += bf
    for commit in impossible:
        if commit in dag.index:
            log[dag.index[commit]] = -math.inf
    top = np.max(log)
    if not np.isfinite(top):
        raise ValueError("every candidate is impossible")
    weights = np.exp(log - top)
    weights /= weights.sum()
    return Posterior(dag, weights, dag.bad_mass(weights))


def pick(post: Posterior, slots: int, untestable: Iterable[str] = (), busy: Iterable[str] = (),
         total: int | None = None, ready: Iterable[str] = ()) -> list[str]:
    """The commits a round measures with `slots` free slots: for k = 1..slots the commit whose
    bad-side mass is nearest k/(slots + 1) (the posterior's quantiles on a line, git bisect's
    midpoint for one slot and a flat posterior), each at most once, among the commits still in
    the search (own mass above ALIVE) that are testable (not skipped, not bad itself) and not
    `busy` (measured by another slot). A commit measured before is picked again when it still
    splits the mass (an ambiguous one is revisited). Fewer commits when fewer split the mass;
    ties go to the older commit.

    `total`: the lab's slots when only `slots` of them are free (a slot refilled as it frees):
    the quantiles are k/(total + 1), each commit in flight (`busy`) takes the one nearest its
    bad-side mass, and the free slots take the others, those nearest one half first.

    `ready`: commits whose kernel is built (built ahead): one whose bad-side mass is within
    READY_SLACK of the best commit's is taken instead (a split of 0.45/0.55 carries 99% of the
    information of 0.5/0.5, and the slot starts booting at once)."""
    dag = post.dag
    busy = set(busy)
    off = set(untestable) | busy | {dag.commits[-1]}
    alive = (post.weights > ALIVE) & (post.bad < 1 - ALIVE)
    ok = [i for i in np.flatnonzero(alive).tolist() if dag.commits[i] not in off]
    parts = max(slots, total or 0)
    targets = [k / (parts + 1) for k in range(1, parts + 1)]
    for commit in sorted(busy & set(dag.index), key=dag.index.__getitem__):
        if len(targets) > slots:
            targets.remove(min(targets, key=lambda t: abs(t - float(post.bad[dag.index[commit]]))))
    targets = sorted(sorted(targets, key=lambda t: abs(t - 0.5))[:slots])
    built = {dag.index[c] for c in ready if c in dag.index}
    chosen: list[int] = []
    free = np.array(ok, dtype=int)
    for target in targets:
        if not len(free):
            break
        score = np.abs(post.bad[free] - target)
        best = int(np.flatnonzero(score <= score.min() + TIE)[0])  # the oldest of the nearest
        near = [j for j in np.flatnonzero(score <= score[best] + READY_SLACK).tolist() if int(free[j]) in built]
        if near:
            best = min(near, key=lambda j: (score[j], j))
        chosen.append(int(free[best]))
        free = np.delete(free, best)
    return [dag.commits[i] for i in sorted(chosen)]


class Standing(str, Enum):
    SEARCHING = "searching"
    FOUND = "found"
    ONLY_SKIPPED = "only_skipped"


@dataclass(frozen=True)
class PosteriorAnswer:
    """FOUND: `culprit` holds at least 1 - error of the mass; ONLY_SKIPPED: the culprit is one
    of `candidates` (at least 1 - error together), which no testable commit can tell apart;
    SEARCHING: neither yet (`mass` is the largest class's)."""

    kind: Standing
    culprit: str = ""
    candidates: tuple[str, ...] = ()
    mass: float = 0.0


def classes(dag: Dag, untestable: Iterable[str]) -> np.ndarray:
    """Culprits no testable commit tells apart, as each candidate's class: the oldest
    candidate of its class. Two culprits are apart when some testable commit is bad under one
    and good under the other, so a culprit's class is fixed by the testable commits it makes
    bad (its testable descendants). A class holds one testable commit at most (a testable
    commit tells itself from any other), and an untestable commit u shares the class of a
    testable one only with the oldest of u's testable descendants, when that one's testable
    descendants are u's: only the untestable commits are looked at."""
    off = sorted({dag.index[c] for c in untestable if c in dag.index} | {len(dag) - 1})
    label = np.arange(len(dag))
    testable = np.ones(len(dag), dtype=bool)
    testable[off] = False
    groups: dict[object, list[int]] = {}
    for u in off:
        seen = dag.descent(u) & testable
        count = int(seen.sum())
        if not count:
            key: object = ()
        else:
            first = int(np.argmax(seen))
            same = int((dag.descent(first) & testable).sum()) == count
            key = first if same else np.packbits(seen).tobytes()
        groups.setdefault(key, []).append(u)
    for key, members in groups.items():
        everyone = members + ([key] if isinstance(key, int) else [])
        label[everyone] = min(everyone)
    return label


def answer(post: Posterior, error: float, untestable: Iterable[str] = ()) -> PosteriorAnswer:
    """The stop rule: a culprit (or a class of untestable ones) with mass >= 1 - error."""
    dag = post.dag
    skipped = any(c in dag.index and c != dag.commits[-1] for c in untestable)
    if not skipped:
        top = int(np.argmax(post.weights))
        best, mass = [top], float(post.weights[top])
    else:
        label = classes(dag, untestable)
        masses = np.bincount(label, weights=post.weights, minlength=len(dag))
        top = int(np.argmax(masses))  # ties: the class whose oldest commit is oldest
        best, mass = np.flatnonzero(label == top).tolist(), float(masses[top])
    if mass < 1 - error:
        return PosteriorAnswer(Standing.SEARCHING, mass=mass)
    commits = tuple(dag.commits[i] for i in best)
    if len(commits) == 1:
        return PosteriorAnswer(Standing.FOUND, commits[0], commits, mass)
    return PosteriorAnswer(Standing.ONLY_SKIPPED, "", commits, mass)


class Mark(str, Enum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


def bisect_log(good: str, bad: str, marks: Sequence[tuple[str, Mark]], first_parent: bool = False) -> str:
    """A `git bisect log` a user can replay (`git bisect replay FILE`): the start, then each
    decided commit's latest mark, in the order they were first decided."""
    latest: dict[str, Mark] = {}
    for commit, mark in marks:
        latest[commit] = mark
    lines = [f"git bisect start{' --first-parent' if first_parent else ''}",
             f"# bad: [{bad}]", f"git bisect bad {bad}", f"# good: [{good}]", f"git bisect good {good}"]
    for commit, mark in latest.items():
        lines += [f"# {mark.value}: [{commit}]", f"git bisect {mark.value} {commit}"]
    return "\n".join(lines) + "\n"
