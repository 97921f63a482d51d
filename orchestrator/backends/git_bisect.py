"""`git bisect` in a vmbisect-owned bare clone: real bisect semantics, never the user's tree.

The clone owns its objects (a local clone hard-links the user's object files; later commits are
fetched), so a user repository deleted and made again, or rebased and pruned, cannot take
objects from under a campaign (issue #21); the endpoints a bisection starts from are kept under
refs/vmbisect/ so the range stays reachable whatever the user's branches do. It is bisected
with `--no-checkout`, so no working tree is written anywhere; the builder checks commits out in
its own place. A clone an older vmbisect made with `--shared`, or one whose refs name missing
objects, is made again at start and at resume (the reverts it held are made again, with the
same hashes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from orchestrator.backends.gitlog import BisectState, parse_bisect_output
from orchestrator.errors import InfraError, UserError
from orchestrator.kbuild.gitrepo import clone_options, no_background, stale

VERDICTS = ("good", "bad", "skip")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author: str
    email: str
    date: str
    subject: str


def git(repo: Path, *args: str, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env_free = ["-c", "advice.detachedHead=false", "-c", "core.hooksPath=/dev/null"]
    try:
        done = subprocess.run(["git", *env_free, "-C", str(repo), *args], capture_output=True, text=True,
                              env={**os.environ, **env} if env else None)
    except FileNotFoundError as exc:
        raise InfraError("git not found (run: make setup)") from exc
    if check and done.returncode != 0:
        raise InfraError(f"git {' '.join(args[:3])} failed: {(done.stderr or done.stdout).strip()[:400]}")
    return done


@dataclass(frozen=True)
class RangeFacts:
    """What git says of a campaign's two endpoints, read before anything is recorded: their
    commits, whether good is an ancestor of bad (or bad of good), and their merge base ("" when
    they share no history)."""

    good: str
    bad: str
    good_before_bad: bool
    bad_before_good: bool
    merge_base: str


def range_facts(repo: Path, good: str, bad: str) -> RangeFacts:
    """RangeFacts of two revisions that name commits of `repo` (checked before)."""
    def sha(rev: str) -> str:
        return git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").stdout.strip()

    def before(a: str, b: str) -> bool:
        return git(repo, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    g, b = sha(good), sha(bad)
    base = git(repo, "merge-base", g, b, check=False)
    return RangeFacts(g, b, before(g, b), before(b, g), base.stdout.strip() if base.returncode == 0 else "")


def range_problem(f: RangeFacts) -> str | None:
    """Why the endpoints cannot be bisected, in one line naming the field, or None: a bisection
    needs bad to descend from good and be another commit."""
    g, b = f.good[:12], f.bad[:12]
    if f.good == f.bad:
        return f"bad: names the same commit as good ({b}); a bisection needs a good commit and a later bad one"
    if f.good_before_bad:
        return None
    if f.bad_before_good:
        return f"bad: {b} is an ancestor of good {g}: the range is reversed (good is the older commit)"
    if not f.merge_base:
        return f"bad: {b} shares no history with good {g}; both must be commits of one history"
    return (f"bad: {b} does not descend from good {g} (they diverge at {f.merge_base[:12]}); give a good commit "
            "that bad descends from")


class GitBisect:
    def __init__(self, user_repo: Path, workdir: Path, note: Callable[[str], None] = lambda _msg: None) -> None:
        self.user_repo = user_repo
        self.repo = workdir / "bisect.git"
        self.note = note

    def prepare(self) -> None:
        """Clone (or refresh) the bare working copy of the user's repository; made again when
        it is stale (gitrepo.stale), before any work."""
        if not (self.user_repo / ".git").exists() and not (self.user_repo / "HEAD").exists():
            raise UserError(f"repository: {self.user_repo} is not a git repository")
        if self.repo.exists() and (why := stale(self.repo)):
            self.note(f"made its clone of {self.user_repo} again: {why}")
            shutil.rmtree(self.repo)
        if not self.repo.exists():
            self.repo.parent.mkdir(parents=True, exist_ok=True)
            # --dissociate: a user's repository that borrows objects hands its alternates on otherwise
            git(self.repo.parent, "clone", "--quiet", "--bare", "--dissociate", *clone_options(),
                str(self.user_repo.resolve()), str(self.repo))
        else:
            no_background(self.repo)
            git(self.repo, "fetch", "--quiet", "--force", str(self.user_repo.resolve()), "+refs/*:refs/*")

    def resolve(self, rev: str, field: str) -> str:
        done = git(self.repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if done.returncode != 0:
            raise UserError(f"{field}: {rev!r} is not a commit in {self.user_repo}")
        return done.stdout.strip()

    def start(self, good: str, bad: str, first_parent: bool = False) -> BisectState:
        for name, commit in (("good", good), ("bad", bad)):  # the range stays reachable in this clone
            git(self.repo, "update-ref", f"refs/vmbisect/{name}", commit)
        git(self.repo, "bisect", "reset", check=False)
        args = ["bisect", "start", "--no-checkout"] + (["--first-parent"] if first_parent else [])
        return parse_bisect_output(git(self.repo, *args, bad, good).stdout)

    def mark(self, commit: str, verdict: str) -> BisectState:
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        done = git(self.repo, "bisect", verdict, commit, check=False)
        try:
            return parse_bisect_output(done.stdout + done.stderr)
        except ValueError as exc:
            raise InfraError(f"git bisect {verdict} {commit[:12]} failed: {exc}") from exc

    def current(self) -> str:
        return git(self.repo, "rev-parse", "BISECT_HEAD").stdout.strip()

    def log(self) -> str:
        return git(self.repo, "bisect", "log").stdout

    def replay(self, log: str, scratch: Path) -> BisectState:
        """Rebuild the bisection from a `git bisect log` (resume after a crash)."""
        scratch.write_text(log)
        git(self.repo, "bisect", "reset", check=False)
        return parse_bisect_output(git(self.repo, "bisect", "replay", str(scratch)).stdout)

    def info(self, commit: str) -> CommitInfo:
        out = git(self.repo, "show", "-s", "--format=%H%x00%an%x00%ae%x00%aI%x00%s", commit).stdout
        sha, author, email, date, subject = out.rstrip("\n").split("\x00")
        return CommitInfo(sha, author, email, date, subject)

    def subject(self, commit: str) -> str:
        """`commit`'s subject line, read from the clone as it is, or else from the user's
        repository (a commit's id names its content: nothing to fetch, nothing cloned)."""
        try:
            return self.info(commit).subject
        except InfraError:
            return git(self.user_repo, "show", "-s", "--format=%s", "--end-of-options", commit).stdout.rstrip("\n")

    def parent(self, commit: str) -> str:
        return git(self.repo, "rev-parse", f"{commit}^").stdout.strip()

    def count_between(self, good: str, bad: str, first_parent: bool = False) -> int:
        args = ["rev-list", "--count"] + (["--first-parent"] if first_parent else []) + [f"{good}..{bad}"]
        return int(git(self.repo, *args).stdout.strip())

    def rev_list(self, good: str, bad: str, first_parent: bool = False) -> str:
        """The candidates, newest first, each with its parents (orchestrator.bisect.posterior's Dag)."""
        args = ["rev-list", "--topo-order", "--parents"] + (["--first-parent"] if first_parent else [])
        return git(self.repo, *args, bad, f"^{good}", "--").stdout

    def is_ancestor(self, ancestor: str, commit: str) -> bool:
        return git(self.repo, "merge-base", "--is-ancestor", ancestor, commit, check=False).returncode == 0

    def restart(self, good: str, bad: str, first_parent: bool, marks: list[tuple[str, str]]) -> BisectState:
        """A fresh bisection with every (commit, verdict) of `marks` applied in order: how the
        engine goes on after re-examined steps changed their verdicts."""
        state = self.start(good, bad, first_parent)
        for commit, verdict in marks:
            state = self.mark(commit, verdict)
        return state

    def revert(self, commit: str, onto: str) -> Revert:
        """`commit` reverted on top of `onto`, as a commit in this clone only (the user's
        repository is never written): a three-way merge of `onto` and commit^ with commit as the
        base, made with plumbing (no working tree). Author, committer and dates are fixed, so
        the same revert gets the same hash on resume."""
        info = self.info(commit)
        env = ["-c", "user.name=vmbisect", "-c", "user.email=vmbisect@localhost"]
        fixed = {"GIT_AUTHOR_DATE": "1970-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "1970-01-01T00:00:00Z",
                 "GIT_AUTHOR_NAME": "vmbisect", "GIT_AUTHOR_EMAIL": "vmbisect@localhost",
                 "GIT_COMMITTER_NAME": "vmbisect", "GIT_COMMITTER_EMAIL": "vmbisect@localhost"}
        parents = git(self.repo, "rev-list", "--parents", "-n", "1", commit).stdout.split()[1:]
        if len(parents) != 1:
            return Revert("", f"{commit[:12]} has {len(parents)} parents; only a single-parent commit is reverted")

        def tree(rev: str) -> str:
            return git(self.repo, "rev-parse", f"{rev}^{{tree}}").stdout.strip()

        def commit_tree(tree_id: str, *parent_ids: str, message: str = "base") -> str:
            args = [x for p in parent_ids for x in ("-p", p)]
            return git(self.repo, *env, "commit-tree", tree_id, *args, "-m", message, env=fixed).stdout.strip()

        base = commit_tree(tree(commit))
        theirs = commit_tree(tree(parents[0]), base)
        ours = commit_tree(tree(onto), base)
        merged = git(self.repo, "merge-tree", "--write-tree", "--name-only", ours, theirs, check=False)
        if merged.returncode != 0:
            reason = [line for line in merged.stdout.splitlines() if line.startswith(("CONFLICT", "error"))]
            return Revert("", "; ".join(reason)[:500] or merged.stderr.strip()[:500] or "merge conflict")
        message = f'Revert "{info.subject}"\n\nThis reverts commit {commit}.\n(made by vmbisect to confirm a culprit)'
        sha = commit_tree(merged.stdout.splitlines()[0].strip(), onto, message=message)
        git(self.repo, "update-ref", f"refs/vmbisect/revert/{commit}", sha)
        return Revert(sha, "")


@dataclass(frozen=True)
class Revert:
    """The revert commit, or why there is none (git's reason for a conflict)."""

    commit: str
    reason: str
