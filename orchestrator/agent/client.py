"""A client of the guest agent over any byte stream (a libvirt channel socket, a pipe).

A channel that crosses a network (a remote host's libvirt stream, orchestrator/hosts/remote.py)
passes `link_error`: when the channel closes or stays silent, the client asks it first, and a
lost host surfaces as that error (a HostFailed naming the host) instead of a silent agent,
which would blame the kernel under test.

Writing never blocks past a request's deadline. A guest whose agent has not opened its port
reads nothing from the channel (QEMU stops taking bytes from the socket), so everything sent
stays in the socket's buffer, and a blocking write waits for ever once the buffer is full
(a few hundred small requests: a guest hung before its agent started, still being greeted
twice a second, filled it after about 140 s and held its controller). Hellos are therefore
sent only while the channel has room, and every write waits for room at most until the
request's deadline.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import time
from typing import Any, BinaryIO, Callable, Optional

from orchestrator.agent import protocol
from orchestrator.agent.protocol import ExecResult
from orchestrator.errors import VmbisectError, WorkloadFailed

LinkCheck = Callable[[], Optional[VmbisectError]]

# Seconds beyond a request's own timeout before the agent counts as silent.
REPLY_MARGIN_S = 30.0
# While waiting on a channel that crosses a network, ask every so often whether its host is gone:
# first after FIRST_CHECK_S, then twice as long each time, at most every `link_check_s`.
LINK_CHECK_S = 5.0
FIRST_CHECK_S = 0.01


class AgentSilent(Exception):
    """No answer in time: the guest is hung or the port never opened."""


def _decode(line: bytes) -> protocol.Response:
    """A line that is not a response means the channel is unusable, as if the agent were silent."""
    try:
        return protocol.decode_response(line)
    except ValueError as exc:
        raise AgentSilent(str(exc)) from None


class AgentClient:
    """One request at a time; responses with ids we are not waiting for are dropped."""

    def __init__(self, read_fd: int, write_fd: int, close: Callable[[], None],
                 link_error: LinkCheck | None = None, link_check_s: float = LINK_CHECK_S) -> None:
        self._read_fd, self._write_fd = read_fd, write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._closers = [close]
        self._link_error, self._link_check_s = link_error, link_check_s
        self._ids = itertools.count(1)
        self._buf = bytearray()
        self._scanned = 0

    @classmethod
    def over_socket(cls, sock: socket.socket, link_error: LinkCheck | None = None,
                    link_check_s: float = LINK_CHECK_S) -> "AgentClient":
        return cls(sock.fileno(), sock.fileno(), sock.close, link_error, link_check_s)

    @classmethod
    def over_pipes(cls, reader: BinaryIO, writer: BinaryIO) -> "AgentClient":
        def close() -> None:
            writer.close()
            reader.close()

        return cls(reader.fileno(), writer.fileno(), close)

    def on_close(self, fn: Callable[[], None]) -> None:
        """Also run `fn` on close (the transport behind the socket)."""
        self._closers.append(fn)

    def close(self) -> None:
        for fn in self._closers:
            fn()

    def _silent(self, message: str) -> Exception:
        """AgentSilent, unless the link to the guest's host is what broke."""
        broken = self._link_error() if self._link_error is not None else None
        return broken if broken is not None else AgentSilent(message)

    def call(self, op: str, wait_s: float, /, **fields: Any) -> dict[str, Any]:
        """Send one request and wait up to `wait_s` for its answer."""
        req_id = next(self._ids)
        deadline = time.monotonic() + wait_s
        self._send(protocol.encode_request(req_id, op, **fields), deadline)
        while True:
            resp = _decode(self._readline(deadline))
            if resp.id != req_id:
                continue
            if not resp.ok:
                raise WorkloadFailed(f"agent {op} failed: {resp.error}")
            return resp.result

    def hello(self, deadline: float, resend_every_s: float = 1.0) -> dict[str, Any]:
        """Send hello until the first answer: the guest may open its port late."""
        sent: set[int] = set()
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise AgentSilent("no hello from the agent")
            if self._room():  # a port nobody reads is greeted while it has room, never until full
                req_id = next(self._ids)
                sent.add(req_id)
                self._send(protocol.encode_request(req_id, "hello"), deadline)
            try:
                until = min(deadline, now + resend_every_s)
                while True:
                    resp = _decode(self._readline(until))
                    if resp.id in sent and resp.ok:
                        return resp.result
            except AgentSilent:
                continue

    def exec(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes = b"",
        timeout_s: float = 0.0,
        nice: int | None = None,
    ) -> ExecResult:
        fields = protocol.exec_fields(argv, env, cwd, stdin, timeout_s, nice)
        wait = (timeout_s or 24 * 3600.0) + REPLY_MARGIN_S
        try:
            return protocol.decode_exec(self.call("exec", wait, **fields))
        except ValueError as exc:
            raise AgentSilent(f"the agent's exec result is malformed: {exc}") from None

    def snapshot(self) -> dict[str, Any]:
        return self.call("snapshot", REPLY_MARGIN_S)

    def put(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.call("put", REPLY_MARGIN_S + len(data) / 1e6, path=path, data_b64=protocol.b64(data), mode=mode)

    def get(self, path: str) -> bytes:
        return protocol.unb64(self.call("get", REPLY_MARGIN_S * 4, path=path)["data_b64"])

    def _room(self) -> bool:
        """Whether the channel takes more bytes now."""
        return bool(select.select([], [self._write_fd], [], 0)[1])

    def _send(self, data: bytes, deadline: float) -> None:
        """All of `data`, waiting for room in the channel at most until `deadline`."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._silent("the guest took no more of its agent channel in time")
            if not select.select([], [self._write_fd], [], left)[1]:
                continue
            try:
                view = view[os.write(self._write_fd, view):]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise self._silent(f"agent channel closed: {exc}") from exc

    def _readline(self, deadline: float) -> bytes:
        check = min(FIRST_CHECK_S, self._link_check_s)
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buf)
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._silent("agent did not answer in time")
            wait = left if self._link_error is None else min(left, check)
            ready, _, _ = select.select([self._read_fd], [], [], wait)
            if not ready:
                broken = self._link_error() if self._link_error is not None and wait < left else None
                if broken is not None:
                    raise broken
                check = min(2 * check, self._link_check_s)
                continue
            try:
                chunk = os.read(self._read_fd, 1 << 20)
            except BlockingIOError:
                continue
            except OSError as exc:
                raise self._silent(f"agent channel closed: {exc}") from exc
            if not chunk:
                raise self._silent("agent channel closed")
            self._buf += chunk
