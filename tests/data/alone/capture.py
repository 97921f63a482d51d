"""Capture a shipped series bisected alone: its campaign file as shipped, `vmbisect bisect` in a
store of its own on this machine with nothing else running, and the boots it counted written
to <series>.json (each commit's boots, each boot's runs of the campaign's metric). The
two-worker lab test (tests/e2e/test_two_workers_lab.py) holds the spread between boots of its
campaigns, which share one host, against these.

    .venv/bin/python tests/data/alone/capture.py dbench netperf
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from orchestrator.demo import SERIES, ensure_series_repo
from orchestrator.kinds.table import metric_of
from orchestrator.store import Store

HERE = Path(__file__).resolve().parent


def capture(name: str) -> None:
    series = SERIES[name]
    repo = ensure_series_repo(series)
    with tempfile.TemporaryDirectory() as tmp:
        spec = {**yaml.safe_load(series.campaign.read_text()), "repository": str(repo.path)}
        path = Path(tmp) / "campaign.yaml"
        path.write_text(yaml.safe_dump(spec))
        url = f"sqlite:///{tmp}/alone.db"
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "bisect", str(path), "--store", url],
                              capture_output=True, text=True, check=False)
        store = Store(url)
        if not store.campaigns():
            sys.exit(f"{name}: vmbisect bisect exited {done.returncode}: {done.stderr[-2000:]}")
        row = store.campaign(1)  # a campaign the noise refused measured the series alone as well
        counted = store.boot_samples(1, metric_of(row) or "")
        boots = {commit: [list(b.runs) for b in bs] for commit, bs in counted.items()}
        out = {"series": name, "campaign": str(series.campaign.relative_to(HERE.parents[2])),
               "measured": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
               "minutes": round((time.monotonic() - began) / 60, 1), "state": row.state, "culprit": (row.result or {}).get("culprit"),
               "boots": boots}
    (HERE / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{name}: {sum(len(bs) for bs in boots.values())} boots in {out['minutes']} min -> {name}.json")


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["dbench", "netperf"]:
        capture(arg)
