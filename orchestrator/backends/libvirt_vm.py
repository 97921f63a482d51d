"""The libvirt VM provider: transient `vmbisect-*` domains booting a kernel directly.

Every domain is started with VIR_DOMAIN_START_AUTODESTROY, so libvirtd destroys it when our
connection closes (the controller exited or was killed); `cleanup_leftovers` removes any domain
whose owner process is gone, as a second net, and the files such a controller left behind.

A lost libvirt connection is the host's fault: a libvirt call on the guest then raises
InfraError (HostFailed on a lab host), and so does an agent that went silent at the same time,
never a boot or workload failure of the kernel. libvirtd stopped with SIGTERM destroys its
clients' autodestroy guests on its way down (libvirt 9.0); killed or crashed, it leaves QEMU
and the agent's socket running. On the way out the guest is destroyed through a new connection;
when libvirtd does not answer within RECONNECT_S, the domain is left to the next controller's
`cleanup_leftovers` (its owner is dead by then) or `vmbisect cleanup`.

Where a boot's files live and how its agent is reached is a Site: `LocalSite` (this machine,
the agent's unix socket) here, `RemoteSite` (a lab host over SSH, the agent over libvirt's
channel stream) in orchestrator/hosts/remote.py. The provider itself does not know which.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import libvirt

from orchestrator import paths
from orchestrator.agent.client import AgentClient, AgentSilent
from orchestrator.agent.protocol import ExecResult
from orchestrator.backends.quiet import (
    QUIET_KIB,
    SETTLE_TIMEOUT_S,
    BootLoad,
    CpuWatch,
    HostState,
    parse_cpu_list,
    settle,
)
from orchestrator.errors import BootFailed, HostFailed, InfraError, UserError, WorkloadFailed
from orchestrator.vm.clocksource import clock_cmdline
from orchestrator.vm.console import console_fault, excerpt, fault_hint, first_report, kernel_cmdline, tail
from orchestrator.vm.domain_xml import BootFiles, domain_xml
from orchestrator.vm.spec import VmSpec

NAME_PREFIX = "vmbisect-"
DEFAULT_URI = "qemu:///system"
RECONNECT_S = 15.0  # how long a guest's `finally` waits for libvirtd to answer again
# where libvirtd (qemu:///system) writes the pid of each running guest's QEMU process
QEMU_PID_DIR = "/run/libvirt/qemu"


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


def libvirt_fault(conn: Any, message: str, host: str | None = None) -> InfraError:
    """A libvirt call on a guest failed: the host's fault (HostFailed naming a lab `host`),
    saying so when the connection is gone (libvirtd restarted or stopped)."""
    if _alive(conn):
        message = f"libvirt: {message}"
    else:
        message = f"libvirt connection lost (libvirtd restarted or stopped?): {message}"
    return HostFailed(host, message) if host is not None else InfraError(message)


def _message(exc: libvirt.libvirtError) -> str:
    return exc.get_error_message() or str(exc)


class HostDomain:
    """A guest's libvirt domain whose failures are the host's: a libvirtError from any method
    becomes `fault(message)` (InfraError, or HostFailed on a lab host)."""

    def __init__(self, dom: Any, fault: Callable[[str], InfraError]) -> None:
        self._dom, self._fault = dom, fault

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._dom, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except libvirt.libvirtError as exc:
                raise self._fault(f"{name}: {_message(exc)}") from exc

        return call

    def isActive(self) -> bool:  # noqa: N802 (libvirt's name)
        """False once the guest stopped (a transient domain that stopped no longer exists)."""
        try:
            return bool(self._dom.isActive())
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return False
            raise self._fault(f"isActive: {_message(exc)}") from exc


class GuestAgent:
    """A guest's AgentClient. libvirtd stopping destroys its clients' guests (they are started
    with VIR_DOMAIN_START_AUTODESTROY): a silence that comes with a lost libvirt connection is
    the host's fault, raised as `lost(message)`; any other AgentSilent passes through."""

    def __init__(self, client: AgentClient, lost: Callable[[str], InfraError | None]) -> None:
        self._client, self._lost = client, lost

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attr(*args, **kwargs)
            except AgentSilent as exc:
                fault = self._lost(f"guest agent went silent ({name}): {exc}")
                if fault is not None:
                    raise fault from exc
                raise

        return call


