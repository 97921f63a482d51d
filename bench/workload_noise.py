"""Run-to-run noise of every workload preset on this host: CoV of its main metric over
repetitions and boots, and the repetitions a two-sample t-test needs to see a 10 % change.

    .venv/bin/python bench/workload_noise.py [--reps 5] [--boots 2] [--out FILE] [PRESET ...]

Prints figures (a markdown table); never fails on a slow or noisy host. Measure on a quiet
host: it refuses to start while a compiler (cc1) runs unless --anyway is given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.workloads.stats import reps_to_detect, summarise

KERNEL = ["--kernel", "/boot/vmlinuz-6.1.0-56-amd64", "--initrd-modules-from", "6.1.0-56-amd64", "--accel", "tcg"]
SEQ_SHAPE = ["--vcpus", "2", "--disks", "8", "--disk-size", "256", "--controller", "lsisas1078"]
# preset -> (main metric, guest shape and parameters)
PRESETS: dict[str, tuple[str, list[str]]] = {
    "fio-seqread-4k": ("iops", SEQ_SHAPE),
    "fio-seqwrite-4k": ("iops", SEQ_SHAPE),
    "fio-seqread-64k": ("iops", SEQ_SHAPE),
    "fio-seqwrite-64k": ("iops", SEQ_SHAPE),
    "fio-randread-4k": ("iops", ["--vcpus", "2", "--disks", "1", "--disk-size", "256", "--controller", "virtio-blk",
                                 "--param", "numjobs=1,8,64"]),
    "dbench": ("throughput", ["--vcpus", "2", "--disks", "1", "--disk-size", "1024", "--param", "clients=1,4"]),
    "netperf-tcp-stream-small": ("throughput", ["--vcpus", "2"]),
    "netperf-tcp-stream-large": ("throughput", ["--vcpus", "2"]),
    "netperf-tcp-maerts-small": ("throughput", ["--vcpus", "2"]),
    "netperf-tcp-maerts-large": ("throughput", ["--vcpus", "2"]),
    "netperf-tcp-rr": ("transactions", ["--vcpus", "2"]),
}
COST = "guest_cpu_us_per_op"


def compiler_running() -> bool:
    return subprocess.run(["pgrep", "-x", "cc1"], capture_output=True, check=False).returncode == 0


def measure(preset: str, reps: int, boots: int) -> dict:
    _metric, shape = PRESETS[preset]
    argv = [sys.executable, "-m", "orchestrator.cli", "measure", *KERNEL, "--workload", preset, *shape,
            "--reps", str(reps), "--boots", str(boots), "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    return json.loads(done.stdout)


def rows(preset: str, doc: dict) -> list[dict]:
    metric = PRESETS[preset][0]
    points: dict[str, dict[str, list[float]]] = {}
    for s in doc["samples"]:
        p = points.setdefault(s["point"], {metric: [], COST: []})
        p[metric].append(s["metrics"][metric]["value"])
        p[COST].append(s["metrics"][COST]["value"])
    out = []
    for point, v in points.items():
        main, cost = summarise(v[metric]), summarise(v[COST])
        out.append({"preset": preset, "point": point, "metric": metric, "n": main.n, "mean": main.mean,
                    "coeffvar": main.coeffvar, "reps_10pct": reps_to_detect(main.coeffvar),
                    "cost_mean": cost.mean, "cost_coeffvar": cost.coeffvar,
                    "cost_reps_10pct": reps_to_detect(cost.coeffvar)})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=list(PRESETS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--out", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--anyway", action="store_true", help="measure even while a compiler runs")
    a = ap.parse_args()
    all_rows = []
    print("| preset | point | metric | n | mean | CoV % | reps for 10 % | guest CPU-us/op | its CoV % | reps |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for preset in a.presets:
        if compiler_running() and not a.anyway:
            print(f"| {preset} | skipped: a compiler runs on this host ({os.getloadavg()[0]:.1f} load) |")
            continue
        try:
            doc = measure(preset, a.reps, a.boots)
        except RuntimeError as exc:
            print(f"| {preset} | failed: {exc} |")
            continue
        for r in rows(preset, doc):
            all_rows.append({**r, "load_after": os.getloadavg()[0], "compiler_after": compiler_running()})
            print(f"| {r['preset']} | {r['point']} | {r['metric']} | {r['n']} | {r['mean']:.4g} | "
                  f"{r['coeffvar']:.1f} | {r['reps_10pct']} | {r['cost_mean']:.4g} | {r['cost_coeffvar']:.1f} | "
                  f"{r['cost_reps_10pct']} |", flush=True)
    if a.out:
        a.out.write_text(json.dumps(all_rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
