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
from orchestrator.workloads.guest import budget


class HangingGuest:
    """A guest whose fio never finishes: the agent reports it killed at the timeout."""

    hello = {"block_devices": [{"name": "sda"}], "cpus_online": 1}
    domain = None

    def __init__(self) -> None:
        self.timeouts: list[float] = []
        self.agent = self

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        pass

    def get(self, path: str) -> bytes:
        return b"[global]\n"

    def snapshot(self) -> dict[str, Any]:
        return {"monotonic_ns": 0}

    def exec(self, argv: list[str], timeout_s: float = 0.0, **_k: Any) -> ExecResult:
        self.timeouts.append(timeout_s)
        return ExecResult(-1, "SIGKILL", True, b"", b"", timeout_s)


def test_a_hung_workload_is_ended_at_run_s_and_fails_the_run(monkeypatch):
    monkeypatch.setattr(runner, "host_stats", lambda _domain: {})
    plan = resolve(load_all(), "fio", ["rw=randread", "disks=1", "runtime=60"])
    guest = HangingGuest()
    with pytest.raises(WorkloadFailed, match="^fio timed out"):
        runner.run(guest, plan.workload, plan.points[0], "tcg", limit_s=90)
    assert guest.timeouts == [90]
    own = 2 * (60 + 1) + 120  # runtime and ramp_time twice over, plus a margin
    assert budget(plan.points[0]) == own and budget(plan.points[0], 9999) == own


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
