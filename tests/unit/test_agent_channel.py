"""The agent client never waits past its deadline on a channel nobody reads: a guest hung
before its agent opened the port takes no byte from the socket, and the boot must still end at
its timeout (the client's writes once blocked for ever when the socket's buffer was full)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from orchestrator.agent.client import AgentClient, AgentSilent


def ended_within(seconds: float, work: Callable[[], Any]) -> BaseException | None:
    """What `work` raised (None if it returned), or a failure when it is still running after
    `seconds`: a blocked write would hold the thread for ever."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 (handed to the test)
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still blocked after {seconds:g} s")
    return outcome[0]


@pytest.fixture
def unread() -> Any:
    """A client over a socket whose other end (the guest's port) never reads."""
    ours, theirs = socket.socketpair()
    client = AgentClient.over_socket(ours)
    yield client
    client.close()
    theirs.close()


def test_hellos_to_a_port_nobody_reads_end_at_the_deadline_not_when_the_buffer_is_full(unread):
    # resent every millisecond: the old client filled the buffer in well under a second, then blocked
    start = time.monotonic()
    raised = ended_within(10, lambda: unread.hello(deadline=start + 2.0, resend_every_s=0.001))
    assert isinstance(raised, AgentSilent), raised
    assert 2.0 <= time.monotonic() - start < 4.0


def test_a_request_larger_than_the_channel_holds_fails_at_its_deadline(unread):
    start = time.monotonic()
    raised = ended_within(10, lambda: unread.call("put", 1.0, path="/x", data_b64="A" * (8 << 20), mode=0o644))
    assert isinstance(raised, AgentSilent) and "no more of its agent channel" in str(raised), raised
    assert 1.0 <= time.monotonic() - start < 3.0


def test_a_request_the_other_end_reads_slowly_arrives_whole():
    ours, theirs = socket.socketpair()
    client = AgentClient.over_socket(ours)
    payload = "B" * (4 << 20)
    got = bytearray()

    def slow_reader() -> None:
        while b"\n" not in got:
            time.sleep(0.001)
            got.extend(theirs.recv(1 << 16))
        theirs.sendall(b'{"id": 1, "ok": true, "result": {}}\n')

    reader = threading.Thread(target=slow_reader, daemon=True)
    reader.start()
    try:
        assert client.call("put", 30.0, path="/x", data_b64=payload, mode=0o644) == {}
        assert payload.encode() in bytes(got)
    finally:
        reader.join(10)
        client.close()
        theirs.close()


def test_a_wait_over_a_lab_host_s_channel_asks_the_link_soon_and_then_less_often():
    # libvirt's libssh transport passes the agent's reply on only when another call reads the
    # connection: the link check is that call, so the first comes after 10 ms, not after 5 s
    ours, theirs = socket.socketpair()
    checks: list[float] = []

    def link_error() -> None:
        checks.append(time.monotonic())
        return None

    client = AgentClient.over_socket(ours, link_error=link_error, link_check_s=1.0)
    try:
        with pytest.raises(AgentSilent):
            client.call("snapshot", 0.6)
    finally:
        client.close()
        theirs.close()
    gaps = [b - a for a, b in zip(checks, checks[1:])]
    assert len(checks) >= 4 and gaps == sorted(gaps), gaps