@dataclass
class Guest:
    """A running guest with its agent. Use through LibvirtProvider.boot()."""

    name: str
    accel: str
    hello: dict[str, Any]
    boot_seconds: float
    console_log: Path
    agent: "GuestAgent"
    domain: Any
    host: str = "local"
    read_console: Callable[[], str] | None = None
    # the host before the guest started (orchestrator/backends/quiet.py)
    host_state: HostState | None = None
    # where the boot's time went, in seconds: cleanup, stage, disks, settle, define (createXML),
    # to_agent (start to the agent's hello); teardown (destroy, files removed) is added when the
    # guest ends: it is destroyed at once, its disks are scratch and its results already read
    phases: dict[str, float] = field(default_factory=dict)
    # the whole boot's load on its host CPUs, set when the guest ends (None: not measured)
    load: BootLoad | None = None

    def exec(self, argv: list[str], **kwargs: Any) -> ExecResult:
        try:
            return self.agent.exec(argv, **kwargs)
        except AgentSilent as exc:
            text = self.console()
            report = first_report(text)
            seen = f"; the console's first kernel report: {report[1]}" if report else ""
            raise WorkloadFailed(f"guest agent went silent during {argv[0]!r}: {exc}{seen}", excerpt(text, report),
                                 "console (first report and tail)" if report else None) from exc

    def console(self) -> str:
        if self.read_console is not None:
            return self.read_console()
        return self.console_log.read_text(errors="replace") if self.console_log.exists() else ""


@dataclass(frozen=True)
class RunFiles:
    """One boot's working files on its host: directory, console log, agent socket."""

    name: str
    directory: Path
    console: Path
    socket: Path
    local_console: Path


class Site(Protocol):
    """Where one boot's files live and how its agent is reached."""

    name: str

    def run_as_root(self, uri: str) -> bool: ...
    def stage(self, kernel: Path, initrd: Path) -> tuple[Path, Path]: ...
    def open_run(self, name: str) -> RunFiles: ...
    def make_disks(self, spec: VmSpec, run: RunFiles) -> list[Path]: ...
    def read_console(self, run: RunFiles) -> str: ...
    def agent(self, dom: Any, run: RunFiles) -> AgentClient: ...
    def close_run(self, run: RunFiles, disks: list[Path]) -> None: ...
    def sweep(self, live: set[str], everything: bool) -> list[str]: ...
    def sync(self) -> None: ...
    def read_proc(self, path: str) -> str: ...


class LocalSite:
    """This machine: files under run_root/log_root, the agent on a unix socket."""

    name = "local"

    def __init__(self, run_root: Path | None = None, log_root: Path | None = None) -> None:
        self.run_root = run_root or paths.run_dir()
        self.log_root = log_root or paths.data_dir() / "console"

    def run_as_root(self, uri: str) -> bool:
        return uri == DEFAULT_URI and os.geteuid() == 0

    def stage(self, kernel: Path, initrd: Path) -> tuple[Path, Path]:
        return kernel.resolve(), initrd.resolve()

    def open_run(self, name: str) -> RunFiles:
        self.log_root.mkdir(parents=True, exist_ok=True)
        sockdir = Path(tempfile.mkdtemp(prefix="vmb-"))
        console = self.log_root / f"{name}.log"
        return RunFiles(name, self.run_root / name, console, sockdir / "agent.sock", console)

    def make_disks(self, spec: VmSpec, run: RunFiles) -> list[Path]:
        return _make_disks(spec, run.directory)

    def read_console(self, run: RunFiles) -> str:
        return run.console.read_text(errors="replace") if run.console.exists() else ""

    def agent(self, dom: Any, run: RunFiles) -> AgentClient:
        return AgentClient.over_socket(_connect(run.socket))

    def sync(self) -> None:
        os.sync()

    def read_proc(self, path: str) -> str:
        return Path(path).read_text()

    def close_run(self, run: RunFiles, disks: list[Path]) -> None:
        for disk in disks:
            disk.unlink(missing_ok=True)
        for directory in {disk.parent for disk in disks} - {run.directory}:
            shutil.rmtree(directory, ignore_errors=True)  # the boot's own disk_dir under guest.disks.directory
        shutil.rmtree(run.directory, ignore_errors=True)
        shutil.rmtree(run.socket.parent, ignore_errors=True)

    def sweep(self, live: set[str], everything: bool) -> list[str]:
        """Local run directories are removed by their own boot's `finally`; nothing to sweep."""
        return []


