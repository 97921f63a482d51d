"""dbench: the commands that make a fresh filesystem and run a load file, and its output
parsed into throughput, op rate, worst latency and the time one client needs for the load file."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from orchestrator.errors import WorkloadFailed
from orchestrator.workloads.guest import Guestlike, Params, data_disks, run_ok
from orchestrator.workloads.params import ParamValue
from orchestrator.workloads.result import ToolRun

MOUNTPOINT = "/mnt/vmbisect"
_THROUGHPUT = re.compile(r"^Throughput ([\d.]+) MB/sec\s+(\d+) clients\s+\d+ procs\s+max_latency=([\d.]+) ms",
                         re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*([A-Za-z]+)\s+(\d+)\s+[\d.]+\s+[\d.]+\s*$", re.MULTILINE)


def mkfs_argv(fs: ParamValue, device: str) -> list[str]:
    return {"ext4": ["mkfs.ext4", "-q", "-F", device], "xfs": ["mkfs.xfs", "-q", "-f", device]}[str(fs)]


def setup_argvs(params: Mapping[str, ParamValue], device: str) -> list[list[str]]:
    """Unmount whatever a previous run left, make the filesystem, mount it."""
    return [
        ["mkdir", "-p", MOUNTPOINT],
        mkfs_argv(params["fs"], device),
        ["mount", "-t", str(params["fs"]), device, MOUNTPOINT],
    ]


def teardown_argv() -> list[str]:
    return ["umount", MOUNTPOINT]


def argv(params: Mapping[str, ParamValue]) -> list[str]:
    return ["dbench", "-t", str(params["runtime"]), "-D", MOUNTPOINT, "-c", str(params["loadfile"]),
            str(params["clients"])]


def loadfile_ops(loadfile_text: str) -> int:
    """Operations in one pass of a load file: its non-empty, non-comment lines."""
    return sum(1 for line in loadfile_text.splitlines() if line.strip() and not line.startswith("#"))


def parse(text: str, runtime_s: float, ops_per_loadfile: int) -> ToolRun:
    m = _THROUGHPUT.search(text)
    if not m:
        raise WorkloadFailed("dbench: no Throughput line in its output")
    throughput, clients, max_latency = float(m.group(1)), int(m.group(2)), float(m.group(3))
    table = text[: m.start()].rpartition("Operation")[2]
    ops = sum(int(count) for _name, count in _TABLE_ROW.findall(table))
    ops_rate = ops / runtime_s
    metrics = {"throughput": throughput, "ops_rate": ops_rate, "max_latency": max_latency}
    if ops_rate > 0:
        metrics["loadfile_time"] = ops_per_loadfile / (ops_rate / clients) * 1e3
    return ToolRun(metrics, ops_rate, throughput * 1e6)


class Dbench:
    def prepare(self, guest: Guestlike) -> None:
        pass

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        names = data_disks(guest)
        if int(params["disk"]) >= len(names):
            raise WorkloadFailed(f"dbench: disk={params['disk']} but the guest has {len(names)} data disk(s)")
        return [names[int(params["disk"])]]

    def before(self, guest: Guestlike, params: Params) -> None:
        for argv in setup_argvs(params, "/dev/" + self.disks(guest, params)[0]):
            run_ok(guest, argv)

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        out = run_ok(guest, argv(params), budget_s)
        return {"dbench.txt": out.stdout.decode(errors="replace"),
                "loadfile_ops": str(loadfile_ops(guest.agent.get(str(params["loadfile"])).decode()))}

    def after(self, guest: Guestlike, params: Params) -> None:
        run_ok(guest, teardown_argv())

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return parse(raw["dbench.txt"], float(params["runtime"]), int(raw["loadfile_ops"]))

    def commands(self, params: Params, raw: Mapping[str, str], disks: Sequence[str]) -> list[str]:
        device = "/dev/" + (disks[0] if disks else "DISK")
        return [shlex.join(a) for a in (*setup_argvs(params, device), argv(params), teardown_argv())]


TOOL = Dbench()
