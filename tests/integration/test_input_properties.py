"""Generated bad input through `vmbisect` in-process (Hypothesis): mutated campaign files and
random command lines. Whatever the input, the command either gets past every check (it then
reaches the part that would build or boot, replaced here by a sentinel) or stops with one line
on stderr and exit 2 (3 for an unreachable store), no traceback, no campaign recorded.

Bounded in `make test` (profile "ci" in tests/conftest.py); `make reliability` runs thousands."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.cli import COMMANDS, _parser, main
from orchestrator.store import Store
from tests.integration.gitrepo import Repo


class Reached(BaseException):
    """The command got past its checks to a part that builds, boots or changes the host."""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = Repo(tmp_path_factory.mktemp("prop") / "linux")
    r.commit("one")
    r.git("tag", "good")
    r.commit("two")
    r.git("tag", "bad")
    return r.path


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Data and cache in tmp_path, the working directory too; every part that would build, boot
    or touch libvirt raises Reached instead."""
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("VMBISECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)

    def reached(*_a: Any, **_k: Any) -> Any:
        raise Reached()

    for target in ("orchestrator.kinds.run.execute", "orchestrator.hosts.launchers.host_launcher",
                   "orchestrator.kbuild.builder.default_builder", "orchestrator.doctor.run_checks",
                   "orchestrator.backends.libvirt_vm.LibvirtProvider", "orchestrator.demo.ensure_demo_repo",
                   "orchestrator.kbuild.kernelstore.KernelStore.register"):
        monkeypatch.setattr(target, reached)
    monkeypatch.setattr("uvicorn.Server.run", reached)  # vmbisect serve past its checks would serve until stopped
    return tmp_path


def run_cli(argv: list[str], db: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """(outcome, stderr) of one command line; fails the test on a traceback or a multi-line error."""
    try:
        rc = main(argv)
    except Reached:
        capsys.readouterr()
        return "got past every check", ""
    except SystemExit as exc:  # --help, --version: argparse prints and exits 0
        assert exc.code == 0, exc
        capsys.readouterr()
        return "help", ""
    err = capsys.readouterr().err
    if rc == 0:
        return "ran (nothing to build or boot)", err
    assert rc in (2, 3), (argv, rc, err)
    assert err.startswith("vmbisect: ") and err.count("\n") == 1, (argv, err)
    assert not db.exists() or Store(f"sqlite:///{db}").campaigns() == [], (argv, "a campaign was recorded")
    return f"one-line error, exit {rc}", err


# ---- campaign files -------------------------------------------------------------------------

def base_campaign(repo: Path) -> dict[str, Any]:
    return {"name": "prop", "repository": str(repo), "good": "good", "bad": "bad",
            "workload": {"name": "fio", "params": {"rw": "randread", "disks": 1, "runtime": 5}},
            "metric": {"name": "read_iops", "direction": "higher", "threshold": "-10%"},
            "kernel": {"config": ["guest-base"], "cc": "gcc"},
            "guest": {"vcpus": 2, "memory_mib": 1024, "topology": {"sockets": 1, "cores": 2, "threads": 1},
                      "pinning": ["0", "1"], "machine": "pc",
                      "disks": {"count": 1, "size_mib": 64, "controller": "virtio-scsi", "backing": "raw",
                                "cache": "none", "aio": "threads", "queues": 0, "iothreads": 0, "devices": []}},
            "accel": "tcg", "append": "quiet", "boots_per_commit": 2, "max_boots_per_commit": 8,
            "runs_per_boot": 3, "skip_policy": {"build_failure": "skip", "boot_failure": "skip"},
            "timeouts": {"build_s": 3600, "boot_s": 180, "run_s": 1800}, "first_parent": False, "alpha": 0.05}


SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=40),  # surrogates and NUL included
    st.sampled_from(["", "-", "--upload-pack=x", "~nosuchuser/x", "a\x00b", "-10%", "+10%", "nan", "1e400",
                     "all", "../..", "$(reboot)", "`id`", ";rm -rf /", "HEAD..main", " good ", "\ud800"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += paths(v, prefix + (i,))
    return out


@st.composite
def mutated_campaigns(draw: st.DrawFn, repo: Path) -> bytes:
    data = base_campaign(repo)
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(data)[1:]))
        parent = data
        for key in where[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add_key"]))
        if action == "replace":
            parent[where[-1]] = draw(VALUES)
        elif action == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif action == "add_key" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = draw(VALUES)
        if not isinstance(data, dict):
            break
    return json.dumps(data, ensure_ascii=True, default=str).encode()  # JSON is YAML; \ud800 stays an escape


HOSTILE = [b"&a [*a]", b"!!python/object:os.system {}", b"!!binary AAAA", b"2020-13-45", b"<<: *x", b"*undefined",
           b"[" * 300, b"{" * 300, b"\xff\xfe", b"\x00", b"\t", b"? [a, b]\n: c", b"!!timestamp 1", b"1" * 5000,
           b"%YAML 9.9\n---", b"--- |\n  text", b"@", b"`", b'"\\ud800"', b"&x {a: *x}", b"\xe9"]


@st.composite
def mangled_text(draw: st.DrawFn, repo: Path) -> bytes:
    text = bytearray(yaml.safe_dump(base_campaign(repo), sort_keys=False).encode())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "hostile", "byte"]))
        if op == "insert":
            text[at:at] = draw(st.binary(max_size=20))
        elif op == "delete":
            del text[at:at + draw(st.integers(1, 40))]
        elif op == "hostile":
            text[at:at] = draw(st.sampled_from(HOSTILE))
        elif at < len(text):
            text[at] = draw(st.integers(0, 255))
    return bytes(text)