class LibvirtProvider:
    def __init__(self, uri: str = DEFAULT_URI, run_root: Path | None = None, log_root: Path | None = None,
                 site: Site | None = None, settle_bound_kib: int = QUIET_KIB,
                 settle_timeout_s: float = SETTLE_TIMEOUT_S) -> None:
        _quiet_libvirt_errors()
        self.uri = uri
        self.settle_bound_kib, self.settle_timeout_s = settle_bound_kib, settle_timeout_s
        self.remote = site is not None
        self.site: Site = site or LocalSite(run_root, log_root)
        try:
            self.conn = libvirt.open(uri)
        except libvirt.libvirtError as exc:
            if site is not None:
                raise HostFailed(self.site.name, f"cannot connect to libvirt at {_redacted(uri)}: "
                                                 f"{exc.get_error_message()}") from exc
            raise InfraError(f"cannot connect to libvirt at {uri}: {exc.get_error_message()} (run: make setup)") from exc

    def close(self) -> None:
        try:
            self.conn.close()
        except libvirt.libvirtError:  # the connection was already lost
            pass

    def _fault(self, message: str) -> InfraError:
        return libvirt_fault(self.conn, message, self.site.name if self.remote else None)

    def _lost(self, message: str) -> InfraError | None:
        """`_fault(message)` when libvirt's connection is gone, else None."""
        return None if _alive(self.conn) else self._fault(message)

    def _end(self, name: str, dom: Any) -> None:
        """Destroy a boot's domain; through a new connection when ours was lost. Not on a lab
        host: there the connection drops with the SSH link, its libvirtd autodestroys the guest,
        and the pool marks the host down (tests/integration/test_remote_host.py)."""
        if _alive(self.conn):
            _destroy(dom)
            return
        if self.remote:
            return
        deadline = time.monotonic() + RECONNECT_S
        while True:
            try:
                conn = libvirt.open(self.uri)
                break
            except libvirt.libvirtError:
                if time.monotonic() >= deadline:
                    return  # left to the next controller's cleanup_leftovers or `vmbisect cleanup`
                time.sleep(0.5)
        try:
            _destroy(conn.lookupByName(name))
        except libvirt.libvirtError:  # already gone (it powered off)
            pass
        finally:
            conn.close()

    def cleanup_leftovers(self, everything: bool = False) -> list[str]:
        """Destroy vmbisect domains whose controller is gone (or all of them), then remove the
        files such controllers left on the site (remote run directories, partial pushes)."""
        removed = []
        live: set[str] = set()
        for dom in self._domains():
            pid = owner_pid(dom.name())
            if pid is None:
                continue
            if not everything and _pid_alive(pid):
                live.add(dom.name())
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
        return removed + self.site.sweep(live, everything)

    def _domains(self) -> list[Any]:
        try:
            return list(self.conn.listAllDomains())
        except libvirt.libvirtError as exc:
            raise HostFailed(self.site.name, f"libvirt stopped answering: {exc.get_error_message()}") from exc

    @contextmanager
    def boot(self, spec: VmSpec, kernel: Path, initrd: Path, accel: str = "tcg", append: str = "",
             timeout_s: float = 60.0) -> Iterator[Guest]:
        spec.validate()
        if not kernel.is_file():
            raise UserError(f"kernel: no such file {kernel}")
        phases: dict[str, float] = {}
        clock = _Phases(phases)
        self.cleanup_leftovers()
        clock.lap("cleanup")
        name = domain_name()
        staged_kernel, staged_initrd = self.site.stage(kernel, initrd)
        run = self.site.open_run(name)
        clock.lap("stage")
        disks: list[Path] = []
        dom = None
        client: AgentClient | None = None
        try:
            disks = self.site.make_disks(spec, run)
            clock.lap("disks")
            state = settle(self.site.sync, self.site.read_proc, self.settle_bound_kib, self.settle_timeout_s)
            clock.lap("settle")
            files = BootFiles(name=name, kernel=staged_kernel, initrd=staged_initrd,
                              cmdline=kernel_cmdline(append, clock_cmdline(spec.clock, accel)),
                              console_log=run.console, agent_socket=run.socket, disks=tuple(disks), accel=accel,
                              owner_pid=os.getpid(), run_as_root=self.site.run_as_root(self.uri))
            started = time.monotonic()
            dom = self._create(domain_xml(spec, files))
            watch = self._watch(name, spec)
            client = self.site.agent(dom, run)
            clock.lap("define")

            def console() -> str:
                return self.site.read_console(run)

            host_dom = HostDomain(dom, self._fault)
            hello = _await_hello(client, host_dom, console, started + timeout_s, timeout_s)
            clock.lap("to_agent")
            guest = Guest(name, accel, hello, time.monotonic() - started, run.local_console,
                          GuestAgent(client, self._lost), host_dom, self.site.name, console, state, phases)
            try:
                yield guest
            finally:
                clock.lap("guest")
                guest.load = self._load(watch)
        finally:
            if client is not None:
                client.close()
            if dom is not None:
                self._end(name, dom)
            clock.lap("destroy")
            self.site.close_run(run, disks if spec.disks.backing != "block" else [])
            clock.lap("files")

    def _watch(self, name: str, spec: VmSpec) -> CpuWatch | None:
        """The guest's QEMU process watched on its host CPUs from now on; None when its pid
        cannot be read (a session URI keeps it elsewhere): the boot's load is then not known."""
        try:
            pid = int(self.site.read_proc(f"{QEMU_PID_DIR}/{name}.pid").split()[0])
            watch = CpuWatch(self.site.read_proc, pid, parse_cpu_list(spec.pinning))
            watch.start()
        except (OSError, ValueError, IndexError, InfraError):
            return None
        return watch

    @staticmethod
    def _load(watch: CpuWatch | None) -> BootLoad | None:
        if watch is None:
            return None
        try:
            return watch.stop()
        except (OSError, ValueError, IndexError, InfraError):  # the guest or its host is gone already
            return None

    def _create(self, xml: str) -> Any:
        try:
            return self.conn.createXML(xml, libvirt.VIR_DOMAIN_START_AUTODESTROY)
        except libvirt.libvirtError as exc:
            if not self.conn.isAlive():
                raise HostFailed(self.site.name, f"libvirt connection lost: {exc.get_error_message()}") from exc
            raise InfraError(f"libvirt could not start the guest: {exc.get_error_message()}") from exc


