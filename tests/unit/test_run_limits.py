"""A run is bounded by timeouts.run_s and a garbled agent is a failed run, not a traceback:
the runner gives the agent min(own budget, run_s), a timed-out tool is WorkloadFailed (the
engine skips the commit with that reason), and a line that is not a response ends the call
as AgentSilent (which the guest turns into WorkloadFailed with the console tail)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from orchestrator.agent.client import AgentClient, AgentSilent
from orchestrator.agent.protocol import ExecResult
from orchestrator.errors import WorkloadFailed
from orchestrator.workloads import runner
from orchestrator.workloads.definition import load_all, resolve
from orchestrator.workloads.guest import budget, check


class HangingGuest:
    """A guest whose fio never finishes: the agent reports it killed at the timeout."""

    hello = {"block_devices": [{"name": "sda"}], "cpus_online": 1}
    domain = None

    def __init__(self) -> None:
        self.timeouts: list[float] = []
        self.agent = self
        self.stderr = b""

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        pass

    def get(self, path: str) -> bytes:
        return b"[global]\n"

    def snapshot(self) -> dict[str, Any]:
        return {"monotonic_ns": 0}

    def exec(self, argv: list[str], timeout_s: float = 0.0, **_k: Any) -> ExecResult:
        self.timeouts.append(timeout_s)
        return ExecResult(-1, "SIGKILL", True, b"", self.stderr, timeout_s, STALL)


def test_a_hung_workload_is_ended_at_run_s_and_fails_the_run(monkeypatch):
    monkeypatch.setattr(runner, "host_stats", lambda _domain: {})
    plan = resolve(load_all(), "fio", ["rw=randread", "disks=1", "runtime=60"])
    guest = HangingGuest()
    with pytest.raises(WorkloadFailed, match="^fio timed out"):
        runner.run(guest, plan.workload, plan.points[0], "tcg", limit_s=90)
    assert guest.timeouts == [90]
    own = 2 * (60 + 1) + 120  # runtime and ramp_time twice over, plus a margin
    assert budget(plan.points[0]) == own and budget(plan.points[0], 9999) == own


STALL = ("load average: 3.02 1.10 0.40 3/61 415", "  412/415 D io_schedule fio",
         "  [  125.000100] INFO: task fio:415 blocked for more than 120 seconds.")


def test_a_tool_killed_at_its_budget_fails_as_timed_out_with_the_guest_as_it_stalled():
    with pytest.raises(WorkloadFailed) as failed:
        check(ExecResult(-1, "SIGKILL", True, b"", b"fio: job 1 started\nfio: job 2 started\n", 126.0, STALL),
              ["fio", "job.fio"])
    exc = failed.value
    assert str(exc) == "fio timed out: fio: job 2 started" and exc.timed_out
    assert exc.detail_label == "fio output"
    assert exc.detail == "\n".join(["fio: job 1 started", "fio: job 2 started",
                                     "--- the guest when the run was stopped ---", *STALL])
    with pytest.raises(WorkloadFailed) as silent:  # no output: the snapshot is the whole detail
        check(ExecResult(-1, "SIGKILL", True, b"", b"", 126.0, STALL), ["fio"])
    assert silent.value.detail == "\n".join(STALL) and silent.value.detail_label == "the guest when the run was stopped"


def test_a_tool_that_failed_in_time_is_not_timed_out():
    with pytest.raises(WorkloadFailed) as failed:
        check(ExecResult(1, "", False, b"", b"fio: io_u error\n", 2.0), ["fio"])
    assert not failed.value.timed_out and failed.value.detail == "fio: io_u error"


def test_the_runner_keeps_a_timeout_as_data_through_the_kernel_option_hint(monkeypatch):
    monkeypatch.setattr(runner, "host_stats", lambda _domain: {})
    plan = resolve(load_all(), "fio", ["rw=randread", "disks=1", "runtime=60"])
    guest = HangingGuest()
    guest.stderr = b"fio: io_setup: Function not implemented\n"  # a hint is added to the message
    with pytest.raises(WorkloadFailed, match="CONFIG_AIO") as failed:
        runner.run(guest, plan.workload, plan.points[0], "tcg", limit_s=90)
    assert failed.value.timed_out and STALL[1] in failed.value.detail


def test_a_line_that_is_not_a_response_ends_the_call_as_a_silent_agent():
    to_client, from_agent = os.pipe()
    from_client, to_agent = os.pipe()
    os.write(from_agent, b'{"id": "one", "ok": "yes"}\n')
    client = AgentClient.over_pipes(os.fdopen(to_client, "rb"), os.fdopen(to_agent, "wb"))
    try:
        with pytest.raises(AgentSilent, match="malformed agent response"):
            client.call("snapshot", 5.0)
    finally:
        client.close()
        os.close(from_agent)
        os.close(from_client)
