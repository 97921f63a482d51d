"""The libvirt VM provider: transient `vmbisect-*` domains booting a kernel directly.

Every domain is started with VIR_DOMAIN_START_AUTODESTROY, so libvirtd destroys it when our
connection closes (the controller exited or was killed); `cleanup_leftovers` removes any domain
whose owner process is gone, as a second net.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import libvirt

from orchestrator import paths
from orchestrator.agent.client import AgentClient, AgentSilent
from orchestrator.agent.protocol import ExecResult
from orchestrator.errors import BootFailed, InfraError, UserError, WorkloadFailed
from orchestrator.vm.console import console_fault, fault_hint, kernel_cmdline, tail
from orchestrator.vm.domain_xml import BootFiles, domain_xml
from orchestrator.vm.spec import VmSpec

NAME_PREFIX = "vmbisect-"
DEFAULT_URI = "qemu:///system"


def domain_name(pid: int | None = None) -> str:
    return f"{NAME_PREFIX}{pid or os.getpid()}-{secrets.token_hex(4)}"


def owner_pid(name: str) -> int | None:
    """The controller pid embedded in a vmbisect domain name, or None for foreign names."""
    if not name.startswith(NAME_PREFIX):
        return None
    parts = name[len(NAME_PREFIX):].split("-")
    return int(parts[0]) if len(parts) == 2 and parts[0].isdigit() else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _quiet_libvirt_errors() -> None:
    libvirt.registerErrorHandler(lambda _ctx, _err: None, None)


@dataclass
class Guest:
    """A running guest with its agent. Use through LibvirtProvider.boot()."""

    name: str
    accel: str
    hello: dict[str, Any]
    boot_seconds: float
    console_log: Path
    agent: AgentClient
    domain: Any

    def exec(self, argv: list[str], **kwargs: Any) -> ExecResult:
        try:
            return self.agent.exec(argv, **kwargs)
        except AgentSilent as exc:
            raise WorkloadFailed(
                f"guest agent went silent during {argv[0]!r}: {exc}", self.console_tail()
            ) from exc

    def console_tail(self, lines: int = 30) -> str:
        return tail(self.console_log.read_text(errors="replace"), lines) if self.console_log.exists() else ""


class LibvirtProvider:
    def __init__(self, uri: str = DEFAULT_URI, run_root: Path | None = None, log_root: Path | None = None) -> None:
        _quiet_libvirt_errors()
        self.uri = uri
        self.run_root = run_root or paths.run_dir()
        self.log_root = log_root or paths.data_dir() / "console"
        try:
            self.conn = libvirt.open(uri)
        except libvirt.libvirtError as exc:
            raise InfraError(f"cannot connect to libvirt at {uri}: {exc.get_error_message()} (run: make setup)") from exc

    def close(self) -> None:
        self.conn.close()

    def cleanup_leftovers(self, everything: bool = False) -> list[str]:
        """Destroy vmbisect domains whose controller is gone (or all of them)."""
        removed = []
        for dom in self.conn.listAllDomains():
            pid = owner_pid(dom.name())
            if pid is None or (not everything and _pid_alive(pid)):
                continue
            try:
                persistent = dom.isPersistent()
                if dom.isActive():
                    dom.destroy()
                if persistent:
                    dom.undefine()
            except libvirt.libvirtError:
                continue
            removed.append(dom.name())
        return removed

    @contextmanager
    def boot(
        self,
        spec: VmSpec,
        kernel: Path,
        initrd: Path,
        accel: str = "tcg",
        append: str = "",
        timeout_s: float = 60.0,
    ) -> Iterator[Guest]:
        spec.validate()
        if not kernel.is_file():
            raise UserError(f"kernel: no such file {kernel}")
        self.cleanup_leftovers()
        name = domain_name()
        workdir = self.run_root / name
        sockdir = Path(tempfile.mkdtemp(prefix="vmb-"))
        self.log_root.mkdir(parents=True, exist_ok=True)
        files = BootFiles(
            name=name,
            kernel=kernel.resolve(),
            initrd=initrd.resolve(),
            cmdline=kernel_cmdline(append),
            console_log=self.log_root / f"{name}.log",
            agent_socket=sockdir / "agent.sock",
            disks=tuple(_make_disks(spec, workdir)),
            accel=accel,
            owner_pid=os.getpid(),
            run_as_root=self.uri == DEFAULT_URI and os.geteuid() == 0,
        )
        dom = None
        client: AgentClient | None = None
        try:
            started = time.monotonic()
            dom = self._create(domain_xml(spec, files))
            client = AgentClient.over_socket(_connect(files.agent_socket))
            hello = _await_hello(client, dom, files.console_log, started + timeout_s, timeout_s)
            yield Guest(name, accel, hello, time.monotonic() - started, files.console_log, client, dom)
            _shutdown(client, dom)
        finally:
            if client is not None:
                client.close()
            if dom is not None:
                _destroy(dom)
            if spec.disks.backing != "block":
                for disk in files.disks:
                    disk.unlink(missing_ok=True)
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(disk_dir(spec, workdir), ignore_errors=True)
            shutil.rmtree(sockdir, ignore_errors=True)

    def _create(self, xml: str) -> Any:
        try:
            return self.conn.createXML(xml, libvirt.VIR_DOMAIN_START_AUTODESTROY)
        except libvirt.libvirtError as exc:
            raise InfraError(f"libvirt could not start the guest: {exc.get_error_message()}") from exc


def disk_dir(spec: VmSpec, workdir: Path) -> Path:
    """Where a boot's disk files go: a directory of its own, inside guest.disks.directory when one
    is given. 0711: no other user can list it or plant, swap or remove files in it; the x bit
    lets libvirt-qemu reach the (relabelled) disks on the libvirt-group path of docs/setup.md."""
    return spec.disks.directory / workdir.name if spec.disks.directory else workdir


def _make_disks(spec: VmSpec, workdir: Path) -> list[Path]:
    """The data disk files, 0600 in a fresh 0711 directory (O_EXCL | O_NOFOLLOW: never through
    a planted file or symlink)."""
    d = spec.disks
    if d.backing == "block":
        return [Path(dev) for dev in d.devices]
    directory = disk_dir(spec, workdir)
    directory.parent.mkdir(parents=True, exist_ok=True)
    directory.mkdir(mode=0o711)
    os.chmod(directory, 0o711)  # mkdir's mode is masked by the umask
    disks = []
    for i in range(d.count):
        path = directory / f"{workdir.name}-disk{i}.{d.backing}"
        if d.backing == "qcow2":
            _run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), f"{d.size_mib}M"])
            os.chmod(path, 0o600)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.ftruncate(fd, d.size_mib << 20)
            finally:
                os.close(fd)
        disks.append(path)
    if disks and d.cache in ("none", "directsync"):
        _require_o_direct(disks[0], d.cache)
    return disks


def _require_o_direct(path: Path, cache: str) -> None:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))
    except OSError as exc:
        raise UserError(
            f"cache: {cache!r} opens disks with O_DIRECT, which {path.parent} does not support "
            f"({exc.strerror}); use cache writeback or unsafe there"
        ) from exc


def _run(argv: list[str]) -> None:
    try:
        subprocess.run(argv, check=True, capture_output=True, text=True)
    except FileNotFoundError as exc:
        raise InfraError(f"{argv[0]} not found (run: make setup)") from exc
    except subprocess.CalledProcessError as exc:
        raise InfraError(f"{argv[0]} failed: {exc.stderr.strip()}") from exc


def _connect(path: Path, wait_s: float = 10.0) -> socket.socket:
    deadline = time.monotonic() + wait_s
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
            return sock
        except OSError as exc:
            sock.close()
            if time.monotonic() > deadline:
                raise InfraError(f"agent channel socket {path} did not appear: {exc}") from exc
            time.sleep(0.05)


def _await_hello(client: AgentClient, dom: Any, console: Path, deadline: float, timeout_s: float) -> dict[str, Any]:
    while True:
        try:
            return client.hello(deadline=min(deadline, time.monotonic() + 0.5), resend_every_s=0.5)
        except AgentSilent:
            time.sleep(0.05)
        text = console.read_text(errors="replace") if console.exists() else ""
        fault = console_fault(text)
        if fault:
            hint = fault_hint(fault)
            raise BootFailed(f"guest kernel failed to boot: {fault}" + (f"; {hint}" if hint else ""), tail(text))
        if not _active(dom):
            raise BootFailed("guest stopped before its agent answered", tail(text))
        if time.monotonic() >= deadline:
            raise BootFailed(f"no answer from the guest agent within {timeout_s:g} s", tail(text))


def _active(dom: Any) -> bool:
    try:
        return bool(dom.isActive())
    except libvirt.libvirtError:
        return False


def _shutdown(client: AgentClient, dom: Any, grace_s: float = 10.0) -> None:
    """Ask the agent to power off; the caller destroys whatever is still running after."""
    try:
        client.shutdown(timeout_s=5.0)
    except (AgentSilent, WorkloadFailed):
        return
    deadline = time.monotonic() + grace_s
    while _active(dom) and time.monotonic() < deadline:
        time.sleep(0.1)


def _destroy(dom: Any) -> None:
    if _active(dom):
        try:
            dom.destroy()
        except libvirt.libvirtError:
            pass
