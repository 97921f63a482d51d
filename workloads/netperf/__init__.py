"""netperf: argument lists for netserver and N concurrent netperf processes over loopback, and
their keyval output (`-k`) parsed into throughput, transactions and CPU figures.

glibc's getaddrinfo (AI_ADDRCONFIG, which netperf uses) refuses 127.0.0.1 when the only IPv4
address is 127.0.0.1 itself, so setup adds 127.0.0.2 to `lo` first: no network leaves the guest.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from statistics import fmean

from orchestrator.errors import WorkloadFailed
from orchestrator.workloads.guest import Guestlike, Params, run_ok
from orchestrator.workloads.params import ParamValue
from orchestrator.workloads.result import ToolRun

PEER = "127.0.0.1"
OUTPUT_PREFIX = "/tmp/vmbisect/netperf.out"
PARALLEL_PATH = "/tmp/vmbisect/parallel.sh"
# Runs "$3..." $1 times at once, each writing to "$2.<i>"; values arrive as arguments, never as code.
PARALLEL_SCRIPT = """#!/bin/sh
n=$1; out=$2; shift 2
i=0
while [ "$i" -lt "$n" ]; do "$@" >"$out.$i" 2>&1 & i=$((i + 1)); done
wait
"""
SELECTORS = ("THROUGHPUT", "THROUGHPUT_UNITS", "LOCAL_CPU_UTIL", "REMOTE_CPU_UTIL", "LOCAL_SD", "REMOTE_SD",
             "SD_UNITS", "ELAPSED_TIME", "LOCAL_SEND_SIZE", "REMOTE_RECV_SIZE", "LOCAL_BYTES_SENT",
             "LOCAL_BYTES_RECVD", "REMOTE_BYTES_SENT", "REMOTE_BYTES_RECVD", "LOCAL_CPU_METHOD",
             "MEAN_LATENCY", "P99_LATENCY", "PROTOCOL", "DIRECTION")
_MBIT = {"10^6bits/s": 1.0, "10^9bits/s": 1e3, "10^3bits/s": 1e-3}


def setup_argvs() -> list[list[str]]:
    return [["ifconfig", "lo:1", "127.0.0.2", "netmask", "255.0.0.0", "up"], ["netserver", "-4"]]


def netperf_argv(params: Mapping[str, ParamValue]) -> list[str]:
    test = str(params["test"])
    argv = ["netperf", "-4", "-P", "0", "-H", PEER, "-t", test, "-l", str(params["runtime"]), "-c", "-C", "--"]
    if int(params["socket_size"]):
        argv += ["-s", str(params["socket_size"]), "-S", str(params["socket_size"])]
    if test == "TCP_RR":
        argv += ["-r", f"{params['request_size']},{params['response_size']}"]
    else:
        argv += ["-m", str(params["message_size"])]
    return argv + ["-k", ",".join(SELECTORS)]


def run_argv(params: Mapping[str, ParamValue]) -> list[str]:
    return ["sh", PARALLEL_PATH, str(params["streams"]), OUTPUT_PREFIX, *netperf_argv(params)]


def output_paths(params: Mapping[str, ParamValue]) -> list[str]:
    return [f"{OUTPUT_PREFIX}.{i}" for i in range(int(params["streams"]))]


def keyval(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.isupper():
            out[key] = value.strip()
    return out


def parse(outputs: list[str], params: Mapping[str, ParamValue]) -> ToolRun:
    """Sum of the streams' throughput (or transactions); CPU and service demand as netperf
    measured them (every stream sees the same machine), averaged over streams."""
    runs = [keyval(t) for t in outputs]
    for i, r in enumerate(runs):
        if "THROUGHPUT" not in r:
            first = outputs[i].strip().splitlines()[:1]
            raise WorkloadFailed(f"netperf stream {i}: no result: {first[0] if first else 'no output'}")
    rr = params["test"] == "TCP_RR"
    sd = "_sd_rr" if rr else "_sd"  # service demand is per transaction (RR) or per KB (streams)
    metrics = {
        "local_cpu_util": fmean(float(r["LOCAL_CPU_UTIL"]) for r in runs),
        "remote_cpu_util": fmean(float(r["REMOTE_CPU_UTIL"]) for r in runs),
        "local" + sd: fmean(float(r["LOCAL_SD"]) for r in runs),
        "remote" + sd: fmean(float(r["REMOTE_SD"]) for r in runs),
    }
    if rr:
        rate = sum(float(r["THROUGHPUT"]) for r in runs)
        metrics["transactions"] = rate
        metrics["rr_latency_mean"] = fmean(float(r["MEAN_LATENCY"]) for r in runs)
        metrics["rr_latency_p99"] = max(float(r["P99_LATENCY"]) for r in runs)
        return ToolRun(metrics, rate, rate * (int(params["request_size"]) + int(params["response_size"])))
    units = {r["THROUGHPUT_UNITS"] for r in runs}
    if not units <= _MBIT.keys():
        raise WorkloadFailed(f"netperf: unexpected throughput units {', '.join(sorted(units))}")
    mbit = sum(float(r["THROUGHPUT"]) * _MBIT[r["THROUGHPUT_UNITS"]] for r in runs)
    metrics["throughput"] = mbit
    byte_rate = mbit * 1e6 / 8
    return ToolRun(metrics, byte_rate / int(params["message_size"]), byte_rate)


class Netperf:
    def prepare(self, guest: Guestlike) -> None:
        guest.agent.put(PARALLEL_PATH, PARALLEL_SCRIPT.encode(), mode=0o755)
        for argv in setup_argvs():
            run_ok(guest, argv)

    def disks(self, guest: Guestlike, params: Params) -> list[str]:
        return []

    def before(self, guest: Guestlike, params: Params) -> None:
        pass

    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]:
        run_ok(guest, run_argv(params), budget_s)
        return {f"netperf.{i}": guest.agent.get(p).decode(errors="replace")
                for i, p in enumerate(output_paths(params))}

    def after(self, guest: Guestlike, params: Params) -> None:
        pass

    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun:
        return parse([raw[f"netperf.{i}"] for i in range(int(params["streams"]))], params)

    def commands(self, params: Params, raw: Mapping[str, str], disks: Sequence[str]) -> list[str]:
        """netserver, then `streams` netperf processes at once (what PARALLEL_SCRIPT does), each
        writing to OUTPUT_PREFIX.<i> (its directory made first, as the agent has it)."""
        return [f"mkdir -p {shlex.quote(OUTPUT_PREFIX.rsplit('/', 1)[0])}", *(shlex.join(a) for a in setup_argvs()),
                f"for i in $(seq {int(params['streams'])}); do",
                f"  {shlex.join(netperf_argv(params))} > {OUTPUT_PREFIX}.$i &", "done; wait"]


TOOL = Netperf()
