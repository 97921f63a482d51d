"""What a running campaign has left, for the dashboard and for each kind's estimate (Kind.left):
the boots still to come and what that rests on, in words. Boots left, per kind:

    bisect   the endpoints' first boots not yet done (at least one more of each while they are
             undecided), steps left ~ ceil(log2(commits left)) (the
             commits left from the bisect log's marks) times the boots a step took so far,
             then the confirmation and revert pairs not yet decided
    verify   the boots per side asked for, on both sides (and both again with a revert)
    compare  the boots of the comparison's schedule not yet stored

The marks of a stored `git bisect log` are read here (`marks`), and a campaign's commits from
its clone or the user's repository, read-only (`commits_of`); the rest is pure.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from orchestrator.decisions import Decided, Role, Verdict
from orchestrator.errors import InfraError

if TYPE_CHECKING:
    from orchestrator.store import CampaignRow, Store

_MARK = re.compile(r"^# (good|bad|skip): \[([0-9a-f]{40})\] ?(.*)$", re.MULTILINE)
_FOUND = re.compile(r"^# first bad commit: \[([0-9a-f]{40})\] ?(.*)$", re.MULTILINE)
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Marks:
    """The marks of a stored `git bisect log`: the last bad commit, the good and skipped ones,
    the first bad commit once git named it, and every commit's subject the log carries."""

    bad: str = ""
    goods: tuple[str, ...] = ()
    skips: tuple[str, ...] = ()
    found: str = ""
    subjects: Mapping[str, str] | None = None


def marks(log: str) -> Marks:
    bad, goods, skips, subjects = "", [], [], {}
    for verdict, sha, subject in _MARK.findall(log):
        if subject:  # vmbisect's own log (posterior.bisect_log) names no subjects: git gives them
            subjects[sha] = subject
        if verdict == Verdict.BAD:  # git bisect log words, as git writes them
            bad = sha
        elif verdict == Verdict.GOOD:
            goods.append(sha)
        else:
            skips.append(sha)
    found = _FOUND.search(log)
    if found and found.group(2):
        subjects[found.group(1)] = found.group(2)
    return Marks(bad, tuple(goods), tuple(skips), found.group(1) if found else "", subjects)


def steps_left(commits: int) -> int:
    """Halvings to single out the first bad one of `commits` candidates."""
    return 0 if commits <= 1 else math.ceil(math.log2(commits))


@dataclass(frozen=True)
class Estimate:
    """Boots still to come (None: not known) and what that rests on, in words."""

    boots_left: int | None
    basis: str
    fraction: float | None = None  # of the campaign's boots done, when the total is known
    range_commits: int | None = None  # a bisection's range: the commits between good and bad (None: not one, or unread)
    steps_taken: int = 0
    steps_left: int | None = None

    def range_words(self) -> str:
        """A bisection's range and steps in words, as status, the dashboard and the report say
        them: "10,000 commits from good to bad; 9 steps taken, ~5 left" ("" without a range)."""
        if self.range_commits is None:
            return ""
        taken = f"{self.steps_taken} step{'s' * (self.steps_taken != 1)} taken"
        left = f", ~{self.steps_left} left" if self.steps_left else ""  # none left: said by the answer
        return f"{self.range_commits:,} commit{'s' * (self.range_commits != 1)} from good to bad; {taken}{left}"


def bisect_estimate(decisions: Sequence[Decided], boot_commits: Sequence[str], boots_per_commit: int,
                    commits_left: int | None, range_commits: int | None = None) -> Estimate:
    """A running bisection's boots left: see the module's docstring. `boot_commits`: the commit
    of every boot so far, in order; `commits_left`: candidates for the first bad commit (None
    when no repository could be read); `range_commits`: the whole range's."""
    roles = Counter(d.role for d in decisions)
    taken = roles[Role.STEP]
    step_commits = {d.commit for d in decisions if d.role is Role.STEP}
    step_boots = sum(1 for c in boot_commits if c in step_commits)
    per_step = step_boots / len(step_commits) if step_commits else float(boots_per_commit)
    pair = 2 * boots_per_commit
    # undecided endpoints: their first boots, or at least one more of each (the noise may ask for more)
    endpoints_left = 0 if roles[Role.GOOD] and roles[Role.BAD] else max(2, pair - len(boot_commits))
    pairs_left = max(0, 2 - roles[Role.CONFIRM] - roles[Role.REVERT]) * pair
    if commits_left is None:
        return Estimate(None, "commits left unknown (the repository cannot be read here)", None, range_commits, taken)
    steps = steps_left(commits_left)
    left = endpoints_left + round(steps * per_step) + pairs_left
    done = len(boot_commits)
    words = (f"~{steps} step{'s' * (steps != 1)} left of {commits_left:,} commit{'s' * (commits_left != 1)}, "
             f"{per_step:.3g} boots a step, then the confirmation")
    return Estimate(left, words, done / (done + left) if done + left else None, range_commits, taken, steps)


def fixed_estimate(total: int, done: int, what: str) -> Estimate:
    """A campaign whose boots are known in advance (verify, compare)."""
    left = max(0, total - done)
    return Estimate(left, f"{left} of {total} {what} boots left", min(1.0, done / total) if total else None)


class Commits:
    """Read-only git of one campaign: vmbisect's clone of it when this machine has it, else the
    user's repository; nothing at all when neither is here (another machine's campaign)."""

    def __init__(self, repo: Path | None) -> None:
        self.repo = repo

    def _git(self, *args: str) -> str | None:
        from orchestrator.backends.git_bisect import git

        if self.repo is None:
            return None
        try:
            done = git(self.repo, *args, check=False)
        except InfraError:
            return None
        return done.stdout if done.returncode == 0 else None

    def count(self, bad: str, goods: tuple[str, ...], first_parent: bool = False) -> int | None:
        """Commits reachable from `bad` and from none of `goods` (along first parents only with
        `first_parent`)."""
        out = self._git("rev-list", "--count", *(["--first-parent"] if first_parent else []), "--end-of-options", bad,
                        *(f"^{g}" for g in goods))
        return int(out) if out and out.strip().isdigit() else None

    def resolve(self, rev: str) -> str:
        out = self._git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        return out.strip() if out else ""

    def subjects(self, shas: list[str]) -> dict[str, str]:
        wanted = sorted({s for s in shas if _SHA.fullmatch(s)})
        out = self._git("show", "-s", "--format=%H%x00%s", *wanted) if wanted else None
        pairs = (line.split("\x00", 1) for line in (out or "").splitlines() if "\x00" in line)
        return {sha: subject for sha, subject in pairs}


def commits_of(store: Store, row: CampaignRow, spec: Any) -> Commits:
    """The commits of a campaign's repository, read in its clone when it has one, else in the
    user's repository (nothing is cloned for an estimate)."""
    from orchestrator.bisect.workdir import clone

    repo = getattr(getattr(spec, "campaign", None), "repository", None) or getattr(spec, "repo", None)
    if repo is None:
        return Commits(None)
    made = clone(store, row.id, Path(repo)).repo
    if made.is_dir():
        return Commits(made)
    return Commits(Path(repo) if Path(repo).is_dir() else None)
