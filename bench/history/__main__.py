"""A kernel-shaped history of real commits: `python -m bench.history DEST --commits N --seed S
[--mechanism queue-depth|busy-wait|mtu|scheduler]`.

DEST/linux.git: branch master is Debian's linux-source-6.1 release (orchestrator/demo.py's
release clone, borrowing the linux-source repository's objects), branch real-size the history
bench/history/shape.py draws for (N, S) on top of it, written with `git fast-import` in one
pass: its changes are bench/history/files.py's, the culprit the mechanism's patch from the
example series that plants it (queue-depth: examples/multipage-ring, busy-wait:
examples/scsi-mq, mtu: examples/netperf, scheduler: examples/demo, bfq by default). Authors, dates and messages are fixed, so the
commit ids are the same on every machine with the same linux-source release.
DEST/campaign.yaml bisects master..real-size with that series' campaign (its guest, workload,
metric and threshold), DEST/planted.json the planted commits. Printed: the culprit, the
planted build-broken range and boot-broken pair, and the time taken. Generated histories are made where they are used, never kept in
the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.history.files import BOOT_FILE, BUILD_FILE, Changes, changes, content, function_ends, pools  # noqa: E402
from bench.history.shape import MIN_COMMITS, Kind, Shape, kernel_shape  # noqa: E402
from orchestrator.bisect.posterior import Dag  # noqa: E402
from orchestrator.demo import DEMO, MULTIPAGE_RING, NETPERF, SCSI_MQ, Series, mailinfo, release_clone  # noqa: E402
from orchestrator.errors import InfraError  # noqa: E402

MECHANISMS: dict[str, Series] = {"queue-depth": MULTIPAGE_RING, "busy-wait": SCSI_MQ, "mtu": NETPERF, "scheduler": DEMO}
BRANCH = "real-size"
START = 1_672_617_600  # 2023-01-02 00:00 UTC: the first commit's date; each next one 5 minutes later
AUTHORS = (("Ada Lovelace", "ada@example.org"), ("Edsger Dijkstra", "edsger@example.org"),
           ("Donald Knuth", "donald@example.org"), ("Grace Hopper", "grace@example.org"),
           ("Linus Pauling", "linus@example.org"), ("Barbara Liskov", "barbara@example.org"))


@dataclass(frozen=True)
class Made:
    """The history written: each node's commit id, the release it starts from."""

    release: str
    ids: tuple[str, ...]


