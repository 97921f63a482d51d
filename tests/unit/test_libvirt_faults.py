"""libvirt failures on a running guest are the host's fault (orchestrator/backends/libvirt_vm.py):
what a guest's domain raises when its libvirt connection is alive, lost, or on a lab host. The
real restart of libvirtd is tests/integration/test_libvirtd_restart.py."""

from __future__ import annotations

from pathlib import Path

import libvirt
import pytest

from orchestrator.agent.client import AgentSilent
from orchestrator.backends.libvirt_vm import Guest, GuestAgent, HostDomain, _alive, libvirt_fault
from orchestrator.errors import HostFailed, InfraError, KernelFault, WorkloadFailed


class Conn:
    def __init__(self, alive: bool) -> None:
        self.alive = alive

    def getLibVersion(self) -> int:  # noqa: N802 (libvirt's name)
        if not self.alive:
            raise error("Cannot write data: Broken pipe")
        return 9000000

    def isAlive(self) -> int:  # noqa: N802
        return 1  # as libvirt says until a call failed on the connection


def error(message: str, code: int = libvirt.VIR_ERR_INTERNAL_ERROR) -> libvirt.libvirtError:
    exc = libvirt.libvirtError(message)
    exc.err = (code, libvirt.VIR_FROM_RPC, message, 2, None, None, None, 0, 0)
    return exc


class Dom:
    """A domain whose every call fails with `exc`."""

    def __init__(self, exc: libvirt.libvirtError) -> None:
        self.exc = exc

    def getCPUStats(self, total: bool) -> list:  # noqa: N802
        raise self.exc

    def isActive(self) -> int:  # noqa: N802
        raise self.exc


def domain(alive: bool, exc: libvirt.libvirtError, host: str | None = None) -> HostDomain:
    conn = Conn(alive)
    return HostDomain(Dom(exc), lambda message: libvirt_fault(conn, message, host))


def test_a_call_on_a_lost_connection_is_an_infrastructure_error_saying_so():
    dom = domain(False, error("End of file while reading data: Input/output error"))
    with pytest.raises(InfraError) as raised:
        dom.getCPUStats(True)
    assert not isinstance(raised.value, KernelFault)
    assert str(raised.value) == ("libvirt connection lost (libvirtd restarted or stopped?): "
                                 "getCPUStats: End of file while reading data: Input/output error")


def test_a_failed_call_on_a_live_connection_is_an_infrastructure_error_too():
    with pytest.raises(InfraError, match=r"^libvirt: getCPUStats: internal error: oops$"):
        domain(True, error("internal error: oops")).getCPUStats(True)


def test_on_a_lab_host_the_error_names_the_host():
    with pytest.raises(HostFailed, match=r"^host lab2: libvirt connection lost"):
        domain(False, error("Cannot write data: Broken pipe"), host="lab2").getCPUStats(True)


def test_a_stopped_transient_domain_is_inactive_not_an_error():
    assert domain(True, error("Domain not found", libvirt.VIR_ERR_NO_DOMAIN)).isActive() is False


def test_is_active_on_a_lost_connection_is_an_infrastructure_error_not_a_stopped_guest():
    # _await_hello takes an inactive domain for a kernel that stopped (BootFailed): a lost
    # connection must not be taken for that
    with pytest.raises(InfraError, match="libvirt connection lost"):
        domain(False, error("End of file while reading data")).isActive()


class SilentClient:
    def snapshot(self) -> dict:
        raise AgentSilent("agent channel closed")


def agent(alive: bool) -> GuestAgent:
    conn = Conn(alive)
    return GuestAgent(SilentClient(), lambda m: None if _alive(conn) else libvirt_fault(conn, m))  # type: ignore[arg-type]


def test_an_agent_silent_with_the_connection_lost_is_the_hosts_fault():
    # libvirtd stopped with SIGTERM destroys the guests of its clients: the agent's socket closes
    with pytest.raises(InfraError, match=r"^libvirt connection lost .*: guest agent went silent \(snapshot\)"):
        agent(False).snapshot()


def test_an_agent_silent_with_libvirt_answering_stays_a_silent_agent():
    with pytest.raises(AgentSilent):
        agent(True).snapshot()


class HungClient:
    def exec(self, argv: list[str], **kwargs: object) -> None:
        raise AgentSilent("agent did not answer in time")


def hung_guest(console: str) -> Guest:
    return Guest("g", "tcg", {}, 1.0, Path("/nonexistent"), GuestAgent(HungClient(), lambda m: None),  # type: ignore[arg-type]
                 None, read_console=lambda: console)


def test_a_guest_hung_in_a_workload_names_the_consoles_first_kernel_report_and_keeps_its_opening_lines():
    frames = "".join(f"[ 132.1]  frame_{i}+0x10/0x20\n" for i in range(60))
    console = "[ 120.0] ok\n[ 132.1] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [fio:412]\n" + frames
    with pytest.raises(WorkloadFailed) as failed:
        hung_guest(console).exec(["fio", "--name=x"], timeout_s=5)
    assert str(failed.value) == ("guest agent went silent during 'fio': agent did not answer in time; the console's "
                                 "first kernel report: watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [fio:412]")
    assert failed.value.detail.startswith("[ 132.1] watchdog: BUG: soft lockup") and "[...]" in failed.value.detail
    assert failed.value.detail.endswith("frame_59+0x10/0x20") and failed.value.detail_label.startswith("console")


def test_a_guest_hung_with_no_kernel_report_shows_the_console_tail():
    with pytest.raises(WorkloadFailed) as failed:
        hung_guest("[ 1.0] a\n[ 2.0] b\n").exec(["dbench"], timeout_s=5)
    assert str(failed.value) == "guest agent went silent during 'dbench': agent did not answer in time"
    assert failed.value.detail == "[ 1.0] a\n[ 2.0] b" and failed.value.detail_label == "console tail"
