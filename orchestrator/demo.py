"""The built-in demo: Debian's linux-source-6.1 as a git repository plus the shipped series
of small commits in examples/demo/ (one breaks the build, one makes bfq the default I/O
scheduler), bisected on fio random-read IOPS by examples/demo/campaign.yaml.

The series is applied without a working tree (a temporary index, `git apply --cached`,
`git commit-tree` with each patch's author, date and message), so the commit hashes are the
same on every machine.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from orchestrator import paths
from orchestrator.errors import InfraError
from orchestrator.kbuild.source import ensure_linux_source_repo

DEMO_DIR = paths.REPO_ROOT / "examples" / "demo"
CAMPAIGN = DEMO_DIR / "campaign.yaml"
REPO = DEMO_DIR / "linux.git"
CULPRIT_SUBJECT = "block: use bfq as the default I/O scheduler"
BRANCH = "demo"


@dataclass(frozen=True)
class DemoRepo:
    path: Path
    release: str
    tip: str
    culprit: str


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, input=stdin,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise InfraError(f"git {args[0]} failed in {repo}: {done.stderr.strip()[:300]}")
    return done.stdout


def mailinfo(patch: Path) -> tuple[dict[str, str], str]:
    """(headers: Author, Email, Subject, Date; the message body) of a format-patch file."""
    with tempfile.TemporaryDirectory() as tmp:
        msg, body = Path(tmp) / "msg", Path(tmp) / "patch"
        out = subprocess.run(["git", "mailinfo", str(msg), str(body)], stdin=patch.open("rb"), capture_output=True,
                             check=True).stdout.decode()
        headers = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
        return headers, msg.read_text()


def ensure_demo_repo(dest: Path = REPO, patches_dir: Path = DEMO_DIR) -> DemoRepo:
    """The demo repository: branch master is the release, branch demo the series on top."""
    source = ensure_linux_source_repo()
    patches = sorted(patches_dir.glob("*.patch"))
    if not dest.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", "--shared", str(source.path), str(dest)], check=True,
                       capture_output=True)
    if _has(dest) and int(_git(dest, "rev-list", "--count", f"master..{BRANCH}").strip()) == len(patches):
        head = _git(dest, "rev-parse", BRANCH).strip()
    else:
        head = _apply(dest, source.commit, patches)
    culprit = next(sha for sha, subject in _log(dest) if subject == CULPRIT_SUBJECT)
    return DemoRepo(dest, source.commit, head, culprit)


def _has(repo: Path) -> bool:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}"],
                          capture_output=True).returncode == 0


def _log(repo: Path) -> list[tuple[str, str]]:
    out = _git(repo, "log", "--format=%H%x00%s", f"master..{BRANCH}")
    return [tuple(line.split("\x00", 1)) for line in out.splitlines()]  # type: ignore[misc]


def _apply(repo: Path, base: str, patches: list[Path]) -> str:
    index = repo / "demo-index"
    env = {"GIT_INDEX_FILE": str(index)}
    parent = base
    _git(repo, "read-tree", parent, env=env)
    for patch in patches:
        headers, body = mailinfo(patch)
        _git(repo, "apply", "--cached", str(patch), env=env)
        tree = _git(repo, "write-tree", env=env).strip()
        who = {"GIT_AUTHOR_NAME": headers["Author"], "GIT_AUTHOR_EMAIL": headers["Email"],
               "GIT_AUTHOR_DATE": headers["Date"], "GIT_COMMITTER_NAME": headers["Author"],
               "GIT_COMMITTER_EMAIL": headers["Email"], "GIT_COMMITTER_DATE": headers["Date"]}
        message = f"{headers['Subject']}\n\n{body}"
        parent = _git(repo, "commit-tree", "-p", parent, "-F", "-", tree, env={**env, **who}, stdin=message).strip()
    _git(repo, "update-ref", f"refs/heads/{BRANCH}", parent)
    index.unlink(missing_ok=True)
    return parent
