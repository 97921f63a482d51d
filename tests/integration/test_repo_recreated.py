"""Issue #21: vmbisect's clones never depend on objects the user's repository may drop. Real
git, the real kernel builder on the fake kernel tree, the engine with fake guests: a repository
made again at the same path between two campaigns, rebased and pruned in the middle of one,
deleted in the middle of one; a clone an older vmbisect made with --shared."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from orchestrator.backends.git_bisect import GitBisect
from orchestrator.bisect.engine import Engine
from orchestrator.campaign.file import parse_campaign
from orchestrator.errors import InfraError
from orchestrator.kbuild import gitrepo
from orchestrator.kbuild.builder import KernelBuilder
from orchestrator.kbuild.kernelstore import KernelStore
from orchestrator.kbuild.recipe import parse_recipe
from orchestrator.kinds.run import paused_on_infra_error
from orchestrator.measure.kernels import Kernels
from orchestrator.store import Store
from tests.fakes import FakeMeasurer
from tests.integration.fakekernel import commit_all, git, make_tree

RECIPE = parse_recipe(["CONFIG_PRINTK=y"])


def series(path: Path, flavour: str, culprit: int = 5, n: int = 8) -> list[str]:
    """The fake tree and `n` commits, each changing a driver (so each builds its own image);
    commit `culprit` on is slower. Returns the commit ids, oldest first."""
    path.mkdir(parents=True)
    commits = [make_tree(path)]
    for i in range(1, n + 1):
        (path / "drivers" / f"c{i}.c").write_text(f"int c{i}_{flavour};\n")
        commits.append(commit_all(path, f"{flavour} {i}{' (slow)' if i == culprit else ''}"))
    return commits


def slow_from(commits: list[str], culprit: int) -> Callable[[str], float]:
    """Guests of commits[culprit:] read half; the others, and a revert vmbisect made, read 100."""
    bad = set(commits[culprit:])
    return lambda commit: 50.0 if commit in bad else 100.0


class Lab:
    """One user repository path, vmbisect's data (builder work root, kernel store, store)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.repo = tmp, tmp / "linux"
        self.builder = KernelBuilder(KernelStore(tmp / "kernels"), tmp / "kbuild", ccache_dir=None, jobs=2)
        self.store = Store(f"sqlite:///{tmp / 'v.db'}")
        self.notes: list[str] = []
        self.builder.note = self.notes.append

    def engine(self, commits: list[str], measurer: FakeMeasurer) -> tuple[Engine, int]:
        campaign = parse_campaign({"name": "t", "repository": str(self.repo), "good": commits[0],
                                   "bad": commits[-1], "workload": "fake", "runs_per_boot": 2,
                                   "metric": {"name": "iops", "direction": "higher", "threshold": "-20%"}})
        cid = self.store.new_campaign("t", {})
        vcs = GitBisect(self.repo, self.tmp / "campaigns" / str(cid), self.notes.append)
        kernels = Kernels(self.builder, self.repo, RECIPE, None, vcs.repo)
        return Engine(campaign, "higher", vcs, kernels, measurer, self.store), cid


def test_a_repository_made_again_at_the_same_path_does_not_break_the_next_campaign(tmp_path):
    lab = Lab(tmp_path)
    old = series(lab.repo, "old")
    for commit in (old[0], old[-1]):  # what `vmbisect compare --variant good=commit:A ...` built
        lab.builder.build(lab.repo, commit, RECIPE)
    shutil.rmtree(lab.repo)
    new = series(lab.repo, "new")  # rm -rf + a fresh clone: new history, new object ids
    engine, cid = lab.engine(new, FakeMeasurer(slow_from(new, 5), seed=1))
    outcome = engine.run(cid)
    assert outcome.outcome == "found" and outcome.culprit == new[5]
    assert outcome.result.revert.verdict == "revert restores the metric"


