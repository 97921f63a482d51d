"""`make reliability`: the fuzz, property and fault-injection harness with large budgets; the
figures replace the table between the markers in docs/reliability.md.

    python scripts/reliability.py [--examples N] [--kills N] [--fuzztime 60s]

`make test` runs the same tests with small budgets (tests/conftest.py profile "ci", 50 kills,
5 s of Go fuzzing)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- reliability:begin -->", "<!-- reliability:end -->"
TESTS = ["tests/integration/test_input_properties.py", "tests/unit/test_agent_protocol_properties.py",
         "tests/integration/test_fault_injection.py"]
TESTS += ["tests/integration/test_queue_workers.py::test_a_sigkilled_worker_s_campaign_is_taken_over_and_finished_with_nothing_lost_on_postgresql"]  # noqa: E501 - 20 kill points


def go_fuzz(fuzztime: str) -> dict[str, object]:
    go = os.environ.get("GO", "go")
    started = time.monotonic()
    done = subprocess.run([go, "test", "-run=^$", "-fuzz=FuzzRequestDecoding", f"-fuzztime={fuzztime}",
                           "-parallel=1", "."], cwd=ROOT / "guest-agent", capture_output=True, text=True)
    execs = re.findall(r"execs: (\d+)", done.stdout + done.stderr)
    seeds = len(list((ROOT / "guest-agent/testdata/fuzz/FuzzRequestDecoding").iterdir()))
    return {"ok": done.returncode == 0, "execs": int(execs[-1]) if execs else 0, "seeds": seeds,
            "seconds": round(time.monotonic() - started), "tail": (done.stdout + done.stderr).strip()[-400:]}


def table(records: list[dict[str, object]], fuzz: dict[str, object], args: argparse.Namespace,
          pytest_ok: bool) -> str:
    rows = ["| what | inputs or faults | outcomes |", "|---|---|---|"]
    for r in records:
        if "outcomes" in r:
            outcomes = r["outcomes"]
            assert isinstance(outcomes, dict)
            total = sum(outcomes.values())
            shown = "; ".join(f"{k}: {v:,}" for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1]))
            rows.append(f"| {r['property']} | {total:,} generated | {shown}; tracebacks: 0 |")
    for r in records:
        if "figures" in r:
            f = r["figures"]
            assert isinstance(f, dict)
            rows.append(f"| {r['property']} | {f['kills']} SIGKILLs over {f['campaigns']} campaigns "
                        f"({f['controllers']} controllers, {f['stale_locks_taken_over']} stale locks taken over) | "
                        f"right culprit {f['right_culprit']}/{f['campaigns']}; runs stored {f['runs_stored']:,}; "
                        f"samples lost {f['samples_lost']}; counted twice {f['counted_twice']}; half-written runs "
                        f"{f['half_written_runs']}; leftover guests {f['leftover_guests']}; {f['seconds']} s |")
    rows.append(f"| agent request decoding (Go fuzzing) | {fuzz['execs']:,} executions in {fuzz['seconds']} s from "
                f"{fuzz['seeds']} seeds | {'no crash, every error one JSON line' if fuzz['ok'] else 'FAILED'} |")
    load = os.getloadavg()
    faults = "no SIGKILL harness (--no-faults)" if args.no_faults else f"{args.kills} kills"
    head = (f"Measured {dt.date.today().isoformat()} by `make reliability` (examples per property "
            f"{args.examples}, {faults}, fuzz time {args.fuzztime}) on {os.cpu_count()} cores, load "
            f"average {load[0]:.1f} at the end; pytest {'passed' if pytest_ok else 'FAILED'}.")
    return head + "\n\n" + "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=int, default=3000, help="Hypothesis examples per property")
    p.add_argument("--kills", type=int, default=200, help="SIGKILLs on SQLite (a third of them on PostgreSQL)")
    p.add_argument("--fuzztime", default="120s", help="Go fuzzing time")
    p.add_argument("--no-faults", action="store_true",
                   help="leave the SIGKILL harness out (generated input and fuzzing only)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "tally.jsonl"
        env = {**os.environ, "HYPOTHESIS_PROFILE": "reliability", "VMBISECT_PROPERTY_EXAMPLES": str(args.examples),
               "VMBISECT_FAULT_KILLS": str(args.kills), "VMBISECT_RELIABILITY_LOG": str(log),
               "PYTHONPATH": str(ROOT)}
        tests = [t for t in TESTS if not (args.no_faults and "fault" in t)]
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                              env=env)
        records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    fuzz = go_fuzz(args.fuzztime)
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    DOC.write_text(text[:start] + "\n" + table(records, fuzz, args, done.returncode == 0) + "\n" + text[end:])
    print(f"reliability: {DOC} rewritten ({len(records)} properties, fuzz {fuzz['execs']} execs)")
    return 0 if done.returncode == 0 and fuzz["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
