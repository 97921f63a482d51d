"""fio: job files rendered from parameters, and its JSON+ output parsed into metrics.

JSON+ (`--output-format=json+`) is fio's JSON with the completion latency histogram (`bins`)
of every job; merging histograms gives exact percentiles over jobs and disks, computed the
way fio computes its own.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from orchestrator.errors import WorkloadFailed
from orchestrator.workloads.guest import Guestlike, Params, data_disks, run_ok
from orchestrator.workloads.params import ParamValue
from orchestrator.workloads.result import ToolRun

JOB_PATH = "/tmp/vmbisect/fio.job"
PERCENTILES = (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9))
DIRECTIONS = ("read", "write")
_DISK_NAME = re.compile(r"[a-z][a-z0-9]*")


def select_disks(block_devices: Iterable[str], count: ParamValue) -> list[str]:
    """The first `count` data disks (all with 'all') of the guest, by name."""
    names = sorted(n for n in block_devices if not n.startswith("sr"))
    for n in names:
        if not _DISK_NAME.fullmatch(n):
            raise WorkloadFailed(f"fio: guest block device name {n!r} is not a plain disk name")
    wanted = len(names) if count == "all" else int(count)
    if wanted > len(names):
        raise WorkloadFailed(f"fio: disks={count} but the guest has {len(names)} data disk(s)")
    return names[:wanted]


def render_job(params: Mapping[str, ParamValue], disks: list[str]) -> str:
    """The job file: a [global] section from the parameters (rate_iops only when it caps),
    then one job per disk (layout per-disk) or one job spanning every disk (layout one-job)."""
    lines = [
        "[global]",
        f"ioengine={params['ioengine']}",
        f"direct={1 if params['direct'] else 0}",
        f"rw={params['rw']}",
        f"bs={params['bs']}",
        f"iodepth={params['iodepth']}",
        f"numjobs={params['numjobs']}",
        f"ramp_time={params['ramp_time']}",
        f"runtime={params['runtime']}",
        "time_based=1",
    ]
    if params["rate_iops"]:
        lines.append(f"rate_iops={params['rate_iops']}")
    if params["layout"] == "per-disk":
        for d in disks:
            lines += ["", f"[{d}]", f"filename=/dev/{d}"]
    else:
        lines += ["", "[all]", "filename=" + ":".join(f"/dev/{d}" for d in disks)]
    return "\n".join(lines) + "\n"


def argv(job_path: str = JOB_PATH) -> list[str]:
    return ["fio", "--output-format=json+", job_path]


def percentile(bins: Mapping[int, int], pct: float) -> float:
    """fio's rule: the first histogram value where the running count reaches pct% of all."""
    total = sum(bins.values())
    running = 0
    for value in sorted(bins):
        running += bins[value]
        if running >= pct / 100.0 * total:
            return float(value)
    return 0.0


def parse(text: str) -> ToolRun:
    """Metrics in total and per job name (`read_iops`, `read_iops.sda`); latencies in us."""
    try:
        doc = json.loads(_json_part(text))
    except ValueError as exc:
        raise WorkloadFailed(f"fio: output is not JSON: {exc}") from exc
    jobs = doc.get("jobs") or []
    errors = [f"{j['jobname']}: error {j['error']}" for j in jobs if j.get("error")]
    if not jobs or errors:
        raise WorkloadFailed("fio: " + ("; ".join(errors) or "no jobs in the output"))
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for j in jobs:
        groups[j["jobname"]].append(j)
    metrics = _aggregate(jobs, "")
    if len(groups) > 1:
        for name, members in groups.items():
            metrics.update(_aggregate(members, f".{name}"))
    op_rate = sum(j[d]["iops"] for j in jobs for d in DIRECTIONS)
    byte_rate = sum(j[d]["bw_bytes"] for j in jobs for d in DIRECTIONS)
    return ToolRun(metrics, op_rate, byte_rate)


def _json_part(text: str) -> str:
    """fio may print notes before the JSON document (e.g. about a lowered iodepth)."""
    start = text.find("{")
    return text[start:] if start >= 0 else text


def _aggregate(jobs: list[dict[str, Any]], suffix: str) -> dict[str, float]:
    out: dict[str, float] = {"iops" + suffix: sum(j[d]["iops"] for j in jobs for d in DIRECTIONS)}
    for d in DIRECTIONS:
        sides = [j[d] for j in jobs]
        if sum(s["total_ios"] for s in sides) == 0:
            continue
        out[f"{d}_iops{suffix}"] = sum(s["iops"] for s in sides)
        out[f"{d}_bw{suffix}"] = sum(s["bw_bytes"] for s in sides) / (1 << 20)
        n = sum(s["clat_ns"]["N"] for s in sides)
        out[f"{d}_clat_mean{suffix}"] = sum(s["clat_ns"]["mean"] * s["clat_ns"]["N"] for s in sides) / n / 1e3
        bins: dict[int, int] = defaultdict(int)
        for s in sides:
            for value, count in (s["clat_ns"].get("bins") or {}).items():
                bins[int(value)] += count
        for label, pct in PERCENTILES:
            out[f"{d}_clat_{label}{suffix}"] = percentile(bins, pct) / 1e3
    return out


class Fio:
    def prepare(self, guest: Guestlike) -> None:
        pass

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        return select_disks(data_disks(guest), params["disks"])

    def before(self, guest: Guestlike, params: Params) -> None:
        guest.agent.put(JOB_PATH, render_job(params, self.disks(guest, params)).encode())

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        job = guest.agent.get(JOB_PATH).decode()
        out = run_ok(guest, argv(), budget_s)
        return {"fio.job": job, "fio.json": out.stdout.decode(errors="replace")}

    def after(self, guest: Guestlike, params: Params) -> None:
        pass

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return parse(raw["fio.json"])

    def commands(self, params: Params, raw: Mapping[str, str], disks: Sequence[str]) -> list[str]:
        job = raw.get("fio.job") or render_job(params, list(disks) or ["DISK"])
        return [f"mkdir -p {JOB_PATH.rpartition('/')[0]}", f"cat > {JOB_PATH} <<'EOF'", *job.rstrip("\n").split("\n"),
                "EOF", shlex.join(argv())]


TOOL = Fio()