@dataclass(frozen=True)
class Culprit:
    """The mechanism's patch: its files, their content with it applied, its message and author."""

    files: tuple[str, ...]
    patched: dict[str, bytes]
    subject: str
    body: str
    author: tuple[str, str]


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "--git-dir", str(repo), *args], input=stdin, capture_output=True)
    if done.returncode != 0:
        raise InfraError(f"git {args[0]} failed in {repo}: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


def blobs(repo: Path, rev: str, paths: list[str]) -> dict[str, bytes]:
    """The contents of `paths` at `rev`, in one `git cat-file --batch`."""
    out = git(repo, "cat-file", "--batch", stdin="".join(f"{rev}:{p}\n" for p in paths).encode())
    found, at = {}, 0
    for path in paths:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if header[-1] == b"missing":
            raise InfraError(f"{path} is not in {rev}")
        size = int(header[2])
        found[path] = out[end + 1:end + 1 + size]
        at = end + 2 + size
    return found


def culprit_patch(repo: Path, release: str, series: Series) -> Culprit:
    """The series' culprit patch applied to the release's files (git apply in a scratch tree)."""
    patch = next(p for p in sorted(series.dir.glob("*.patch")) if mailinfo(p)[0]["Subject"] == series.culprit_subject)
    headers, body = mailinfo(patch)
    files = tuple(dict.fromkeys(line.split(" b/", 1)[1] for line in patch.read_text().splitlines()
                                if line.startswith("diff --git ")))
    base = blobs(repo, release, list(files))
    with tempfile.TemporaryDirectory() as scratch:
        for path, data in base.items():
            (Path(scratch) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(scratch) / path).write_bytes(data)
        done = subprocess.run(["git", "apply", str(patch)], cwd=scratch, capture_output=True, text=True)
        if done.returncode != 0:
            raise InfraError(f"{patch.name} does not apply to the release: {done.stderr.strip()[:300]}")
        patched = {path: (Path(scratch) / path).read_bytes() for path in files}
    return Culprit(files, patched, headers["Subject"], body, (headers["Author"], headers["Email"]))


def host_dirs(repo: Path, release: str, listing: list[tuple[str, int]]) -> set[str]:
    """Directories whose Makefile or Kbuild builds programs for the host or for user space."""
    makefiles = [p for p, _ in listing if p.rsplit("/", 1)[-1] in ("Makefile", "Kbuild")]
    texts = blobs(repo, release, makefiles)
    return {p.rsplit("/", 1)[0] if "/" in p else "" for p, text in texts.items()
            if b"hostprogs" in text or b"userprogs" in text}


def write(repo: Path, release: str, shape: Shape, seed: int, series: Series) -> Made:
    """The history on top of `release` in `repo`, branch BRANCH at its tip."""
    listing = []
    for line in git(repo, "ls-tree", "-r", "--long", release).decode().splitlines():
        meta, path = line.split("\t", 1)
        size = meta.split()[3]
        listing.append((path, int(size) if size.isdigit() else 0))
    culprit = culprit_patch(repo, release, series)
    pool = pools(listing, host_dirs(repo, release, listing), set(culprit.files) | {BUILD_FILE, BOOT_FILE})
    ch = changes(shape, pool, seed, culprit.files, culprit.subject)
    base = {p: data.decode("utf-8", errors="surrogateescape") for p, data in blobs(repo, release, sorted(ch.ops)).items()}
    ends = {path: function_ends(text) for path, text in base.items()}
    names = [str(i) for i in range(len(shape))]
    dag = Dag(names, {names[i]: [names[p] for p in n.parents] for i, n in enumerate(shape.nodes)})
    stream = bytearray()
    marks: dict[bytes, int] = {}
    next_mark = len(shape) + 1
    for i, node in enumerate(shape.nodes):
        files = merged(shape, dag, ch, i) if node.kind is Kind.MERGE else ch.touched.get(i, [])
        entries = []
        for path in files:
            if path in culprit.patched:
                data = culprit.patched[path] if dag.is_ancestor(names[shape.culprit], names[i]) else blobs_of(base, path)
            else:
                data = content(base[path], path, ch.ops[path], partial(holds, dag, names, i), ends[path]).encode(
                    "utf-8", "surrogateescape")
            key = hashlib.sha1(path.encode() + b"\0" + data).digest()
            if key not in marks:
                marks[key] = next_mark
                stream += b"blob\nmark :%d\ndata %d\n" % (next_mark, len(data)) + data + b"\n"
                next_mark += 1
            entries.append(b"M 100644 :%d %s\n" % (marks[key], path.encode()))
        name, email = culprit.author if node.kind is Kind.CULPRIT else AUTHORS[i % len(AUTHORS)]
        when = START + 300 * i
        message = (f"{culprit.subject}\n\n{culprit.body}" if node.kind is Kind.CULPRIT else
                   f"{ch.subjects[i]}\n\nA {node.kind.value} commit of a kernel-shaped history ({len(shape)} commits, "
                   f"seed {seed}).\n").encode()
        who = f"{name} <{email}> {when} +0000".encode()
        stream += b"commit refs/heads/%s\nmark :%d\nauthor %s\ncommitter %s\ndata %d\n%s\n" % (
            BRANCH.encode(), i + 1, who, who, len(message), message)
        parents = [f":{p + 1}".encode() for p in node.parents] or [release.encode()]
        stream += b"from %s\n" % parents[0] + b"".join(b"merge %s\n" % p for p in parents[1:])
        stream += b"".join(entries) + b"\n"
    with tempfile.NamedTemporaryFile() as exported:
        git(repo, "-c", "core.compression=1", "fast-import", "--quiet", "--force", f"--export-marks={exported.name}",
            stdin=bytes(stream))
        by_mark = dict(line.split() for line in Path(exported.name).read_text().splitlines())
    return Made(release, tuple(by_mark[f":{i + 1}"] for i in range(len(shape))))


def holds(dag: Dag, names: list[str], commit: int, change: int) -> bool:
    """Whether `change` is in `commit`'s history."""
    return dag.is_ancestor(names[change], names[commit])


def blobs_of(base: dict[str, str], path: str) -> bytes:
    return base[path].encode("utf-8", "surrogateescape")


def merged(shape: Shape, dag: Dag, ch: Changes, i: int) -> list[str]:
    """The files a merge brings in: those the commits it merges (not already in its first
    parent's history) touch."""
    first = str(shape.nodes[i].parents[0])
    seen: set[int] = set()
    stack = list(shape.nodes[i].parents[1:])
    files: dict[str, None] = {}
    while stack:
        j = stack.pop()
        if j in seen or dag.is_ancestor(str(j), first):
            continue
        seen.add(j)
        files.update(dict.fromkeys(ch.touched.get(j, [])))
        stack.extend(shape.nodes[j].parents)
    return list(files)


def campaign(series: Series, mechanism: str, commits: int, seed: int) -> str:
    """The series' campaign file on the generated range (its guest, workload and metric)."""
    spec = yaml.safe_load(series.campaign.read_text())
    spec.update(name=f"real-size-{mechanism}", repository="linux.git", good="master", bad=BRANCH)
    head = (f"# A kernel-shaped history of {commits} commits (seed {seed}) on linux-source-6.1 with the culprit of\n"
            f"# examples/{series.name}/ ({mechanism}), made by: python -m bench.history DEST --commits {commits} "
            f"--seed {seed} --mechanism {mechanism}\n")
    return head + yaml.safe_dump(spec, sort_keys=False)


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.history")
    p.add_argument("dest", type=Path, help="directory for linux.git and campaign.yaml")
    p.add_argument("--commits", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mechanism", choices=sorted(MECHANISMS), default="queue-depth")
    a = p.parse_args()
    if a.commits < MIN_COMMITS:
        p.error(f"--commits: {a.commits}: {MIN_COMMITS} at least")
    started = time.monotonic()
    series = MECHANISMS[a.mechanism]
    a.dest.mkdir(parents=True, exist_ok=True)
    repo = a.dest / "linux.git"
    release = release_clone(repo).commit
    shape = kernel_shape(a.commits, a.seed)
    made = write(repo, release, shape, a.seed, series)
    (a.dest / "campaign.yaml").write_text(campaign(series, a.mechanism, a.commits, a.seed))
    (a.dest / "planted.json").write_text(json.dumps({
        "culprit": made.ids[shape.culprit], "build_broken": [made.ids[i] for i in shape.build_broken],
        "boot_broken": [made.ids[i] for i in shape.boot_broken], "commits": len(shape), "seed": a.seed,
        "mechanism": a.mechanism}, indent=1) + "\n")
    merges = sum(n.kind is Kind.MERGE for n in shape.nodes)
    print(f"history: {len(shape)} commits ({merges} merges) on {release[:12]}, branch {BRANCH} at {made.ids[-1]}")
    print(f"culprit: {made.ids[shape.culprit]} {series.culprit_subject} ({a.mechanism})")
    print(f"build-broken: {', '.join(made.ids[i][:12] for i in shape.build_broken)}; boot-broken: "
          f"{', '.join(made.ids[i][:12] for i in shape.boot_broken)}")
    print(f"campaign: {a.dest / 'campaign.yaml'}; made in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
