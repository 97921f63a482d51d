"""git bisect driven through GitBisect on real throwaway repositories."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from orchestrator.backends.git_bisect import GitBisect, git
from orchestrator.backends.gitlog import BisectState
from orchestrator.errors import UserError
from tests.integration.gitrepo import Repo, linear, merge_heavy


def run(repo: Repo, workdir: Path, good: str, bad: str, verdict_of: Callable[[str], str],
        first_parent: bool = False) -> tuple[BisectState, list[str], GitBisect]:
    gb = GitBisect(repo.path, workdir)
    gb.prepare()
    state = gb.start(gb.resolve(repo.names.get(good, good), "good"), gb.resolve(repo.names.get(bad, bad), "bad"),
                     first_parent)
    tested = []
    while state.kind == "testing":
        commit = gb.current()
        tested.append(repo.name_of(commit))
        state = gb.mark(commit, verdict_of(repo.name_of(commit)))
    return state, tested, gb


def after(culprit_index: int) -> Callable[[str], str]:
    return lambda name: "bad" if int(name[1:]) >= culprit_index else "good"


@pytest.mark.parametrize("culprit", [1, 7, 15], ids=["first", "middle", "last"])
def test_linear_history_names_the_culprit_in_log2_steps(tmp_path, culprit):
    repo = linear(tmp_path / "u", 16)
    state, tested, _ = run(repo, tmp_path / "w", "c0", "c15", after(culprit))
    assert state.kind == "found" and repo.name_of(state.culprit) == f"c{culprit}"
    assert len(tested) <= 4


def test_build_broken_commits_next_to_the_culprit_are_skipped_around(tmp_path):
    repo = linear(tmp_path / "u", 16)
    broken = {"c5", "c8"}
    state, tested, _ = run(repo, tmp_path / "w", "c0", "c15",
                           lambda n: "skip" if n in broken else after(7)(n))
    assert state.kind == "found" and repo.name_of(state.culprit) == "c7"


def test_only_skipped_commits_left_gives_the_candidate_range(tmp_path):
    repo = linear(tmp_path / "u", 16)
    broken = {"c6", "c7", "c8"}
    state, _, _ = run(repo, tmp_path / "w", "c0", "c15", lambda n: "skip" if n in broken else after(7)(n))
    assert state.kind == "only_skipped"
    assert sorted(repo.name_of(c) for c in state.candidates) == ["c6", "c7", "c8", "c9"]


@pytest.mark.parametrize("culprit", ["t1-1", "m4", "t2-0"])
def test_merge_heavy_history_finds_culprits_on_branches_and_main(tmp_path, culprit):
    repo = merge_heavy(tmp_path / "u")
    bad_after = set(repo.git("rev-list", "--ancestry-path", f"{repo.names[culprit]}..main").split())
    bad_after.add(repo.names[culprit])
    state, _, _ = run(repo, tmp_path / "w", "m0", "main", lambda n: "bad" if repo.names[n] in bad_after else "good")
    assert state.kind == "found" and repo.name_of(state.culprit) == culprit


def test_first_parent_names_the_merge_that_brought_a_branch_culprit(tmp_path):
    repo = merge_heavy(tmp_path / "u")
    bad = set(repo.git("rev-list", "--ancestry-path", f"{repo.names['t1-1']}..main").split())
    bad.add(repo.names["t1-1"])
    state, tested, _ = run(repo, tmp_path / "w", "m0", "main", lambda n: "bad" if repo.names[n] in bad else "good",
                           first_parent=True)
    assert state.kind == "found" and repo.name_of(state.culprit) == "merge-t1"
    assert not any(n.startswith("t") for n in tested)


def test_bisect_log_replays_to_the_same_state(tmp_path):
    repo = linear(tmp_path / "u", 32)
    gb = GitBisect(repo.path, tmp_path / "w")
    gb.prepare()
    gb.start(repo.names["c0"], repo.names["c31"])
    for _ in range(2):
        state = gb.mark(gb.current(), after(20)(repo.name_of(gb.current())))
    assert state.kind == "testing"
    log, here = gb.log(), gb.current()
    replayed = GitBisect(repo.path, tmp_path / "w2")
    replayed.prepare()
    assert replayed.replay(log, tmp_path / "log").kind == "testing" and replayed.current() == here


def tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(path)).encode() + f.read_bytes())
    return h.hexdigest()


def test_users_repository_is_untouched_by_a_whole_bisection(tmp_path):
    repo = linear(tmp_path / "u", 16)
    (repo.path / "uncommitted").write_text("work in progress")
    repo.git("add", "uncommitted")
    before = (tree_digest(repo.path), repo.git("status", "--porcelain"), repo.git("symbolic-ref", "HEAD"))
    run(repo, tmp_path / "w", "c0", "c15", after(9))
    assert (tree_digest(repo.path), repo.git("status", "--porcelain"), repo.git("symbolic-ref", "HEAD")) == before


def test_unknown_ref_is_a_user_error_naming_the_field(tmp_path):
    repo = linear(tmp_path / "u", 3)
    gb = GitBisect(repo.path, tmp_path / "w")
    gb.prepare()
    with pytest.raises(UserError, match="good: 'v9.9' is not a commit"):
        gb.resolve("v9.9", "good")


def test_commit_info_for_the_report(tmp_path):
    repo = linear(tmp_path / "u", 3)
    gb = GitBisect(repo.path, tmp_path / "w")
    gb.prepare()
    info = gb.info(repo.names["c1"])
    assert (info.subject, info.author, info.email) == ("c1", "T", "t@example.org")
    assert gb.parent(repo.names["c1"]) == repo.names["c0"] and gb.count_between(repo.names["c0"], repo.names["c2"]) == 2


def test_revert_of_a_commit_on_the_tip_is_made_in_vmbisects_clone_only_with_a_stable_hash(tmp_path):
    repo = linear(tmp_path / "u", 8)
    before = repo.git("for-each-ref")
    gb = GitBisect(repo.path, tmp_path / "work")
    gb.prepare()
    first = gb.revert(repo.names["c3"], repo.names["c7"])
    again = gb.revert(repo.names["c3"], repo.names["c7"])
    assert first.commit and first.commit == again.commit and not first.reason
    assert repo.git("for-each-ref") == before, "the user's repository was written"
    files = git(gb.repo, "ls-tree", "--name-only", first.commit).stdout.split()
    assert "c3" not in files and {"c2", "c4", "c7"} <= set(files)
    assert git(gb.repo, "rev-parse", f"{first.commit}^").stdout.strip() == repo.names["c7"]
    assert git(gb.repo, "log", "-1", "--format=%s", first.commit).stdout.strip() == 'Revert "c3"'


def test_revert_that_conflicts_gives_gits_reason(tmp_path):
    repo = Repo(tmp_path / "u")
    for i in range(4):
        repo.commit(f"c{i}", path="shared")
    gb = GitBisect(repo.path, tmp_path / "work")
    gb.prepare()
    revert = gb.revert(repo.names["c1"], repo.names["c3"])
    assert not revert.commit and revert.reason.startswith("CONFLICT (content): Merge conflict in shared")


def test_the_builder_checkout_fetches_a_revert_from_vmbisects_clone(tmp_path):
    from orchestrator.kbuild import gitrepo

    repo = linear(tmp_path / "u", 4)
    gb = GitBisect(repo.path, tmp_path / "work")
    gb.prepare()
    revert = gb.revert(repo.names["c1"], repo.names["c3"]).commit
    with pytest.raises(UserError):
        gitrepo.resolve(repo.path, revert)
    found = gitrepo.resolve(repo.path, revert, objects=gb.repo)
    assert found.commit == revert and found.repo_id == gitrepo.resolve(repo.path, "HEAD").repo_id
    src = tmp_path / "src"
    gitrepo.ensure_clone(repo.path, src)
    gitrepo.fetch_commit(src, gb.repo, revert)
    gitrepo.checkout(src, revert)
    assert not (src / "c1").exists() and (src / "c3").exists()


@pytest.mark.parametrize("culprit", [1, 17, 39])
def test_the_benchs_in_memory_bisection_finds_what_git_finds_on_a_line(tmp_path, culprit):
    from tests.fakes import FakeVcs

    repo = linear(tmp_path / "u", 40)
    verdict = lambda name: "bad" if int(name[1:]) >= culprit else "good"  # noqa: E731
    state, tested, _ = run(repo, tmp_path / "work", "c0", "c39", verdict)
    fake = FakeVcs([repo.names[f"c{i}"] for i in range(40)])
    fake_state = fake.start(repo.names["c0"], repo.names["c39"])
    steps = 0
    while fake_state.kind == "testing":
        steps += 1
        fake_state = fake.mark(fake.current(), verdict(repo.name_of(fake.current())))
    assert fake_state.culprit == state.culprit == repo.names[f"c{culprit}"]
    assert abs(steps - len(tested)) <= 1


@pytest.mark.parametrize("culprit", ["m1", "t1-0", "t1-2", "merge-t1", "t2-1", "m5"])
def test_the_benchs_in_memory_history_with_merges_lists_ancestors_and_finds_what_git_finds(tmp_path, culprit):
    from tests.fakes import FakeVcs

    repo = merge_heavy(tmp_path / "u")
    listed = repo.git("rev-list", "--topo-order", "--reverse", "--parents", "HEAD").splitlines()
    fake = FakeVcs([line.split()[0] for line in listed], {line.split()[0]: line.split()[1:] for line in listed})
    good, bad = repo.names["m0"], repo.names["m5"]
    for fp in (False, True):
        want = repo.git("rev-list", "--parents", *(["--first-parent"] if fp else []), f"{good}..{bad}").splitlines()
        got = fake.rev_list(good, bad, fp).splitlines()
        assert sorted(got) == sorted(line if not fp else " ".join(line.split()[:2]) for line in want)
    for a in repo.names.values():
        for b in repo.names.values():
            known = subprocess.run(["git", "-C", str(repo.path), "merge-base", "--is-ancestor", a, b]).returncode == 0
            assert fake.is_ancestor(a, b) == known
    verdict = lambda name: "bad" if fake.is_ancestor(repo.names[culprit], repo.names[name]) else "good"  # noqa: E731
    state, tested, _ = run(repo, tmp_path / "work", "m0", "m5", verdict)
    fake_state = fake.start(good, bad)
    steps = 0
    while fake_state.kind == "testing":
        steps += 1
        fake_state = fake.mark(fake.current(), verdict(repo.name_of(fake.current())))
    assert fake_state.culprit == state.culprit == repo.names[culprit]
    assert abs(steps - len(tested)) <= 1


def test_the_clone_of_a_repository_that_borrows_objects_owns_them_and_is_kept_at_the_next_prepare(tmp_path):
    repo = linear(tmp_path / "u", 4)
    borrower = tmp_path / "borrower"
    git(tmp_path, "clone", "--quiet", "--shared", str(repo.path), str(borrower))
    notes: list[str] = []
    gb = GitBisect(borrower, tmp_path / "w", note=notes.append)
    gb.prepare()
    assert not (gb.repo / "objects" / "info" / "alternates").exists()
    gb.prepare()
    assert notes == []


def test_the_bisect_clone_has_gc_and_maintenance_off_even_when_an_older_clone_had_them_on(tmp_path):
    repo = linear(tmp_path / "u", 4)
    gb = GitBisect(repo.path, tmp_path / "w")
    gb.prepare()
    assert git(gb.repo, "config", "gc.auto").stdout.strip() == "0"
    assert git(gb.repo, "config", "maintenance.auto").stdout.strip() == "false"
    git(gb.repo, "config", "--unset", "gc.auto")  # a clone an older vmbisect made
    gb.prepare()
    assert git(gb.repo, "config", "gc.auto").stdout.strip() == "0"


def test_a_commit_subject_is_read_from_the_users_repository_when_the_campaign_has_no_clone_and_none_is_made(
        tmp_path, monkeypatch):
    from orchestrator.bisect.workdir import campaign_workdir, clone
    from orchestrator.store import Store

    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    repo = linear(tmp_path / "u", 3)
    store = Store(f"sqlite:///{tmp_path / 'v.db'}")
    cid = store.new_campaign("t", {})
    gb = clone(store, cid, repo.path)
    assert gb.subject(repo.names["c1"]) == "c1"
    assert not campaign_workdir(store, cid).exists(), "a subject line made the campaign's clone"
    gb.prepare()
    repo.commit("c3")  # the clone, as it is, does not hold it: the user's repository does
    assert gb.subject(repo.names["c3"]) == "c3"
    assert gb.subject(repo.names["c2"]) == "c2"