def check_campaign_file(blob: bytes, sandbox: Path, capsys: pytest.CaptureFixture[str], tally: Any, prop: str) -> None:
    path = sandbox / f"{uuid.uuid4().hex}.yaml"
    path.write_bytes(blob)
    db = sandbox / uuid.uuid4().hex / "v.db"
    outcome, _err = run_cli(["bisect", str(path), "--store", f"sqlite:///{db}"], db, capsys)
    tally(prop, outcome)


@given(data=st.data())
def test_mutated_campaign_values_are_one_line_errors_or_valid(data, repo, sandbox, capsys, tally):
    check_campaign_file(data.draw(mutated_campaigns(repo)), sandbox, capsys, tally, "campaign file: mutated values")


@given(data=st.data())
def test_mangled_campaign_text_is_a_one_line_error_or_valid(data, repo, sandbox, capsys, tally):
    check_campaign_file(data.draw(mangled_text(repo)), sandbox, capsys, tally, "campaign file: mangled bytes")


# ---- command lines --------------------------------------------------------------------------

def options_of(command: str) -> list[str]:
    sub = next(a for a in _parser()._subparsers._group_actions if a.dest == "command")  # type: ignore[union-attr]
    return [o for action in sub.choices[command]._actions for o in action.option_strings if o not in ("-h", "--help")]


TOKENS = st.one_of(
    st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
    st.sampled_from(["0", "-1", "1", "2", "99999999999999999999", "nan", "inf", "-inf", "1e309", "0.5", "1.5",
                     "", "-", "--", "/", "/nonexistent/x", "/proc/nope/x.db", "sqlite:////proc/nope/x.db",
                     "postgresql://nobody@127.0.0.1:1/none", "nonsense", "fio", "dbench", "netperf", "read_iops",
                     "a=nice:0", "b=sched:bfq", "c=commit:--upload-pack=x", "d=kernel:/nope", "x.md", "x.pdf",
                     "rw=randread", "numjobs=1,2", "2:1:1", "0,1", "ide", "lsilogic", "KERNEL", "HEAD", "tinyconfig",
                     "cc=--version", "--upload-pack=touch /tmp/pwned"]),
)


@st.composite
def command_lines(draw: st.DrawFn, kernel: Path) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    options = options_of(command)
    argv = [command]
    for _ in range(draw(st.integers(0, 8))):
        token = draw(st.sampled_from(options)) if options and draw(st.booleans()) else draw(TOKENS)
        argv.append(str(kernel) if token == "KERNEL" else token)
    return argv


@given(data=st.data())
def test_random_command_lines_are_one_line_errors_or_get_past_their_checks(data, sandbox, capsys, tally):
    kernel = sandbox / "bzImage"
    kernel.write_bytes(b"not a kernel")
    argv = data.draw(command_lines(kernel))
    db = sandbox / uuid.uuid4().hex / "v.db"
    uses_store = "--store" in options_of(argv[0])
    outcome, _err = run_cli(["--uri", "test:///nowhere", *argv, *(["--store", f"sqlite:///{db}"] if uses_store
                                                                  else [])], db, capsys)
    tally(f"command line: {argv[0]}", outcome)
