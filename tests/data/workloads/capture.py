"""Re-capture the golden workload samples: real `vmbisect measure --json` runs in real guests.

    .venv/bin/python tests/data/workloads/capture.py [CASE ...]

Each case writes workloads/<workload>/testdata/<case>.sample.json (one repetition: parameters, raw tool
output, /proc snapshots, libvirt CPU figures) and <case>.expected.json (the metrics the parsers
derived at capture time). Review the expected values against the raw output before committing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

KERNEL = ["--kernel", "/boot/vmlinuz-6.1.0-56-amd64", "--initrd-modules-from", "6.1.0-56-amd64", "--accel", "tcg"]
WORKLOADS = Path(__file__).resolve().parents[3] / "workloads"
CASES: dict[str, list[str]] = {
    "fio/randread-per-disk": ["--workload", "fio", "--disks", "2", "--disk-size", "256", "--param", "numjobs=2",
                              "--param", "runtime=2"],
    "fio/seqwrite-64k-one-job": ["--workload", "fio-seqwrite-64k", "--disks", "2", "--disk-size", "256",
                                 "--param", "layout=one-job", "--param", "ioengine=io_uring", "--param", "runtime=2"],
    "fio/randrw-psync": ["--workload", "fio", "--disks", "1", "--disk-size", "256", "--param", "rw=randrw",
                         "--param", "ioengine=psync", "--param", "iodepth=1", "--param", "runtime=2"],
    "dbench/ext4-2-clients": ["--workload", "dbench", "--disks", "1", "--disk-size", "512", "--param", "clients=2",
                              "--param", "runtime=3"],
    "dbench/xfs-4-clients": ["--workload", "dbench-xfs", "--disks", "1", "--disk-size", "512", "--param",
                             "clients=4", "--param", "runtime=3"],
    "netperf/stream-small-2-streams": ["--workload", "netperf-tcp-stream-small", "--param", "streams=2",
                                       "--param", "runtime=2"],
    "netperf/maerts-large": ["--workload", "netperf-tcp-maerts-large", "--param", "runtime=2"],
    "netperf/rr": ["--workload", "netperf-tcp-rr", "--param", "runtime=2"],
}


def capture(case: str) -> None:
    argv = [sys.executable, "-m", "orchestrator.cli", "measure", *KERNEL, *CASES[case], "--reps", "1", "--json"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{case}: measure failed: {done.stderr}")
    doc = json.loads(done.stdout)
    sample = doc["samples"][0]
    expected = sample.pop("metrics")
    workload, name = case.split("/")
    base = WORKLOADS / workload / "testdata" / name
    base.parent.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".sample.json").write_text(json.dumps(sample, indent=1, sort_keys=True) + "\n")
    base.with_suffix(".expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    for name in sys.argv[1:] or CASES:
        capture(name)
        print("captured", name)
