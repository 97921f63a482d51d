"""The Python client against the real Go agent binary, over pipes (no guest boots here)."""

import subprocess
import time

import pytest

from orchestrator import paths
from orchestrator.agent.client import AgentClient, AgentSilent

AGENT = paths.agent_binary()
pytestmark = pytest.mark.skipif(not AGENT.is_file(), reason=f"agent not built at {AGENT} (make agent)")


@pytest.fixture
def agent():
    proc = subprocess.Popen([str(AGENT), "-stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    client = AgentClient.over_pipes(proc.stdout, proc.stdin)
    yield client
    proc.kill()
    proc.wait()


def test_hello_reports_kernel_cpus_and_block_devices(agent):
    hello = agent.hello(deadline=time.monotonic() + 10)
    assert hello["kernel_release"] and hello["cpus_online"] >= 1 and hello["mem_total_kib"] > 0
    assert hello["pid1"] is False and isinstance(hello["block_devices"], list)


def test_exec_round_trips_stdin_env_cwd_and_exit_code(agent):
    result = agent.exec(["sh", "-c", "cat; echo $FOO; pwd; exit 3"], env={"FOO": "bar"}, cwd="/tmp", stdin=b"in\n")
    assert result.stdout == b"in\nbar\n/tmp\n" and result.exit_code == 3 and not result.timed_out


def test_exec_of_many_megabytes_arrives_intact(agent):
    result = agent.exec(["head", "-c", str(24 << 20), "/dev/urandom"])
    assert result.exit_code == 0 and len(result.stdout) == 24 << 20


def test_exec_timeout_kills_the_process_group(agent):
    start = time.monotonic()
    result = agent.exec(["sh", "-c", "sleep 300 & sleep 300"], timeout_s=1)
    assert result.timed_out and time.monotonic() - start < 10
    leftovers = subprocess.run(["pgrep", "-f", "sleep 300"], capture_output=True, text=True).stdout
    assert leftovers == ""


def test_put_then_get_round_trips_binary(agent, tmp_path):
    data = bytes(range(256)) * 1000
    agent.put(str(tmp_path / "sub" / "blob"), data)
    assert agent.get(str(tmp_path / "sub" / "blob")) == data


def test_snapshot_returns_raw_proc_files(agent):
    snap = agent.snapshot()
    assert snap["files"]["/proc/stat"].startswith("cpu ") and "/proc/diskstats" in snap["files"]


def test_missing_program_is_an_error_not_a_hang(agent):
    from orchestrator.errors import WorkloadFailed

    with pytest.raises(WorkloadFailed, match="no-such-program"):
        agent.exec(["no-such-program"])
    assert agent.exec(["true"]).exit_code == 0


def test_silent_peer_is_reported_as_silence():
    proc = subprocess.Popen(["sleep", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    client = AgentClient.over_pipes(proc.stdout, proc.stdin)
    try:
        with pytest.raises(AgentSilent):
            client.hello(deadline=time.monotonic() + 1.5, resend_every_s=0.5)
    finally:
        proc.kill()
        proc.wait()
