"""The shipped series: small histories on Debian's linux-source-6.1, each with one real
performance change among comment-only commits, bisected by the campaign beside its patches.

    examples/demo/     (make demo) one commit breaks the build, one makes bfq the default I/O
                       scheduler: fio random reads on virtio-scsi lose about half their IOPS
    examples/netperf/  one commit gives the loopback device the Ethernet MTU: netperf TCP_STREAM
                       over loopback loses throughput
    examples/dbench/   one commit lowers the default dirty ratio: dbench on ext4 loses throughput

A series is applied without a working tree (a temporary index, `git apply --cached`,
`git commit-tree` with each patch's author, date and message), so the commit hashes are the
same on every machine. Branch master is the release, the branch named after the series is the
series on top of it.
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

EXAMPLES = paths.REPO_ROOT / "examples"


@dataclass(frozen=True)
class Series:
    """examples/<name>/: its patches, campaign.yaml and (made here) linux.git."""

    name: str
    culprit_subject: str

    @property
    def dir(self) -> Path:
        return EXAMPLES / self.name

    @property
    def campaign(self) -> Path:
        return self.dir / "campaign.yaml"

    @property
    def repo(self) -> Path:
        return self.dir / "linux.git"


DEMO = Series("demo", "block: use bfq as the default I/O scheduler")
NETPERF = Series("netperf", "net: loopback: use the Ethernet MTU by default")
DBENCH = Series("dbench", "mm: lower the default dirty ratio to 5%")
SERIES = {s.name: s for s in (DEMO, NETPERF, DBENCH)}
CAMPAIGN = DEMO.campaign


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


def ensure_demo_repo() -> DemoRepo:
    """The demo's repository (make demo)."""
    return ensure_series_repo(DEMO)


def ensure_series_repo(series: Series, dest: Path | None = None) -> DemoRepo:
    """The series' repository: branch master is the release, branch <series.name> the series on top."""
    source = ensure_linux_source_repo()
    dest = dest or series.repo
    patches = sorted(series.dir.glob("*.patch"))
    if not dest.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", "--shared", str(source.path), str(dest)], check=True,
                       capture_output=True)
    branch = series.name
    if _has(dest, branch) and int(_git(dest, "rev-list", "--count", f"master..{branch}").strip()) == len(patches):
        head = _git(dest, "rev-parse", branch).strip()
    else:
        head = _apply(dest, source.commit, patches, branch)
    culprit = next(sha for sha, subject in _log(dest, branch) if subject == series.culprit_subject)
    return DemoRepo(dest, source.commit, head, culprit)


def _has(repo: Path, branch: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
                          capture_output=True).returncode == 0


def _log(repo: Path, branch: str) -> list[tuple[str, str]]:
    out = _git(repo, "log", "--format=%H%x00%s", f"master..{branch}")
    return [tuple(line.split("\x00", 1)) for line in out.splitlines()]  # type: ignore[misc]


def _apply(repo: Path, base: str, patches: list[Path], branch: str) -> str:
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
    _git(repo, "update-ref", f"refs/heads/{branch}", parent)
    index.unlink(missing_ok=True)
    return parent
