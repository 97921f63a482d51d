"""Lab file (YAML) -> frozen, typed Lab: the machines guests run on. Reference: docs/hosts.md.

Pure: nothing here touches the network. Every error names the field's path
(`hosts[1].slots[0].cpus`) and, where there is a fixed set, the valid choices; unknown keys
are rejected with the keys that are allowed. No lab file means one implicit local host with
one unpinned slot: what vmbisect did before labs existed.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

from orchestrator import yamlcheck
from orchestrator.errors import UserError
from orchestrator.notify.recipients import Notify, parse_notify

LOCAL_URI = "qemu:///system"
DEFAULT_WORK_DIR = Path("/var/tmp/vmbisect")
DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
HOST_KEYS = ("name", "ssh", "key", "known_hosts", "uri", "slots", "disk_dir", "work_dir")
SLOT_KEYS = ("cpus",)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
_TARGET = re.compile(r"(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])"
                     r"(?::(?P<port>\d{1,5}))?")


@dataclass(frozen=True)
class SshTarget:
    user: str
    host: str
    port: int
    key: Path
    known_hosts: Path

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


@dataclass(frozen=True)
class Slot:
    """One guest at a time, its vCPUs pinned to `cpus` (empty: not pinned)."""

    index: int
    cpus: tuple[int, ...] = ()

    def pinning(self, vcpus: int) -> tuple[str, ...]:
        """One host CPU set per vCPU: vCPU i on cpus[i] when the counts match, else every vCPU
        on the slot's whole set (the guest never leaves its slot's cores)."""
        if not self.cpus:
            return ()
        if vcpus == len(self.cpus):
            return tuple(str(c) for c in self.cpus)
        whole = ",".join(str(c) for c in self.cpus)
        return (whole,) * vcpus


@dataclass(frozen=True)
class Host:
    """A machine guests run on. work_dir None (local hosts only): vmbisect's own data directory."""

    name: str
    uri: str
    slots: tuple[Slot, ...]
    work_dir: Path | None = None
    disk_dir: Path | None = None
    ssh: SshTarget | None = None

    @property
    def remote(self) -> bool:
        return self.ssh is not None


@dataclass(frozen=True)
class Lab:
    """`build_cpus`: CPUs of this machine (the controller) that every kernel build runs on (and
    leases: orchestrator/hosts/buildcpus.py), also building ahead while a round measures; empty:
    no build-ahead, and builds lease every CPU of this machine (the default, and the only choice
    where builds would share cores with guests: docs/campaign.md "Build ahead")."""

    hosts: tuple[Host, ...]
    source: Path | None = None
    notify: Notify | None = None  # who is mailed when a campaign on the lab ends (docs/mail.md)
    build_cpus: tuple[int, ...] = ()
    # The most slots one campaign measures on at once (None: every slot of the lab); a queue
    # worker running several campaigns on the lab gives each one (lab_for).
    campaign_slots: int | None = None

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise UserError(f"host: invalid value {name!r}; valid choices: {', '.join(h.name for h in self.hosts)}")


def local_lab(uri: str = LOCAL_URI) -> Lab:
    """No lab file: this machine, one guest at a time, unpinned (the behaviour before labs)."""
    return Lab((Host("local", uri, (Slot(0),)),))


def lab_from(path: Path | None, host: str | None, uri: str = LOCAL_URI) -> Lab:
    """The hosts of lab file `path`, or this machine alone (at `uri`) without one; `host`, when
    given, must be one of them."""
    if path is None:
        if host is not None:
            raise UserError("host: needs --lab FILE naming the hosts")
        return local_lab(uri)
    lab = load_lab(path)
    if host is not None:
        lab.host(host)
    return lab


def lab_for(path: Path, slots: int | None = None) -> Lab:
    """The hosts of lab file `path` for a campaign that measures on at most `slots` of its
    slots at once (None: on every one)."""
    return dataclasses.replace(load_lab(path), campaign_slots=slots)


def load_lab(path: Path) -> Lab:
    data = yamlcheck.read_file(path, "lab", "a lab file lists a few hosts", "a mapping with a list of hosts")
    return parse_lab(data, base=path.parent, source=path)


