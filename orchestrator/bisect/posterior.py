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
_ROWS = 512  # rows of the ancestry matrix unpacked at a time


class Dag:
    """The candidates, oldest first (parents before children), with their ancestry among
    themselves: row i of the packed matrix has bit j set when candidate j is an ancestor of
    candidate i or i itself. A line (every commit's only candidate parent is the one before)
    needs no matrix."""

    def __init__(self, commits: Sequence[str], parents: Mapping[str, Sequence[str]]) -> None:
        self.commits = tuple(commits)
        self.index = {c: i for i, c in enumerate(self.commits)}
        n = len(self.commits)
        if len(self.index) != n:
            raise ValueError("a candidate is listed twice")
        self.parents = {c: tuple(p for p in parents.get(c, ()) if p in self.index) for c in self.commits}
        for c, ps in self.parents.items():
            if any(self.index[p] >= self.index[c] for p in ps):
                raise ValueError(f"{c[:12]} is listed before its parent: candidates go oldest first")
        self.line = all(ps == ((self.commits[i - 1],) if i else ()) for i, (c, ps) in
                        enumerate((c, self.parents[c]) for c in self.commits))
        self._anc: np.ndarray | None = None
        if not self.line:
            rows = np.zeros((n, (n + 7) // 8), dtype=np.uint8)
            for i, c in enumerate(self.commits):
                for p in self.parents[c]:
                    rows[i] |= rows[self.index[p]]
                rows[i, i // 8] |= np.uint8(0x80 >> (i % 8))
            self._anc = rows

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

    def ancestry(self, i: int) -> np.ndarray:
        """Row i as booleans: the candidates that are ancestors of candidate i or i itself."""
        if self._anc is None:
            row = np.zeros(len(self), dtype=bool)
            row[: i + 1] = True
            return row
        return np.unpackbits(self._anc[i], count=len(self)).astype(bool)

    def bad_mass(self, weights: np.ndarray) -> np.ndarray:
        """For every candidate x, the weight of the culprits that make x bad (its ancestry)."""
        if self._anc is None:
            return np.cumsum(weights)
        out = np.empty(len(self))
        for r0 in range(0, len(self), _ROWS):
            block = np.unpackbits(self._anc[r0:r0 + _ROWS], axis=1, count=len(self))
            out[r0:r0 + _ROWS] = block @ weights
        return out

    def is_ancestor(self, a: str, b: str) -> bool:
        """`a` is an ancestor of `b` or `b` itself (both candidates)."""
        return bool(self.ancestry(self.index[b])[self.index[a]])


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
    log = np.zeros(len(dag))
    for commit, llr in evidence.items():
        i = dag.index.get(commit)
        if i is not None and llr:
            log += llr * dag.ancestry(i)  # culprits that make it bad: ancestors-or-self
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


def classes(dag: Dag, untestable: Iterable[str]) -> list[list[int]]:
    """Culprits no testable commit tells apart, grouped (each group oldest first): two culprits
    are apart when some testable commit is bad under one and good under the other. Without
    skips every culprit is its own class (itself tells it from its ancestors, and an ancestor
    from it)."""
    off = {dag.index[c] for c in untestable if c in dag.index} | {len(dag) - 1}
    testable = [i for i in range(len(dag)) if i not in off]
    if len(testable) == len(dag) - 1:
        return [[i] for i in range(len(dag))]
    table = np.array([dag.ancestry(i) for i in testable], dtype=bool).reshape(len(testable), len(dag))
    groups: dict[bytes, list[int]] = {}
    for j in range(len(dag)):
        groups.setdefault(np.packbits(table[:, j]).tobytes(), []).append(j)
    return list(groups.values())


def answer(post: Posterior, error: float, untestable: Iterable[str] = ()) -> PosteriorAnswer:
    """The stop rule: a culprit (or a class of untestable ones) with mass >= 1 - error."""
    dag = post.dag
    skipped = any(c in dag.index and c != dag.commits[-1] for c in untestable)
    groups = classes(dag, untestable) if skipped else []
    if not skipped or len(groups) == len(dag):  # every culprit its own class
        top = int(np.argmax(post.weights))
        best, mass = [top], float(post.weights[top])
    else:
        best, mass = max(((g, float(post.weights[g].sum())) for g in groups), key=lambda x: x[1])
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
