"""A real campaign on a kernel-shaped history of a release's size: real builds and real boots.

    python -m bench.real_size DEST [--commits 10000] [--seed 1] [--mechanism scheduler]
                                   [--metric NAME --threshold CHANGE] [--figures-only]

Makes the history in DEST unless it is there (python -m bench.history; the scheduler mechanism
plants the demo's culprit, bfq by default, about -50% of read IOPS under TCG), writes
DEST/campaign-real-size.yaml (the maker's campaign, bisected on `--metric` if given, the
maker's metric then watched), runs `vmbisect bisect` on it with its store in DEST/store.db
(its output also in DEST/campaign.log), then prints from the store: the answer against the
planted culprit, steps, boots and builds, each build's time and how it was obtained, the wall
time split into building, booting and the rest, the clone's preparation time and disk.
`--figures-only` prints the figures of the store's last campaign again.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.real_size import Span, split  # noqa: E402
from orchestrator.bisect.workdir import campaign_workdir  # noqa: E402
from orchestrator.decisions import Role  # noqa: E402
from orchestrator.store import BuildRow, Store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent


def campaign_file(dest: Path, metric: str | None, threshold: str) -> Path:
    """The maker's campaign, bisected on `metric` at `threshold` if given, its own metric watched."""
    spec = yaml.safe_load((dest / "campaign.yaml").read_text())
    if metric:
        was = spec["metric"]
        watch = [w for w in [was["name"], *was.get("watch", [])] if w != metric]
        spec["metric"] = {"name": metric, "threshold": threshold, "watch": watch}
    out = dest / "campaign-real-size.yaml"
    out.write_text(f"# {dest / 'campaign.yaml'} as python -m bench.real_size bisects it\n"
                   + yaml.safe_dump(spec, sort_keys=False))
    return out


def run(cmd: list[str], log: Path) -> int:
    """`cmd` with its output on standard output and in `log`."""
    with log.open("w") as out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                                bufsize=1, cwd=ROOT) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            out.write(line)
            out.flush()
    return proc.returncode


def seconds(when: dt.datetime) -> float:
    return when.replace(tzinfo=dt.timezone.utc).timestamp()


def build_spans(builds: list[BuildRow]) -> list[tuple[BuildRow, Span]]:
    """Each ended build (ok or failed) with its span: from its `building` row to its own."""
    started: dict[str, float] = {}
    out = []
    for b in builds:
        if b.status == "building":
            started[b.commit] = seconds(b.created)
        else:
            end = seconds(b.created)
            out.append((b, (started.pop(b.commit, end - b.duration_s), end)))
    return out


def how_built(b: BuildRow) -> str:
    return "cache hit" if b.cache_hit else "failed" if b.status == "failed" else (b.how or "-")


def disk(path: Path) -> str:
    done = subprocess.run(["du", "-sh", "--", str(path)], capture_output=True, text=True, check=False)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout else "-"


def figures(store: Store, cid: int, planted: dict[str, object]) -> list[str]:
    row = store.campaign(cid)
    result = row.result or {}
    decisions = store.decisions(cid)
    steps = [d for d in decisions if d.role in (Role.STEP, Role.RECHECK)]
    boots = store.boots(cid)
    runs_by_boot: dict[int, list[float]] = {}
    for r in store.runs(cid):
        runs_by_boot.setdefault(r.boot_id, []).append(seconds(r.created))
    boot_spans = [(seconds(b.created), max(runs_by_boot.get(b.id, []), default=seconds(b.created) + b.boot_seconds))
                  for b in boots]
    builds = build_spans(store.builds(cid))
    wall = (seconds(row.created), time.time() if row.state == "running" else seconds(row.updated))
    first_build = min((s for _b, (s, _e) in builds), default=wall[1])
    culprit = str(result.get("culprit") or "")
    out = [f"campaign {cid} ({row.name}): {row.state}, {result.get('outcome', '-')}",
           f"  named     {culprit[:12] or '-'} {result.get('confidence_text', '')}; planted {str(planted.get('culprit', ''))[:12]}"
           f" -> {'right' if culprit and culprit == planted.get('culprit') else 'WRONG'}",
           f"  confirmed {(result.get('confirmation') or {}).get('text', '-')}",
           f"  revert    {(result.get('revert') or {}).get('text', '-')}",
           f"steps {len(steps)} ({len({d.commit for d in steps})} commits), boots {len(boots)} "
           f"({Counter(b.status for b in boots).most_common()}), builds {len(builds)}",
           "builds (commit, status, how, time):"]
    for b, (s, e) in builds:
        out.append(f"  {b.commit[:12]}  {b.status:<6} {how_built(b):<11} {e - s:7.1f} s")
    kinds: dict[str, list[float]] = {}
    for b, (s, e) in builds:
        kinds.setdefault(how_built(b), []).append(e - s)
    out.append("  by kind: " + ", ".join(f"{k} {len(t)} ({sum(t) / 60:.1f} min)" for k, t in kinds.items()))
    out.append("wall time:")
    out += split(wall, [s for _b, s in builds], boot_spans).lines()
    out.append(f"clone and range before the first build: {first_build - wall[0]:.1f} s; "
               f"the campaign's clone {disk(campaign_workdir(store, cid))}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.real_size")
    p.add_argument("dest", type=Path)
    p.add_argument("--commits", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mechanism", default="scheduler", choices=["queue-depth", "busy-wait", "mtu", "scheduler"])
    p.add_argument("--metric", help="bisect this metric instead of the campaign's (its own then watched)")
    p.add_argument("--threshold", default="-10%", help="with --metric: the change asked for")
    p.add_argument("--figures-only", action="store_true")
    a = p.parse_args()
    url = f"sqlite:///{(a.dest / 'store.db').resolve()}"
    if not a.figures_only:
        if not (a.dest / "planted.json").exists():
            subprocess.run([sys.executable, "-m", "bench.history", str(a.dest), "--commits", str(a.commits), "--seed",
                            str(a.seed), "--mechanism", a.mechanism], check=True)
        started = time.monotonic()
        rc = run([sys.executable, "-m", "orchestrator.cli", "bisect",
                  str(campaign_file(a.dest, a.metric, a.threshold).resolve()), "--store", url], a.dest / "campaign.log")
        print(f"vmbisect bisect: exit {rc} after {(time.monotonic() - started) / 60:.1f} min")
    store = Store(url, create=False)
    cid = max(c.id for c in store.campaigns())
    print("\n".join(figures(store, cid, json.loads((a.dest / "planted.json").read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