def parse_lab(data: Any, base: Path = Path("."), source: Path | None = None) -> Lab:
    top = yamlcheck.mapping(data, "lab")
    yamlcheck.known(top, "", ["hosts", "notify", "build_cpus"])
    raw_hosts = top.get("hosts")
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise UserError("hosts: expected a list of one or more hosts")
    hosts = tuple(_host(h, f"hosts[{i}]", base) for i, h in enumerate(raw_hosts))
    seen: set[str] = set()
    for i, h in enumerate(hosts):
        if h.name in seen:
            raise UserError(f"hosts[{i}].name: {h.name!r} is used by an earlier host; names must be unique")
        seen.add(h.name)
    notify = parse_notify(top["notify"]) if "notify" in top else None
    build_cpus = _build_cpus(top["build_cpus"], hosts) if "build_cpus" in top else ()
    return Lab(hosts, source, notify, build_cpus)


def _build_cpus(value: Any, hosts: tuple[Host, ...], available: int | None = None) -> tuple[int, ...]:
    """The controller's build CPUs: CPUs of this machine no guest of a local host may use (every
    local slot pinned, none of its CPUs listed)."""
    cpus = _cpus(value, "build_cpus")
    count = available if available is not None else (os.cpu_count() or 1)
    if cpus[-1] >= count:
        raise UserError(f"build_cpus: host CPU {cpus[-1]} does not exist on this machine (CPUs 0-{count - 1})")
    for i, h in enumerate(hosts):
        if h.remote:
            continue
        for slot in h.slots:
            where = f"hosts[{i}].slots[{slot.index}]"
            if not slot.cpus:
                raise UserError(f"build_cpus: {where} has no cpus, so its guests may run on any core of this "
                                "machine; pin every local slot to CPUs of its own to build ahead beside them")
            shared = sorted(set(slot.cpus) & set(cpus))
            if shared:
                raise UserError(f"build_cpus: host CPU {shared[0]} belongs to {where}; builds never share cores "
                                "with guests")
    return cpus


def derived_uri(target: SshTarget) -> str:
    """libvirt's remote driver over libssh, checking the host key against `known_hosts`.

    The libssh transport (not `qemu+ssh`) because only it takes a known_hosts file and a key
    file as URI parameters: the `ssh` transport can only skip verification (`no_verify`),
    which also appends the key to the user's ~/.ssh/known_hosts. docs/hosts.md.
    """
    query = "&".join([
        f"keyfile={quote(str(target.key), safe='/')}",
        f"known_hosts={quote(str(target.known_hosts), safe='/')}",
        "known_hosts_verify=normal",
        "sshauth=privkey",
    ])
    return f"qemu+libssh://{target.user}@{target.host}:{target.port}/system?{query}"


def _host(value: Any, path: str, base: Path) -> Host:
    data = yamlcheck.mapping(value, path)
    yamlcheck.known(data, path, list(HOST_KEYS))
    if "name" not in data:
        raise UserError(f"{path}.name: missing (required)")
    name = yamlcheck.text(data["name"], f"{path}.name")
    if not _NAME.fullmatch(name):
        raise UserError(f"{path}.name: {name!r} must be 1-32 letters, digits, '.', '_' or '-'")
    ssh = _ssh(data, path, base) if "ssh" in data else None
    if ssh is None:
        for only_remote in ("key", "known_hosts"):
            if only_remote in data:
                raise UserError(f"{path}.{only_remote}: only for a host reached over ssh; add {path}.ssh")
    uri = yamlcheck.text(data["uri"], f"{path}.uri") if "uri" in data else (derived_uri(ssh) if ssh else LOCAL_URI)
    default_work = str(DEFAULT_WORK_DIR) if ssh is not None else None
    raw_work = data.get("work_dir", default_work)
    work_dir = _abs_dir(raw_work, f"{path}.work_dir", base, ssh is not None) if raw_work is not None else None
    disk_dir = _abs_dir(data["disk_dir"], f"{path}.disk_dir", base, ssh is not None) if "disk_dir" in data else None
    return Host(name, uri, _slots(data.get("slots"), f"{path}.slots"), work_dir, disk_dir, ssh)


