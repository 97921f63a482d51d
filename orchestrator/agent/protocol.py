"""Pure codec of the agent protocol (docs/agent-protocol.md): JSON lines, base64 for bytes."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Response:
    id: int
    ok: bool
    result: dict[str, Any]
    error: str


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    signal: str
    timed_out: bool
    stdout: bytes
    stderr: bytes
    duration_s: float

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def encode_request(req_id: int, op: str, **fields: Any) -> bytes:
    return json.dumps({"id": req_id, "op": op, **fields}, separators=(",", ":")).encode() + b"\n"


def exec_fields(
    argv: list[str],
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stdin: bytes = b"",
    timeout_s: float = 0.0,
) -> dict[str, Any]:
    if not argv:
        raise ValueError("exec needs a non-empty argv")
    fields: dict[str, Any] = {"argv": list(argv), "timeout_s": timeout_s}
    if env is not None:
        fields["env"] = dict(env)
    if cwd is not None:
        fields["cwd"] = cwd
    if stdin:
        fields["stdin_b64"] = b64(stdin)
    return fields


def decode_response(line: bytes) -> Response:
    try:
        obj = json.loads(line)
        return Response(
            id=int(obj["id"]),
            ok=bool(obj["ok"]),
            result=obj.get("result") or {},
            error=str(obj.get("error", "")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"malformed agent response: {line[:200]!r}") from exc


def decode_exec(result: dict[str, Any]) -> ExecResult:
    return ExecResult(
        exit_code=int(result["exit_code"]),
        signal=str(result.get("signal", "")),
        timed_out=bool(result.get("timed_out", False)),
        stdout=unb64(result.get("stdout_b64", "")),
        stderr=unb64(result.get("stderr_b64", "")),
        duration_s=float(result.get("duration_s", 0.0)),
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text)
