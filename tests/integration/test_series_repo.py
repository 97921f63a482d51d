"""A shipped series with a merged side branch (orchestrator/demo.py, merge.yaml), on real git:
applied from its patches it gives the same commits, hashes included, as the history it was
written from, where the merge was git's own `git merge --no-ff`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from orchestrator.demo import LSISAS, apply_series, ensure_series_repo, side_branch
from orchestrator.errors import UserError
from tests.conftest import require


def _git(repo: Path, *args: str, date: str = "Mon, 1 Jan 2024 00:00:00 +0000", who: str = "T") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": f"{who.lower()}@example.org",
           "GIT_COMMITTER_NAME": who, "GIT_COMMITTER_EMAIL": f"{who.lower()}@example.org",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def _commit(repo: Path, path: str, text: str, subject: str, day: int, who: str) -> str:
    (repo / path).write_text(text)
    _git(repo, "add", path)
    _git(repo, "commit", "-q", "-m", f"{subject}\n\nWhy {subject}.", date=f"Mon, {day} Jan 2024 10:00:00 +0000", who=who)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A history written by hand (main a, b, c, merge of side s1, s2 after b, then d), its
    patches and merge.yaml in a series folder, and the commits by name."""
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "master")
    for name in ("main.c", "side.c", "doc.txt"):
        (src / name).write_text(f"{name}\n" * 5)
    _git(src, "add", ".")
    _git(src, "commit", "-q", "-m", "release")
    names = {"release": _git(src, "rev-parse", "HEAD")}
    _git(src, "checkout", "-q", "-b", "series")
    names["a"] = _commit(src, "doc.txt", "doc\n" * 5, "doc: a", 2, "Ada")
    names["b"] = _commit(src, "main.c", "main\n" * 5, "main: b", 3, "Alan")
    _git(src, "checkout", "-q", "-b", "topic", names["a"])
    names["s1"] = _commit(src, "side.c", "side\n" * 5, "side: s1", 4, "Grace")
    names["s2"] = _commit(src, "side.c", "side 2\n" * 5, "side: s2", 5, "Grace")
    _git(src, "checkout", "-q", "series")
    _git(src, "merge", "-q", "--no-ff", "-m", "Merge branch 'topic'", "topic", date="Sat, 6 Jan 2024 10:00:00 +0000",
         who="Edsger")
    names["merge"] = _git(src, "rev-parse", "HEAD")
    names["d"] = _commit(src, "doc.txt", "doc d\n" * 5, "doc: d", 7, "Ada")
    series = tmp_path / "series"
    (series / "topic").mkdir(parents=True)
    for n, name in enumerate(("a", "b", "d"), 1):
        _git(src, "format-patch", "-q", "--zero-commit", "-1", "--start-number", str(n), "-o", str(series), names[name])
    for n, name in enumerate(("s1", "s2"), 1):
        _git(src, "format-patch", "-q", "--zero-commit", "-1", "--start-number", str(n), "-o", str(series / "topic"),
             names[name])
    patches = sorted(p.name for p in series.glob("*.patch"))
    (series / "merge.yaml").write_text(yaml.safe_dump({
        "branch": "topic", "fork_after": patches[0], "merge_after": patches[1], "author": "Edsger",
        "email": "edsger@example.org", "date": "Sat, 6 Jan 2024 10:00:00 +0000", "message": "Merge branch 'topic'\n"}))
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(bare)], check=True)
    subprocess.run(["git", "-C", str(src), "push", "-q", str(bare), "master"], check=True)
    return bare, series, names


def test_a_series_with_a_side_branch_gives_the_hashes_of_the_history_it_was_written_from(written):
    bare, series, names = written
    tip = apply_series(bare, names["release"], series, "series")
    assert tip == names["d"]
    assert _git(bare, "rev-parse", "series^") == names["merge"]
    assert _git(bare, "rev-parse", "series^^2") == names["s2"] == _git(bare, "rev-parse", "topic")
    assert _git(bare, "rev-list", "--count", "master..series") == "6"


def test_a_series_already_applied_is_reused_not_rewritten(written):
    bare, series, names = written
    first = apply_series(bare, names["release"], series, "series")
    _git(bare, "update-ref", "refs/heads/topic", names["release"])
    assert apply_series(bare, names["release"], series, "series") == first
    assert _git(bare, "rev-parse", "topic") == names["release"], "an applied series was written again"


@pytest.mark.parametrize("change, field", [({"merge_after": "0009-nothing.patch"}, "merge_after"),
                                           ({"fork_after": "0009-nothing.patch"}, "fork_after"),
                                           ({"colour": "blue"}, "expected the keys")])
def test_a_merge_file_naming_what_is_not_there_is_one_line_naming_the_field(written, change, field):
    _bare, series, _names = written
    spec = {**yaml.safe_load((series / "merge.yaml").read_text()), **change}
    (series / "merge.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(UserError, match=field) as failed:
        side_branch(series, sorted(series.glob("*.patch")))
    assert "\n" not in str(failed.value)


def test_a_fork_after_the_merge_point_is_refused(written):
    _bare, series, _names = written
    patches = sorted(series.glob("*.patch"))
    spec = {**yaml.safe_load((series / "merge.yaml").read_text()), "fork_after": patches[2].name}
    (series / "merge.yaml").write_text(yaml.safe_dump(spec))
    with pytest.raises(UserError, match="fork_after must come before merge_after"):
        side_branch(series, patches)


@pytest.mark.slow  # on a fresh machine the linux-source-6.1 repository is made first (minutes)
def test_the_shipped_lsisas_series_has_its_culprit_on_a_merged_side_branch_and_the_same_ids_when_made_again(tmp_path):
    require(Path("/usr/src/linux-source-6.1.tar.xz").is_file(), "linux-source-6.1 not installed")
    repo = ensure_series_repo(LSISAS, tmp_path / "linux.git")
    merges = _git(repo.path, "rev-list", "--merges", "master..lsisas").split()
    assert len(merges) == 1
    assert _git(repo.path, "merge-base", "--is-ancestor", repo.culprit, merges[0]) == ""
    on_main_line = _git(repo.path, "rev-list", "--first-parent", "master..lsisas").split()
    assert repo.culprit not in on_main_line
    # the ids follow from the release and the patches alone (a new linux-source-6.1 upload moves
    # them all): made again elsewhere, the series has the same commits
    again = ensure_series_repo(LSISAS, tmp_path / "again.git")
    assert (again.tip, again.culprit) == (repo.tip, repo.culprit)