def _ssh(data: Mapping[str, Any], path: str, base: Path) -> SshTarget:
    text = yamlcheck.text(data["ssh"], f"{path}.ssh")
    m = _TARGET.fullmatch(text)
    if m is None:
        raise UserError(f"{path}.ssh: expected user@host[:port], got {text!r}")
    port = int(m["port"] or 22)
    if not 1 <= port <= 65535:
        raise UserError(f"{path}.ssh: port must be 1-65535, got {port}")
    if "key" not in data:
        raise UserError(f"{path}.key: missing (required with ssh: the private key file to log in with)")
    key = _local_path(data["key"], f"{path}.key", base)
    known = _local_path(data.get("known_hosts", str(DEFAULT_KNOWN_HOSTS)), f"{path}.known_hosts", base)
    return SshTarget(m["user"] or "root", m["host"].strip("[]"), port, key, known)


def _slots(value: Any, path: str) -> tuple[Slot, ...]:
    if value is None:
        return (Slot(0),)
    if not isinstance(value, list) or not value:
        raise UserError(f"{path}: expected a list of slots, e.g. [{{cpus: 0-1}}, {{cpus: 2-3}}]")
    slots = []
    owner: dict[int, int] = {}
    for i, raw in enumerate(value):
        data = yamlcheck.mapping(raw, f"{path}[{i}]")
        yamlcheck.known(data, f"{path}[{i}]", list(SLOT_KEYS))
        cpus = _cpus(data["cpus"], f"{path}[{i}].cpus") if "cpus" in data else ()
        if not cpus and len(value) > 1:
            raise UserError(f"{path}[{i}].cpus: missing; with more than one slot every slot needs its own "
                            "host CPUs (slots never share cores)")
        for cpu in cpus:
            if cpu in owner:
                raise UserError(f"{path}[{i}].cpus: host CPU {cpu} already belongs to slot {owner[cpu]}; "
                                "slots never share cores")
            owner[cpu] = i
        slots.append(Slot(i, cpus))
    return tuple(slots)


def _cpus(value: Any, path: str) -> tuple[int, ...]:
    """`2-3`, `0,2,4`, `[4, 5]` or `5` -> sorted host CPU numbers."""
    if isinstance(value, bool):
        raise UserError(f"{path}: expected host CPUs like 2-3, 0,2 or [4, 5], got {value!r}")
    if isinstance(value, int):
        items: list[Any] = [value]
    elif isinstance(value, list):
        items = value
    elif isinstance(value, str):
        items = [p.strip() for p in value.split(",")]
    else:
        raise UserError(f"{path}: expected host CPUs like 2-3, 0,2 or [4, 5], got {type(value).__name__}")
    cpus: list[int] = []
    for item in items:
        text = str(item)
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
        if isinstance(item, bool) or m is None:
            raise UserError(f"{path}: expected host CPUs like 2-3, 0,2 or [4, 5], got {text!r}")
        low, high = int(m[1]), int(m[2] or m[1])
        if high < low:
            raise UserError(f"{path}: range {text!r} runs backwards")
        cpus.extend(range(low, high + 1))
    if len(set(cpus)) != len(cpus):
        raise UserError(f"{path}: a host CPU is listed twice in {value!r}")
    if not cpus:
        raise UserError(f"{path}: expected at least one host CPU")
    return tuple(sorted(cpus))


def _local_path(value: Any, path: str, base: Path) -> Path:
    p = Path(yamlcheck.text(value, path)).expanduser()
    return p if p.is_absolute() else (base / p).resolve()


def _abs_dir(value: Any, path: str, base: Path, remote: bool) -> Path:
    p = Path(yamlcheck.text(value, path))
    if remote and not p.is_absolute():
        raise UserError(f"{path}: a directory on a remote host must be absolute, got {str(p)!r}")
    return p if remote else _local_path(value, path, base)
