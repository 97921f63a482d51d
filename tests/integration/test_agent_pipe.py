"""The Python client against the real Go agent binary, over pipes (no guest boots here)."""

import subprocess
import time
from pathlib import Path

import pytest

from orchestrator import paths
from orchestrator.agent.client import AgentClient, AgentSilent
from orchestrator.errors import WorkloadFailed
from orchestrator.measure.guests import NicedGuest

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


def nice_of(stat: str) -> int:
    """The nice value in a /proc/PID/stat line (field 19)."""
    return int(stat.rpartition(")")[2].split()[16])


def test_a_niced_guest_starts_the_command_and_its_children_at_that_nice_without_a_nice_tool(agent):
    own = nice_of(Path("/proc/self/stat").read_text())
    nice = own + 5 if own <= 14 else own - 5
    script = 'sleep 5 & cat /proc/$$/stat; cat /proc/$!/stat; kill $!'
    result = NicedGuest(agent, nice).exec(["sh", "-c", script], env={"PATH": "/bin"})
    shell, child = result.stdout.decode().splitlines()
    assert result.exit_code == 0 and (nice_of(shell), nice_of(child)) == (nice, nice)
    assert " (sh) " in shell  # the command itself, not a `nice` in front of it
    assert nice_of(agent.exec(["cat", "/proc/self/stat"]).stdout.decode()) == own


def test_a_nice_outside_its_range_is_refused_before_anything_starts(agent, tmp_path):
    with pytest.raises(WorkloadFailed, match="nice must be from -20 to 19, got 20"):
        agent.exec(["touch", str(tmp_path / "ran")], nice=20)
    assert not (tmp_path / "ran").exists()


def live_members(pgid: int) -> list[int]:
    """Processes of process group `pgid` that still run (zombies awaiting their reaper are dead)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        fields = stat.rpartition(")")[2].split()  # after "pid (comm)": state ppid pgrp ...
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def test_exec_timeout_kills_the_process_group(agent, tmp_path):
    # The command's shell leads the process group the agent made for it (Setpgid) and writes its
    # pid: only that group is looked at, not every `sleep` of the machine (other test runs share it).
    pidfile = tmp_path / "pgid"
    start = time.monotonic()
    result = agent.exec(["sh", "-c", 'echo $$ > "$1"; sleep 300 & sleep 300', "sh", str(pidfile)], timeout_s=1)
    assert result.timed_out and time.monotonic() - start < 10
    pgid = int(pidfile.read_text())
    deadline = time.monotonic() + 5  # SIGKILL is sent; the kernel may take a moment to end them
    while live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_members(pgid) == []


def test_a_timed_out_exec_brings_the_guest_as_it_stalled_and_a_finished_one_nothing(agent):
    result = agent.exec(["sh", "-c", "sleep 300 & sleep 300"], timeout_s=1)
    assert result.timed_out and result.stall[0].startswith("load average: ")
    group = next(line for line in result.stall if line.startswith("tasks of the command's process group "))
    others = next(line for line in result.stall if line.startswith("other tasks in state D"))
    tasks = result.stall[result.stall.index(group) + 1:result.stall.index(others)]
    assert sum(line.endswith(" sleep") for line in tasks) == 2, result.stall
    assert agent.exec(["true"], timeout_s=30).stall == ()


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
