"""The shipped series: small histories on Debian's linux-source-6.1, each with one real
performance change among comment-only commits, bisected by the campaign beside its patches.

    examples/demo/     (make demo) one commit breaks the build, one makes bfq the default I/O
                       scheduler: fio random reads on virtio-scsi lose about half their IOPS
    examples/netperf/  one commit gives the loopback device the Ethernet MTU and no segmentation
                       offload: netperf TCP_STREAM over loopback loses about a quarter
    examples/dbench/   one commit makes ext4 directory operations synchronous (dirsync) by
                       default: dbench on ext4 loses about 40% of its throughput
    examples/lsisas/   on a side branch merged into the main line, one commit makes bfq the
                       default scheduler of single queue devices: fio random reads on LSI SAS
                       disks (megaraid_sas, one hardware queue) lose 10-20% of their IOPS;
                       one main-line commit breaks the build and the next fixes it
    examples/scsi-mq/  one commit makes megaraid_sas busy-wait after every doorbell write: CPU
                       per I/O up, IOPS held by fio's rate_iops (a cost only the CPU metrics see)
    examples/sched-spread/  one commit turns wake-affine off by default: netperf's 8 streams in
                       a 4-vCPU guest spread over the vCPUs and cost more CPU per message
    examples/multipage-ring/  one commit caps virtio_blk's default queue depth at 32: fio random
                       reads past 32 in flight (8 threads at depth 4) lose IOPS
    examples/cfs-dbench/  one commit sets the wakeup granularity to 0: dbench's 8 clients
                       preempt each other at every wakeup and cost more CPU per operation

A series is applied without a working tree (a temporary index, `git apply --cached`,
`git commit-tree` with each patch's author, date and message), so the commit hashes are the
same on every machine. Branch master is the release, the branch named after the series is the
series on top of it. A series may have one side branch (merge.yaml beside the patches: its
patches in a folder named after it, the main-line patch it forks after, the one its merge
commit follows, and that commit's author, date and message); its merge commit's tree is git's
own merge (`git merge-tree --write-tree`), and the side branch is also kept as a branch.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from orchestrator import paths
from orchestrator.errors import InfraError, UserError
from orchestrator.kbuild import gitrepo
from orchestrator.kbuild.source import SourceRepo, ensure_linux_source_repo

EXAMPLES = paths.REPO_ROOT / "examples"


@dataclass(frozen=True)
class SideBranch:
    """A branch of a series merged into its main line, as the series' merge.yaml says."""

    name: str
    patches: tuple[Path, ...]
    fork_after: str | None        # the main-line patch file it forks after; None: the release
    merge_after: str              # the main-line patch file its merge commit follows
    author: str
    email: str
    date: str
    message: str


_MERGE_KEYS = {"branch", "fork_after", "merge_after", "author", "email", "date", "message"}


def side_branch(series_dir: Path, main_line: list[Path]) -> SideBranch | None:
    """The side branch `series_dir/merge.yaml` describes (None without that file); the patch
    names it gives must be main-line patches, the fork before the merge."""
    path = series_dir / "merge.yaml"
    if not path.is_file():
        return None
    spec = yaml.safe_load(path.read_text())
    if not isinstance(spec, dict) or set(spec) - _MERGE_KEYS or not {"branch", "merge_after"} <= set(spec):
        raise UserError(f"{path}: expected the keys {', '.join(sorted(_MERGE_KEYS))} (branch and merge_after required)")
    names = [p.name for p in main_line]
    for key in ("fork_after", "merge_after"):
        if spec.get(key) is not None and spec[key] not in names:
            raise UserError(f"{path}: {key}: {spec[key]!r} is not a patch of the main line; choices: {', '.join(names)}")
    fork_at = names.index(spec["fork_after"]) if spec.get("fork_after") is not None else -1
    if fork_at >= names.index(spec["merge_after"]):
        raise UserError(f"{path}: fork_after must come before merge_after")
    patches = tuple(sorted((series_dir / str(spec["branch"])).glob("*.patch")))
    if not patches:
        raise UserError(f"{path}: branch: no patches in {series_dir / str(spec['branch'])}")
    return SideBranch(str(spec["branch"]), patches, spec.get("fork_after"), spec["merge_after"],
                      str(spec.get("author", "")), str(spec.get("email", "")), str(spec.get("date", "")),
                      str(spec.get("message", f"Merge branch '{spec['branch']}'")))


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
NETPERF = Series("netperf", "net: loopback: use the Ethernet MTU and segment in software by default")
DBENCH = Series("dbench", "ext4: make directory operations synchronous by default")
LSISAS = Series("lsisas", "block: use bfq as the default scheduler of single queue devices")
SCSI_MQ = Series("scsi-mq", "scsi: megaraid_sas: let the firmware fetch each MFI frame before the next doorbell")
SCHED_SPREAD = Series("sched-spread", "sched/topology: stop pulling woken tasks to the waker's CPU")
MULTIPAGE_RING = Series("multipage-ring", "virtio_blk: keep a single ring page of requests in flight by default")
CFS_DBENCH = Series("cfs-dbench", "sched/fair: let a woken task preempt the running one at once")
SERIES = {s.name: s for s in (DEMO, NETPERF, DBENCH, LSISAS, SCSI_MQ, SCHED_SPREAD, MULTIPAGE_RING, CFS_DBENCH)}
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
    dest = dest or series.repo
    source = release_clone(dest)
    head = apply_series(dest, source.commit, series.dir, series.name)
    culprit = next(sha for sha, subject in _log(dest, series.name) if subject == series.culprit_subject)
    return DemoRepo(dest, source.commit, head, culprit)