class Disturbed(FakeMeasurer):
    """Fake guests that do something to the user's repository after `after` boots."""

    def __init__(self, after: int, action: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.after, self.action = after, action

    def boot(self, kernel: Any, append: str | None = None) -> Any:
        if self.boots == self.after:
            self.action()
        return super().boot(kernel, append)


def test_a_rebase_and_prune_in_the_users_repository_mid_campaign_costs_nothing(tmp_path):
    lab = Lab(tmp_path)
    commits = series(lab.repo, "x")
    value = slow_from(commits, 5)

    def rebase_and_prune() -> None:
        git(lab.repo, "reset", "--quiet", "--hard", commits[2])
        (lab.repo / "drivers" / "other.c").write_text("int other;\n")
        commit_all(lab.repo, "another history")
        git(lab.repo, "reflog", "expire", "--expire=now", "--all")
        git(lab.repo, "gc", "--quiet", "--prune=now")

    engine, cid = lab.engine(commits, Disturbed(6, rebase_and_prune, value_of=value, seed=2))
    outcome = engine.run(cid)
    assert commits[5] not in git(lab.repo, "rev-list", "--all")  # pruned: only vmbisect's clones have it
    assert outcome.outcome == "found" and outcome.culprit == commits[5]
    assert outcome.result.revert.verdict == "revert restores the metric"


def test_the_users_repository_deleted_mid_campaign_pauses_it_and_resume_loses_nothing(tmp_path):
    lab = Lab(tmp_path)
    commits = series(lab.repo, "x")
    away = tmp_path / "moved-away"
    measurer = Disturbed(6, lambda: lab.repo.rename(away), value_of=slow_from(commits, 5), seed=3)
    engine, cid = lab.engine(commits, measurer)
    with pytest.raises(InfraError, match=f"repository: {lab.repo} is gone") as raised:
        with paused_on_infra_error(lab.store, cid, lab.store.campaign(cid).state):
            engine.run(cid)
    assert "\n" not in str(raised.value)
    row = lab.store.campaign(cid)
    assert row.state == "paused" and str(lab.repo) in row.result["reason"]
    boots_before = len(lab.store.boots(cid))
    away.rename(lab.repo)
    measurer.after = -1
    again, _ = lab.engine(commits, measurer)
    outcome = again.run(cid)
    assert outcome.outcome == "found" and outcome.culprit == commits[5]
    boots = lab.store.boots(cid)
    assert len(boots) > boots_before and len({b.id for b in boots}) == len(boots)
    runs = list(lab.store.runs(cid))
    assert len({r.id for r in runs}) == len(runs) and all(sum(r.boot_id == b.id for r in runs) <= 2 for b in boots)


def test_a_clone_an_older_vmbisect_made_with_shared_is_made_again_before_use_with_a_note(tmp_path):
    repo = tmp_path / "linux"
    commits = series(repo, "x", n=2)
    src = tmp_path / "src"
    git(tmp_path, "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(src))
    shutil.rmtree(repo)
    series(repo, "y", n=2)  # the objects it borrowed are gone
    notes: list[str] = []
    gitrepo.ensure_clone(repo, src, notes.append)
    assert notes == [f"made its clone of {repo} again: it borrowed the objects of a repository that may have "
                     "dropped them (a --shared clone)"]
    assert not (src / ".git" / "objects" / "info" / "alternates").exists()
    gitrepo.fetch_commit(src, repo, git(repo, "rev-parse", "HEAD"))
    assert commits[-1] not in git(src, "rev-list", "--all")  # the old history went with the old clone


def test_a_clone_of_a_repository_that_borrows_objects_owns_them_and_is_not_made_again_at_the_next_build(tmp_path):
    """The demo's and the shipped series' repositories borrow the linux-source cache's objects;
    a plain local clone inherited that alternates file and was made again before every build."""
    origin = tmp_path / "origin"
    series(origin, "x", n=2)
    repo = tmp_path / "linux"
    git(tmp_path, "clone", "--quiet", "--shared", str(origin), str(repo))
    src = tmp_path / "src"
    notes: list[str] = []
    gitrepo.ensure_clone(repo, src, notes.append)
    assert not (src / ".git" / "objects" / "info" / "alternates").exists()
    gitrepo.ensure_clone(repo, src, notes.append)
    assert notes == []
    git(src, "fsck", "--no-dangling")
