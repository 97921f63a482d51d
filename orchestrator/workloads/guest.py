"""What every workload's tool does in a guest, and the few helpers they share: the guest as a
tool sees it, commands that must succeed, the data disks, the time a run may take. Each
workload's own tool lives in its folder (workloads/<name>/__init__.py: TOOL)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from orchestrator.agent.protocol import ExecResult
from orchestrator.errors import WorkloadFailed
from orchestrator.workloads.params import ParamValue
from orchestrator.workloads.result import ToolRun

Params = Mapping[str, ParamValue]


class Guestlike(Protocol):
    hello: dict[str, Any]
    agent: Any
    domain: Any

    def exec(self, argv: list[str], **kwargs: Any) -> ExecResult: ...


def data_disks(guest: Guestlike) -> list[str]:
    return sorted(d["name"] for d in guest.hello.get("block_devices") or [] if not d["name"].startswith("sr"))


# the label of the agent's snapshot of a guest whose run it killed at its timeout
STALL_LABEL = "the guest when the run was stopped"


def check(result: ExecResult, argv: list[str]) -> ExecResult:
    """`result` when the command succeeded; else WorkloadFailed with its output's last lines and,
    when the agent killed it at its timeout (`timed_out`), the guest as it stalled."""
    if not result.succeeded:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        output = (result.stderr or result.stdout).decode(errors="replace").strip()
        lines = output.splitlines()
        detail, label = "\n".join(lines[-20:]), f"{argv[0]} output"
        if result.stall:
            stall = "\n".join(result.stall)
            detail, label = (f"{detail}\n--- {STALL_LABEL} ---\n{stall}", label) if lines else (stall, STALL_LABEL)
        raise WorkloadFailed(f"{argv[0]} {why}" + (f": {lines[-1]}" if lines else ""), detail, label,
                             timed_out=result.timed_out)
    return result


def run_ok(guest: Guestlike, argv: list[str], timeout_s: float = 120.0) -> ExecResult:
    return check(guest.exec(argv, timeout_s=timeout_s), argv)


def budget(params: Params, limit_s: float | None = None) -> float:
    """Seconds a run may take: its own time twice over (TCG is slow to start) plus a margin,
    never more than `limit_s` (a campaign's timeouts.run_s). Past it the agent kills the tool
    and the run fails as `<tool> timed out`."""
    own = 2.0 * (int(params["runtime"]) + int(params.get("ramp_time", 0))) + 120.0
    return own if limit_s is None else min(own, limit_s)


class Tool(Protocol):
    def prepare(self, guest: Guestlike) -> None: ...
    def before(self, guest: Guestlike, params: Params) -> None: ...
    def run(self, guest: Guestlike, params: Params, budget_s: float) -> dict[str, str]: ...
    def after(self, guest: Guestlike, params: Params) -> None: ...
    def disks(self, guest: Guestlike, params: Params) -> list[str]: ...
    def parse(self, raw: Mapping[str, str], params: Params) -> ToolRun: ...
    # the shell lines a person types in a guest to run one repetition as the agent ran it
    # (`raw`: what the run kept, {} when none; `disks`: the guest disks it used)
    def commands(self, params: Params, raw: Mapping[str, str], disks: Sequence[str]) -> list[str]: ...
