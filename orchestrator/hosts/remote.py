"""A lab host as a Site of the libvirt provider: boot files pushed over SSH, the agent reached
through libvirt's own channel stream. docs/hosts.md.

The agent channel: the domain's virtio-serial port is a unix socket on the host, which the
controller reaches with virDomainOpenChannel over the remote libvirt connection it already
holds. No port opens on the guest or the host beyond SSH, no tool is needed on the host, and
the stream dies with the connection, which is exactly when libvirtd's autodestroy takes the
guest away. The stream is non-blocking, served by libvirt's event loop (a daemon thread), and
pumped into a local socket pair so the AgentClient reads it like the local socket. A blocking
stream was tried first: a thread waiting in its recv held up every other call on the
connection until the guest spoke.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import libvirt

from orchestrator import paths
from orchestrator.accel import AccelChoice, one_line
from orchestrator.agent.client import AgentClient
from orchestrator.backends.libvirt_vm import RunFiles, _pid_alive, owner_pid
from orchestrator.errors import HostFailed, UserError, VmbisectError
from orchestrator.hosts.labfile import Host
from orchestrator.hosts.push import file_sha256, part_owner, push
from orchestrator.hosts.ssh import SshHost
from orchestrator.vm.domain_xml import AGENT_PORT
from orchestrator.vm.spec import VmSpec

# libvirt's keepalive: a host that stops answering is declared lost after about 5 x 3 s.
KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_COUNT = 3
UNIX_PATH_MAX = 107
CLOSE_REASONS = {
    libvirt.VIR_CONNECT_CLOSE_REASON_ERROR: "connection error",
    libvirt.VIR_CONNECT_CLOSE_REASON_EOF: "connection closed by the host",
    libvirt.VIR_CONNECT_CLOSE_REASON_KEEPALIVE: "host stopped answering (keepalive)",
    libvirt.VIR_CONNECT_CLOSE_REASON_CLIENT: "connection closed",
}
# How often, at most, a wait for the agent asks the host whether it is there. The question also
# brings the answer in: libvirt's libssh transport keeps what it read of the connection in its
# own buffer, and its event loop does not pass on the agent's reply until another call reads the
# connection. With the client's default of 5 s every agent call over a lab host took 5 s (a 2 s
# fio run, each 20 ms snapshot); the checks start at 10 ms and double up to this.
LINK_CHECK_S = 1.0
_STREAM_EVENTS = libvirt.VIR_STREAM_EVENT_READABLE | libvirt.VIR_STREAM_EVENT_ERROR | libvirt.VIR_STREAM_EVENT_HANGUP

_loop_lock = threading.Lock()
_loop_running = False


def ensure_event_loop() -> None:
    """libvirt's default event loop in a daemon thread; call before opening a remote URI.

    Needed for non-blocking streams and for keepalive, which is how a silent host is noticed.
    """
    global _loop_running
    with _loop_lock:
        if _loop_running:
            return
        libvirt.virEventRegisterDefaultImpl()
        threading.Thread(target=_run_loop, name="libvirt-events", daemon=True).start()
        _loop_running = True


def _run_loop() -> None:
    while True:
        libvirt.virEventRunDefaultImpl()


class StreamChannel:
    """The agent port over virDomainOpenChannel, as the near end of a local socket pair."""

    def __init__(self, host: str, conn: Any, dom: Any) -> None:
        self.host = host
        self.conn = conn
        self.dom = dom
        self.error = ""
        self._ours, self.theirs = socket.socketpair()
        self.stream = conn.newStream(libvirt.VIR_STREAM_NONBLOCK)
        try:
            dom.openChannel(AGENT_PORT, self.stream, 0)
            self.stream.eventAddCallback(_STREAM_EVENTS, self._on_event, None)
        except libvirt.libvirtError as exc:
            self._ours.close()
            self.theirs.close()
            raise HostFailed(host, f"cannot open the agent channel: {exc.get_error_message()}") from exc
        threading.Thread(target=self._to_stream, name=f"agent-tx-{host}", daemon=True).start()

    def link_error(self) -> VmbisectError | None:
        """HostFailed when the host no longer answers (the guest is not to blame), else None.

        Asked when the channel closed or stayed silent: one round trip to the host's libvirtd
        tells a guest that stopped from a host that is gone. A host that vanished without a
        reset is noticed by keepalive, which fails this call after about 15 s.
        """
        try:
            self.dom.isActive()
            return None
        except libvirt.libvirtError as exc:
            why = self.error or exc.get_error_message()
            return HostFailed(self.host, f"libvirt connection lost: {why}")

    def close(self) -> None:
        try:
            self.stream.eventRemoveCallback()
        except libvirt.libvirtError:
            pass
        try:
            self.stream.abort()
        except libvirt.libvirtError:
            pass
        self._ours.close()

    def _on_event(self, stream: Any, events: int, _opaque: Any) -> None:
        if events & libvirt.VIR_STREAM_EVENT_READABLE:
            try:
                data = stream.recv(1 << 16)
            except libvirt.libvirtError as exc:
                self.hang_up(exc.get_error_message())
                return
            if isinstance(data, bytes) and data:
                try:
                    self._ours.sendall(data)
                except OSError:
                    self.hang_up("")
                return
            if data == b"":
                self.hang_up("")
                return
        if events & (libvirt.VIR_STREAM_EVENT_ERROR | libvirt.VIR_STREAM_EVENT_HANGUP):
            self.hang_up("")

    def hang_up(self, why: str) -> None:
        self.error = self.error or why
        try:
            self.stream.eventRemoveCallback()
        except libvirt.libvirtError:
            pass
        try:
            self._ours.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _to_stream(self) -> None:
        while True:
            try:
                data = self._ours.recv(1 << 16)
            except OSError:
                return
            if not data:
                return
            while data:
                try:
                    sent = self.stream.send(data)
                except libvirt.libvirtError as exc:
                    self.hang_up(exc.get_error_message())
                    return
                if sent == -2:
                    time.sleep(0.005)
                    continue
                data = data[sent:]


class RemoteSite:
    """A lab host reached over SSH: its work_dir holds images/ (pushed, content-addressed) and
    run/<domain>/ (console log, agent socket, disks unless disk_dir says elsewhere)."""

    def __init__(self, host: Host, ssh: SshHost, log_root: Path | None = None) -> None:
        assert host.ssh is not None and host.work_dir is not None
        self.host = host
        self.name = host.name
        self.ssh = ssh
        self.log_root = log_root or paths.data_dir() / "console"
        self.images = host.work_dir / "images"
        self.runs = host.work_dir / "run"
        self.conn: Any = None
        self.lost = ""
        self._channels: list[StreamChannel] = []
        self._digests: dict[tuple[str, int, int], str] = {}

    def attach(self, conn: Any) -> None:
        """The provider's libvirt connection: channels open on it, keepalive watches it, and
        its close (EOF, keepalive timeout, error) hangs up every open agent channel at once,
        so a guest command in flight ends with HostFailed instead of waiting out its timeout."""
        self.conn = conn
        try:
            conn.setKeepAlive(KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT)
            conn.registerCloseCallback(self._on_close, None)
        except libvirt.libvirtError:
            pass

    def _on_close(self, _conn: Any, reason: int, _opaque: Any) -> None:
        self.lost = CLOSE_REASONS.get(reason, f"closed (reason {reason})")
        for channel in list(self._channels):
            channel.hang_up(self.lost)

    def run_as_root(self, uri: str) -> bool:
        assert self.host.ssh is not None
        return self.host.ssh.user == "root"

    def stage(self, kernel: Path, initrd: Path) -> tuple[Path, Path]:
        k = push(self.ssh, kernel, self.images, self._sha256(kernel), ".kernel")
        i = push(self.ssh, initrd, self.images, self._sha256(initrd), ".initrd")
        return Path(k.path), Path(i.path)

    def _sha256(self, path: Path) -> str:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        if key not in self._digests:
            self._digests[key] = file_sha256(path)
        return self._digests[key]

    def open_run(self, name: str) -> RunFiles:
        directory = self.runs / name
        sock = directory / "a.sock"
        if len(str(sock)) > UNIX_PATH_MAX:
            raise UserError(f"work_dir: {self.host.work_dir} on host {self.name} is too long for a unix socket "
                            f"path ({len(str(sock))} > {UNIX_PATH_MAX} characters); choose a shorter one")
        self.ssh.run(["mkdir", "-p", "--", str(directory)])
        self.log_root.mkdir(parents=True, exist_ok=True)
        return RunFiles(name, directory, directory / "console.log", sock, self.log_root / f"{name}.log")

    def make_disks(self, spec: VmSpec, run: RunFiles) -> list[Path]:
        d = spec.disks
        if d.backing == "block":
            return [Path(dev) for dev in d.devices]
        directory = self.host.disk_dir or run.directory
        if d.count:
            self.ssh.run(["mkdir", "-p", "--", str(directory)])
        disks = []
        for i in range(d.count):
            path = directory / f"{run.name}-disk{i}.{d.backing}"
            if d.backing == "qcow2":
                self.ssh.run(["qemu-img", "create", "-q", "-f", "qcow2", str(path), f"{d.size_mib}M"])
            else:
                self.ssh.run(["truncate", "-s", f"{d.size_mib}M", "--", str(path)])
            disks.append(path)
        if disks and d.cache in ("none", "directsync"):
            probe = self.ssh.run(["dd", f"if={disks[0]}", "of=/dev/null", "bs=4096", "count=1", "iflag=direct",
                                  "status=none"], check=False)
            if probe.exit_code != 0:
                raise UserError(f"cache: {d.cache!r} opens disks with O_DIRECT, which {directory} on host "
                                f"{self.name} does not support; use cache writeback or unsafe there, or another "
                                "disk_dir")
        return disks

    def read_console(self, run: RunFiles) -> str:
        data = self.ssh.read_bytes(run.console)
        return data.decode(errors="replace") if data else ""

    def agent(self, dom: Any, run: RunFiles) -> AgentClient:
        channel = StreamChannel(self.name, self.conn, dom)
        self._channels.append(channel)
        client = AgentClient.over_socket(channel.theirs, link_error=channel.link_error, link_check_s=LINK_CHECK_S)
        client.on_close(channel.close)
        client.on_close(lambda: self._channels.remove(channel))
        return client

    def sync(self) -> None:
        self.ssh.run(["sync"], timeout_s=300.0)

    def read_proc(self, path: str) -> str:
        return self.ssh.run(["cat", "--", path]).text

    def close_run(self, run: RunFiles, disks: list[Path]) -> None:
        """Keep the console log beside local ones; remove the run's files from the host. A host
        that is gone keeps them until the next start sweeps them (`sweep`)."""
        try:
            self.ssh.get(run.console, run.local_console)
        except (HostFailed, OSError):
            pass
        try:
            self.ssh.run(["rm", "-rf", "--", str(run.directory), *(str(d) for d in disks)], check=False)
        except HostFailed:
            pass

    def sweep(self, live: set[str], everything: bool) -> list[str]:
        """Remove run directories, disks and partial pushes whose controller is gone."""
        doomed: list[str] = []
        for name, _is_dir in self.ssh.listdir(self.runs):
            pid = owner_pid(name)
            if pid is not None and name not in live and (everything or not _pid_alive(pid)):
                doomed.append(str(self.runs / name))
        if self.host.disk_dir is not None:
            for name, _is_dir in self.ssh.listdir(self.host.disk_dir):
                pid = owner_pid(name.split("-disk", 1)[0])
                if pid is not None and name.split("-disk", 1)[0] not in live and (everything or not _pid_alive(pid)):
                    doomed.append(str(self.host.disk_dir / name))
        for name, _is_dir in self.ssh.listdir(self.images):
            pid = part_owner(name)
            if pid is not None and (everything or not _pid_alive(pid)):
                doomed.append(str(self.images / name))
        if doomed:
            self.ssh.run(["rm", "-rf", "--", *doomed])
        return [f"{self.name}:{p}" for p in doomed]


def choose_remote_accel(ssh: SshHost, probe_kvm: Any, reprobe: bool = False) -> AccelChoice:
    """As accel.choose_accel, for a lab host: /dev/kvm is looked at there, and the verdict is
    cached per (host name, its kernel release, its QEMU version) in this machine's cache."""
    from orchestrator.accel import _load, _save

    if ssh.run(["test", "-c", "/dev/kvm"], check=False).exit_code != 0:
        return AccelChoice("tcg", f"/dev/kvm does not exist on {ssh.name}", probed=False)
    release = ssh.run(["uname", "-r"]).text.strip()
    qemu = ssh.run(["qemu-system-x86_64", "--version"], check=False).text.splitlines()
    key = f"{ssh.name}|{release}|{qemu[0] if qemu else 'unknown'}"
    cache_file = paths.cache_dir() / "accel-hosts.json"
    cached = _load(cache_file)
    if key in cached and not reprobe:
        return AccelChoice(cached[key]["accel"], cached[key]["reason"], probed=False)
    ok, detail = probe_kvm()
    choice = AccelChoice("kvm" if ok else "tcg",
                         "a probe guest booted under KVM" if ok else
                         f"/dev/kvm exists on {ssh.name} but a probe guest under KVM failed: {one_line(detail)}",
                         probed=True)
    cached[key] = {"accel": choice.accel, "reason": choice.reason}
    _save(cache_file, cached)
    return choice

