"""Run-to-run noise of every workload preset on this host: CoV of its main metric over
repetitions and boots, and the repetitions a two-sample t-test needs to see a 10 % change.

    .venv/bin/python bench/workload_noise.py [--reps 5] [--boots 2] [--out FILE] [PRESET ...]

Prints figures (a markdown table); never fails on a slow or noisy host. Measure on a quiet
host: before each preset it waits (up to --wait seconds) until no compiler (cc1) runs and the
host is idle over a 5 s sample, and skips the preset otherwise unless --anyway is given. Each
row also shows an upper bound of the host CPUs busy outside the guest during the preset (host busy
CPUs over the whole run, boots included, minus the guest QEMU CPUs during its samples): near 0 means the
figures are this host's own noise, well above 0 means something else ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.stats import reps_to_detect, summarize

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


def host_busy() -> tuple[float, float]:
    """(busy seconds of all host CPUs, monotonic seconds) now, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK"), time.monotonic()


def busy_cpus_over(seconds: float) -> float:
    (b0, t0) = host_busy()
    time.sleep(seconds)
    (b1, t1) = host_busy()
    return (b1 - b0) / (t1 - t0)


def wait_quiet(limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    while True:
        if not compiler_running() and busy_cpus_over(5.0) < 0.3:
            return True
        if time.monotonic() > deadline:
            return False


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


def rows(preset: str, doc: dict, others: float) -> list[dict]:
    metric = PRESETS[preset][0]
    points: dict[str, dict[str, list[float]]] = {}
    for s in doc["samples"]:
        p = points.setdefault(s["point"], {metric: [], COST: []})
        p[metric].append(s["metrics"][metric]["value"])
        p[COST].append(s["metrics"][COST]["value"])
        p.setdefault(f"boot{s['boot']}", []).append(s["metrics"][metric]["value"])
    out = []
    for point, v in points.items():
        main, cost = summarize(v[metric]), summarize(v[COST])
        within = [100 * summarize(x).cov for k, x in v.items() if k.startswith("boot")]
        out.append({"preset": preset, "point": point, "metric": metric, "n": main.n, "mean": main.mean,
                    "coeffvar": 100 * main.cov, "within_boot_coeffvar": sum(within) / len(within),
                    "reps_10pct": reps_to_detect(main.cov, 0.10), "cost_mean": cost.mean,
                    "cost_coeffvar": 100 * cost.cov, "cost_reps_10pct": reps_to_detect(cost.cov, 0.10),
                    "other_busy_cpus": others, "samples": v[metric]})
    return out


def guest_cpus(doc: dict) -> tuple[float, float]:
    """(host CPU seconds of the guest inside sample windows, seconds of those windows)."""
    cpu = sum(s["metrics"]["host_cpu"]["value"] for s in doc["samples"])
    wall = sum(s["host"][1]["monotonic_s"] - s["host"][0]["monotonic_s"] for s in doc["samples"])
    return cpu, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=list(PRESETS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--boots", type=int, default=2)
    ap.add_argument("--out", type=Path, help="also write the rows as JSON here")
    ap.add_argument("--anyway", action="store_true", help="measure even when the host is not quiet")
    ap.add_argument("--wait", type=float, default=600.0, help="seconds to wait for a quiet host per preset")
    a = ap.parse_args()
    all_rows = []
    print("| preset | point | metric | n | mean | CoV % | within-boot CoV % | reps for 10 % | guest CPU-us/op "
          "| its CoV % | reps | other busy CPUs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for preset in a.presets:
        if not wait_quiet(a.wait) and not a.anyway:
            print(f"| {preset} | skipped: the host was not quiet within {a.wait:g} s |", flush=True)
            continue
        busy0 = host_busy()
        try:
            doc = measure(preset, a.reps, a.boots)
        except RuntimeError as exc:
            print(f"| {preset} | failed: {exc} |", flush=True)
            continue
        busy1 = host_busy()
        guest_cpu, guest_wall = guest_cpus(doc)
        others = (busy1[0] - busy0[0]) / (busy1[1] - busy0[1]) - guest_cpu / guest_wall
        for r in rows(preset, doc, others):
            all_rows.append(r)
            print(f"| {r['preset']} | {r['point']} | {r['metric']} | {r['n']} | {r['mean']:.4g} | "
                  f"{r['coeffvar']:.1f} | {r['within_boot_coeffvar']:.1f} | {r['reps_10pct']} | "
                  f"{r['cost_mean']:.4g} | {r['cost_coeffvar']:.1f} | {r['cost_reps_10pct']} | {others:.2f} |",
                  flush=True)
    if a.out:
        a.out.write_text(json.dumps(all_rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