def release_clone(dest: Path) -> SourceRepo:
    """A bare repository at `dest` whose branch master is linux-source-6.1's release commit,
    borrowing the linux-source repository's objects (made unless it exists); the release."""
    source = ensure_linux_source_repo()
    if not dest.exists():
        subprocess.run(["git", "clone", "--quiet", "--bare", "--shared", *gitrepo.clone_options(), str(source.path),
                        str(dest)], check=True, capture_output=True)
    gitrepo.no_background(dest)
    return source


def apply_series(repo: Path, base: str, series_dir: Path, branch: str) -> str:
    """The tip of branch `branch` of `repo`: the patches of `series_dir` (and its side branch) on
    `base`, made unless the branch already holds as many commits on top of master."""
    patches = sorted(series_dir.glob("*.patch"))
    side = side_branch(series_dir, patches)
    commits = len(patches) + (len(side.patches) + 1 if side else 0)
    if _has(repo, branch) and int(_git(repo, "rev-list", "--count", f"master..{branch}").strip()) == commits:
        return _git(repo, "rev-parse", branch).strip()
    return _apply(repo, base, patches, branch, side)


def _has(repo: Path, branch: str) -> bool:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
                          capture_output=True).returncode == 0


def _log(repo: Path, branch: str) -> list[tuple[str, str]]:
    out = _git(repo, "log", "--format=%H%x00%s", f"master..{branch}")
    return [tuple(line.split("\x00", 1)) for line in out.splitlines()]  # type: ignore[misc]


def _apply(repo: Path, base: str, patches: list[Path], branch: str, side: SideBranch | None = None) -> str:
    index = repo / "demo-index"
    env = {"GIT_INDEX_FILE": str(index)}
    parent = fork = base
    try:
        for patch in patches:
            parent = _commit_patch(repo, parent, patch, env)
            if side is not None and patch.name == side.fork_after:
                fork = parent
            if side is not None and patch.name == side.merge_after:
                parent = _merge(repo, parent, fork, side, env)
    finally:
        index.unlink(missing_ok=True)
    _git(repo, "update-ref", f"refs/heads/{branch}", parent)
    return parent


def _who(name: str, email: str, date: str) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date}


def _commit_patch(repo: Path, parent: str, patch: Path, env: dict[str, str]) -> str:
    """`patch` committed on `parent` with the patch's author, date and message."""
    headers, body = mailinfo(patch)
    _git(repo, "read-tree", parent, env=env)
    _git(repo, "apply", "--cached", str(patch), env=env)
    tree = _git(repo, "write-tree", env=env).strip()
    who = _who(headers["Author"], headers["Email"], headers["Date"])
    message = f"{headers['Subject']}\n\n{body}"
    return _git(repo, "commit-tree", "-p", parent, "-F", "-", tree, env={**env, **who}, stdin=message).strip()


def _merge(repo: Path, parent: str, fork: str, side: SideBranch, env: dict[str, str]) -> str:
    """The side branch's patches on `fork` (kept as branch side.name), merged into `parent` by a
    merge commit (first parent `parent`) whose tree is git's merge of the two."""
    tip = fork
    for patch in side.patches:
        tip = _commit_patch(repo, tip, patch, env)
    _git(repo, "update-ref", f"refs/heads/{side.name}", tip)
    done = subprocess.run(["git", "-C", str(repo), "merge-tree", "--write-tree", "--no-messages", parent, tip],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise InfraError(f"git merge-tree: branch {side.name} does not merge cleanly: {done.stdout.strip()[:300]}")
    tree = done.stdout.splitlines()[0]
    return _git(repo, "commit-tree", "-p", parent, "-p", tip, "-F", "-", tree,
                env={**env, **_who(side.author, side.email, side.date)}, stdin=side.message).strip()
