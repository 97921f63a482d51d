"""What goes into a guest image: gathered from the host, identified by a digest of all inputs."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from orchestrator.errors import InfraError, UserError
from orchestrator.image import modfiles
from orchestrator.image.cpio import normalize
from orchestrator.image.hostfs import HostCopier
from orchestrator.image.libs import shared_libraries
from orchestrator.image.modules import resolve, split_compression
from orchestrator.image.tools import BUSYBOX, ImageTool, list_applets
from orchestrator.image.tree import Blob, HostFile, ImageTree, Node

FORMAT_VERSION = 1

DEFAULT_MODULES: tuple[str, ...] = (
    "virtio_pci",
    "virtio_blk",
    "virtio_scsi",
    "virtio_console",
    "virtio_net",
    "virtio_rng",
    "sd_mod",
    "scsi_mod",
    "mptsas",
    "mptspi",
    "megaraid_sas",
    "sym53c8xx",
    "ext4",
    "xfs",
    # I/O schedulers `sched:` settings switch to: a distribution kernel builds them as modules,
    # and there is no modprobe in the guest to load one when sysfs asks for it
    "bfq",
    "kyber_iosched",
)

MODULE_LIST_PATH = "/etc/vmbisect/modules"

SKELETON_DIRS: Mapping[str, int] = {
    "/dev": 0o755,
    "/etc": 0o755,
    "/mnt": 0o755,
    "/proc": 0o555,
    "/root": 0o700,
    "/run": 0o755,
    "/sys": 0o555,
    "/tmp": 0o1777,
}


@dataclass(frozen=True)
class ImagePlan:
    nodes: tuple[Node, ...]
    kernel_release: str | None
    modules: tuple[str, ...]
    builtin_modules: tuple[str, ...]
    notes: tuple[str, ...]

    def inputs(self) -> list[dict[str, str]]:
        """Every host file the image is made from, with its content hash."""
        return [
            {"image_path": n.path, "host_path": str(n.source.path), "sha256": n.source.sha256}
            for n in self.nodes
            if isinstance(n.source, HostFile)
        ]

    def digest(self) -> str:
        entries: list[list[Any]] = []
        for node in self.nodes:
            source: list[str] = []
            if isinstance(node.source, HostFile):
                source = [str(node.source.path), node.source.sha256, node.source.codec]
            elif isinstance(node.source, Blob):
                source = ["", node.source.sha256, ""]
            entries.append([node.path, node.kind.value, node.mode, node.target, list(node.rdev), source])
        document = {
            "format": FORMAT_VERSION,
            "kernel_release": self.kernel_release,
            "modules": list(self.modules),
            "notes": list(self.notes),
            "entries": entries,
        }
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def _find_tool(name: str, tool: ImageTool) -> tuple[str | None, str]:
    """(host path or None, why it is unusable)."""
    found = next((c for c in tool.candidates if os.path.isfile(c)), None)
    hint = f" ({tool.hint})" if tool.hint else ""
    install = f"install the Debian package {tool.package}{hint}"
    if found is None:
        return None, f"{name} not found at {' or '.join(tool.candidates)}; {install}"
    missing = [d for d in tool.data if not os.path.isfile(d)]
    if missing:
        return None, f"{name} needs {missing[0]}, which is missing; {install}"
    return found, ""


def _executable_names(path: str) -> set[str]:
    return {PurePosixPath(path).name, PurePosixPath(os.path.realpath(path)).name}


def make_plan(
    *,
    agent: Path,
    tools: Mapping[str, ImageTool],
    optional: Collection[str],
    modules_root: Path,
    kernel_release: str | None,
    modules: Sequence[str] | None,
    extra_files: Mapping[str, Path],
) -> ImagePlan:
    """Gather everything from the host (runs ldd and busybox; hashes every file).

    `tools` must contain busybox and `optional` must not (the builder checks both).
    Busybox applets become symlinks next to busybox, except names of the programs copied in
    (so `mke2fs` is always e2fsprogs' one) and paths already taken (e.g. by `extra_files`).
    """
    if modules is not None and kernel_release is None:
        raise UserError("kernel modules were requested without a kernel release")
    if not agent.is_file():
        raise InfraError(f"guest agent not found at {agent}; build it with `make agent`")
    tree = ImageTree()
    copier = HostCopier(tree)
    notes: list[str] = []
    for path, mode in SKELETON_DIRS.items():
        tree.add_dir(path, mode)
    tree.add_char_device("/dev/console", 0o600, 5, 1)
    tree.add_symlink("/etc/mtab", "../proc/self/mounts")

    found = _add_tools(copier, tools, optional, notes)
    for library in shared_libraries([agent, *map(Path, found.values())]):
        copier.copy(str(library))
    copier.copy_as("/init", agent, mode=0o755)

    order: tuple[str, ...] = ()
    builtin: tuple[str, ...] = ()
    if kernel_release is not None:
        order, builtin = _add_modules(tree, copier, modules_root, kernel_release, modules)

    for image_path, host in sorted(extra_files.items()):
        _add_extra(copier, image_path, host)

    shadowing = {name for path in found.values() for name in _executable_names(path)}
    busybox = found[BUSYBOX]
    for applet in list_applets(Path(busybox)):
        path = str(PurePosixPath(busybox).parent / applet)
        if applet not in shadowing and not tree.exists(path):
            tree.add_symlink(path, BUSYBOX)

    return ImagePlan(tuple(tree.nodes()), kernel_release, order, builtin, tuple(notes))


def _add_tools(
    copier: HostCopier, tools: Mapping[str, ImageTool], optional: Collection[str], notes: list[str]
) -> dict[str, str]:
    """Copy each tool and its data files; returns name -> host path of the tools found."""
    found: dict[str, str] = {}
    for name, tool in tools.items():
        path, problem = _find_tool(name, tool)
        if path is None:
            if name not in optional:
                raise InfraError(problem)
            notes.append(f"left out: {problem}")
            continue
        copier.copy(path)
        for data in tool.data:
            copier.copy(data)
        found[name] = path
    return found


def _add_modules(
    tree: ImageTree,
    copier: HostCopier,
    modules_root: Path,
    release: str,
    wanted: Sequence[str] | None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    index = modfiles.load_index(modules_root, release)
    resolution = resolve(DEFAULT_MODULES if wanted is None else wanted, index, release)
    base = modfiles.release_dir(modules_root, release)
    guest_paths: list[str] = []
    for name in resolution.order:
        relpath = index.files[name]
        plain, codec = split_compression(relpath)
        modfiles.require_codec(codec)
        guest_path = f"/lib/modules/{release}/{plain}"
        tree.add_file(guest_path, copier.host_file(base / relpath, codec), 0o644)
        guest_paths.append(guest_path)
    listing = "".join(f"{p}\n" for p in guest_paths).encode()
    tree.add_file(MODULE_LIST_PATH, Blob(listing), 0o644)
    return resolution.order, resolution.builtin


def _add_extra(copier: HostCopier, image_path: str, host: Path) -> None:
    try:
        normalized = normalize(image_path)
    except ValueError as err:
        raise UserError(f"extra file: {err}") from err
    if not host.is_file():
        raise UserError(f"extra file for {normalized}: {host} is not a file")
    copier.copy_as(normalized, host)
