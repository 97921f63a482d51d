"""The agent protocol codec on the Python side, with generated input (Hypothesis): requests are
one JSON line that decodes back to what was sent, and any line the guest sends either decodes
or raises ValueError, never anything else (the Go side is fuzzed in guest-agent/fuzz_test.go)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.agent import protocol

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=10)
TEXT = st.text(st.characters(codec="utf-8"))  # argv and env travel as JSON strings: no lone surrogates


@given(req_id=st.integers(0, 2**53), argv=st.lists(TEXT, min_size=1, max_size=6),
       env=st.none() | st.dictionaries(TEXT, TEXT, max_size=4), cwd=st.none() | TEXT, stdin=st.binary(max_size=300),
       timeout=st.floats(0, 1e6))
def test_an_exec_request_is_one_line_that_decodes_to_what_was_sent(req_id, argv, env, cwd, stdin, timeout, tally):
    line = protocol.encode_request(req_id, "exec", **protocol.exec_fields(argv, env, cwd, stdin, timeout))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj["id"] == req_id and obj["argv"] == argv and obj.get("env") == env and obj.get("cwd") == cwd
    assert protocol.unb64(obj.get("stdin_b64", "")) == stdin and obj["timeout_s"] == timeout
    tally("agent codec: requests", "one line, decodes to what was sent")


@given(data=st.binary(max_size=2000))
def test_bytes_survive_base64_both_ways(data, tally):
    assert protocol.unb64(protocol.b64(data)) == data
    tally("agent codec: base64", "round trip")


def _decode(line: bytes) -> str:
    try:
        resp = protocol.decode_response(line)
    except ValueError:
        return "ValueError"
    assert isinstance(resp.id, int) and isinstance(resp.ok, bool) and isinstance(resp.result, dict)
    assert isinstance(resp.error, str)
    if resp.ok:
        try:
            protocol.decode_exec(resp.result)
        except ValueError:
            return "decoded; exec result ValueError"
    return "decoded"


@given(line=st.binary(max_size=400))
def test_any_bytes_from_the_guest_decode_or_raise_value_error(line, tally):
    tally("agent codec: responses (bytes)", _decode(line))


@given(obj=st.dictionaries(st.sampled_from(["id", "ok", "result", "error", "x"]), JSON, max_size=5),
       result=st.dictionaries(st.sampled_from(["exit_code", "signal", "timed_out", "stdout_b64", "stderr_b64",
                                               "duration_s", "stall", "x"]), JSON | st.sampled_from(["AAAA", "%%", "1"]),
                              max_size=8))
def test_any_json_response_decodes_or_raises_value_error(obj: dict[str, Any], result: dict[str, Any], tally):
    tally("agent codec: responses (JSON)", _decode(json.dumps(obj).encode()))
    tally("agent codec: responses (JSON)",
          _decode(json.dumps({"id": 1, "ok": True, "result": result}).encode()))