class _Phases:
    """Seconds since the last lap, added to `into` under each lap's name."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into, self.last = into, time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.into[name] = round(self.into.get(name, 0.0) + now - self.last, 3)
        self.last = now


def _redacted(uri: str) -> str:
    """A URI without its query (key and known_hosts paths): enough to say which host."""
    return uri.split("?", 1)[0]


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


def _await_hello(client: AgentClient, dom: Any, console: Callable[[], str], deadline: float,
                 timeout_s: float) -> dict[str, Any]:
    while True:
        try:
            return client.hello(deadline=min(deadline, time.monotonic() + 0.5), resend_every_s=0.5)
        except AgentSilent:
            time.sleep(0.05)
        text = console()
        fault = console_fault(text)
        if fault:
            hint = fault_hint(fault)
            raise BootFailed(f"guest kernel failed to boot: {fault}" + (f"; {hint}" if hint else ""), tail(text))
        if not dom.isActive():  # a lost libvirt connection raises InfraError here, not BootFailed
            raise BootFailed("guest stopped before its agent answered", tail(text))
        if time.monotonic() >= deadline:
            raise BootFailed(f"no answer from the guest agent within {timeout_s:g} s", tail(text), hung=True)


def _alive(conn: Any) -> bool:
    """Whether libvirt answers on `conn`. A round trip: isAlive alone calls a connection whose
    daemon went away alive until some call has failed on it."""
    try:
        conn.getLibVersion()
        return bool(conn.isAlive())
    except libvirt.libvirtError:
        return False


def _active(dom: Any) -> bool:
    try:
        return bool(dom.isActive())
    except libvirt.libvirtError:
        return False


def _destroy(dom: Any) -> None:
    if _active(dom):
        try:
            dom.destroy()
        except libvirt.libvirtError:
            pass
