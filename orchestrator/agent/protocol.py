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
    # timed out: the guest just before the agent killed the command, as text lines (its tasks,
    # the ones in state D, I/Os in flight, the kernel log's last records); () otherwise
    stall: tuple[str, ...] = ()

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
    nice: int | None = None,
) -> dict[str, Any]:
    """An exec request's fields; `nice`: the value the command and its children start at
    (None: the agent's own)."""
    if not argv:
        raise ValueError("exec needs a non-empty argv")
    fields: dict[str, Any] = {"argv": list(argv), "timeout_s": timeout_s}
    if nice is not None:
        fields["nice"] = nice
    if env is not None:
        fields["env"] = dict(env)
    if cwd is not None:
        fields["cwd"] = cwd
    if stdin:
        fields["stdin_b64"] = b64(stdin)
    return fields


def _typed(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
    """obj[key] if it has the JSON type the protocol gives it (bool is not a number here)."""
    if key not in obj or obj[key] is None:
        if default is None:
            raise ValueError(f"{key} missing")
        return default
    value = obj[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ValueError(f"{key} is true/false")
    if not isinstance(value, kind):
        raise ValueError(f"{key} is a {type(value).__name__}")
    return value


def _strings(obj: dict[str, Any], key: str) -> tuple[str, ...]:
    """obj[key], a list of strings, as a tuple; absent is ()."""
    value = _typed(obj, key, list, [])
    if not all(isinstance(item, str) for item in value):
        raise ValueError(f"{key} holds other than strings")
    return tuple(value)


def decode_response(line: bytes) -> Response:
    """One response line; anything else (not JSON, wrong types) raises ValueError."""
    try:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise ValueError("not an object")
        return Response(
            id=_typed(obj, "id", int),
            ok=_typed(obj, "ok", bool),
            result=_typed(obj, "result", dict, {}),
            error=_typed(obj, "error", str, ""),
        )
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"malformed agent response ({exc}): {line[:200]!r}") from None


def decode_exec(result: dict[str, Any]) -> ExecResult:
    """An exec op's result; wrong or missing fields raise ValueError."""
    try:
        return ExecResult(
            exit_code=_typed(result, "exit_code", int),
            signal=_typed(result, "signal", str, ""),
            timed_out=_typed(result, "timed_out", bool, False),
            stdout=unb64(_typed(result, "stdout_b64", str, "")),
            stderr=unb64(_typed(result, "stderr_b64", str, "")),
            duration_s=float(_typed(result, "duration_s", (int, float), 0.0)),
            stall=_strings(result, "stall"),
        )
    except ValueError as exc:  # binascii.Error is a ValueError
        raise ValueError(f"malformed exec result ({exc})") from None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)
