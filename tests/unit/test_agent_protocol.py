import json

import pytest

from orchestrator.agent import protocol


def test_exec_request_carries_argv_env_cwd_stdin_timeout():
    line = protocol.encode_request(7, "exec", **protocol.exec_fields(["fio", "--x"], {"A": "1"}, "/tmp", b"\xff\x00", 5))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    obj = json.loads(line)
    assert obj == {"id": 7, "op": "exec", "argv": ["fio", "--x"], "env": {"A": "1"}, "cwd": "/tmp",
                   "stdin_b64": "/wA=", "timeout_s": 5}


def test_exec_request_carries_nice_only_when_given():
    assert protocol.exec_fields(["fio"], nice=-5)["nice"] == -5 and "nice" not in protocol.exec_fields(["fio"])


def test_exec_requires_argv():
    with pytest.raises(ValueError):
        protocol.exec_fields([])


def test_exec_response_decodes_binary_output():
    line = json.dumps({"id": 3, "ok": True, "result": {"exit_code": -1, "signal": "SIGKILL", "timed_out": True,
                       "stdout_b64": protocol.b64(b"\x80abc"), "stderr_b64": "", "duration_s": 1.5}}).encode()
    resp = protocol.decode_response(line)
    result = protocol.decode_exec(resp.result)
    assert resp.id == 3 and resp.ok
    assert result.stdout == b"\x80abc" and result.timed_out and result.signal == "SIGKILL"
    assert not result.succeeded


def test_exec_result_carries_the_stall_of_a_timed_out_command_and_none_without_it():
    base = {"exit_code": -1, "signal": "SIGKILL", "timed_out": True}
    lines = ["load average: 3.02 1.10 0.40 3/61 415", "  412/415 D io_schedule fio"]
    assert protocol.decode_exec({**base, "stall": lines}).stall == tuple(lines)
    assert protocol.decode_exec(base).stall == () and protocol.decode_exec({**base, "stall": None}).stall == ()
    for bad in ("one line", [1, 2], [["nested"]]):
        with pytest.raises(ValueError, match="malformed exec result .*stall"):
            protocol.decode_exec({**base, "stall": bad})


def test_error_response_keeps_message():
    resp = protocol.decode_response(b'{"id": 0, "ok": false, "error": "bad request: x"}')
    assert not resp.ok and resp.error == "bad request: x" and resp.result == {}


def test_garbage_response_is_a_value_error():
    with pytest.raises(ValueError, match="malformed agent response"):
        protocol.decode_response(b"Linux version 6.1 (not json)")
