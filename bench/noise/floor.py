"""The host's own noise floor: fixed CPU work on every host CPU at once, counted in windows as
long as a workload's run and grouped as the runs of a boot, printed in the noise bench's table.
No guest measures steadier than its host runs it: under TCG every guest instruction is host
CPU work, so a host whose speed moves from window to window moves every guest metric as much.

    python -m bench.noise.floor [--window 5] [--runs 3] [--boots 12] [--out FILE.json]

Each CPU's worker counts fixed chunks of arithmetic per window; a "boot" is `runs` consecutive
windows, the next boot starts after a pause as long as a guest's boot (`--gap`). Prints the
between-"boot" and within-"boot" CoV of the work per second of the whole host and of each CPU,
and the share of the host's CPU time its own host took (steal) during the bench.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from bench.noise import rows, table

CHUNK = 20_000  # iterations of the worker's loop between looks at the clock


def work(windows: int, window_s: float, start: float) -> list[float]:
    """Chunks of arithmetic done per second in each of `windows` windows of `window_s` seconds
    from `start` (time.monotonic()), on the calling CPU."""
    counts = [0] * windows
    x = 1
    while time.monotonic() < start:
        time.sleep(0.001)
    end = start + windows * window_s
    now = time.monotonic()
    while now < end:
        for _ in range(CHUNK):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        now = time.monotonic()
        i = int((now - start) // window_s)
        if i < windows:
            counts[i] += 1
    return [c / window_s for c in counts]


def steal_ticks() -> tuple[int, int]:
    """(steal, all) ticks of every CPU from /proc/stat."""
    fields = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return fields[7] if len(fields) > 7 else 0, sum(fields[:8])


def bench(boots: int, runs: int, window_s: float, gap_s: float, cpus: int) -> dict[str, list[list[float]]]:
    """Per CPU ('cpuN') and for the whole host ('host'), each boot's work per second per window."""
    out: dict[str, list[list[float]]] = {"host": [], **{f"cpu{i}": [] for i in range(cpus)}}
    with multiprocessing.get_context("fork").Pool(cpus) as pool:
        for b in range(boots):
            start = time.monotonic() + 0.5
            per_cpu = pool.starmap(work, [(runs, window_s, start)] * cpus)
            for i, windows in enumerate(per_cpu):
                out[f"cpu{i}"].append(windows)
            out["host"].append([sum(w[r] for w in per_cpu) for r in range(runs)])
            print(f"boot {b + 1}: host work per s {[round(v) for v in out['host'][-1]]}", flush=True)
            time.sleep(gap_s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.noise.floor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--window", type=float, default=5.0, help="seconds a window (a workload run)")
    ap.add_argument("--runs", type=int, default=3, help="windows a boot")
    ap.add_argument("--boots", type=int, default=12)
    ap.add_argument("--gap", type=float, default=20.0, help="seconds between boots (a guest's boot)")
    ap.add_argument("--out", type=Path, help="also write every window's figure as JSON here")
    a = ap.parse_args()
    if min(a.window, a.runs, a.boots) <= 0 or a.gap < 0:
        print("bench.noise.floor: window, runs, boots: positive; gap: not negative", file=sys.stderr)
        return 2
    cpus = os.cpu_count() or 1
    print(f"host floor: {cpus} CPUs busy, {a.boots} boots of {a.runs} windows of {a.window:g} s, "
          f"{a.gap:g} s apart", flush=True)
    s0 = steal_ticks()
    data = bench(a.boots, a.runs, a.window, a.gap, cpus)
    s1 = steal_ticks()
    steal = (s1[0] - s0[0]) / max(1, s1[1] - s0[1])
    print()
    print("\n".join(table([r for name, per in data.items() for r in rows({name: {"work_per_s": per}}, "work_per_s")])))
    print(f"\nsteal: {steal:.1%} of the host's CPU time during the bench")
    if a.out:
        a.out.write_text(json.dumps({"window_s": a.window, "steal": steal, "boots": data}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
