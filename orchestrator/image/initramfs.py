"""Build the guest initramfs (.cpio.gz), cached by a digest of all its inputs."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from orchestrator import paths
from orchestrator.errors import InfraError, UserError, choices_error
from orchestrator.image import modfiles
from orchestrator.image.cpio import Entry, write_archive
from orchestrator.image.plan import FORMAT_VERSION, ImagePlan, make_plan
from orchestrator.image.tools import DEFAULT_TOOLS, MANDATORY_TOOLS, ImageTool
from orchestrator.image.tree import Blob, HostFile, Node

GZIP_LEVEL = 6
# "none" is the default: under TCG the guest spends 0.5-2 s gunzipping ~120 MB (docs/boot-time.md).
COMPRESSIONS = ("none", "gzip")
_SUFFIX = {"none": ".cpio", "gzip": ".cpio.gz"}
_NO_EXTRA_FILES: Mapping[str, Path] = MappingProxyType({})


@dataclass(frozen=True)
class GuestImage:
    """A built image. `modules`: module names in the order the agent loads them."""

    path: Path
    manifest_path: Path
    sha256: str
    inputs_digest: str
    size: int
    kernel_release: str | None
    modules: tuple[str, ...]
    builtin_modules: tuple[str, ...]
    notes: tuple[str, ...]
    from_cache: bool


def default_cache_root() -> Path:
    return paths.cache_dir() / "images"


class GuestImageBuilder:
    """Builds guest images into `cache_root`; one instance may build many images.

    `tools`: the programs to carry (default DEFAULT_TOOLS; busybox and fio are required).
    `optional`: names in `tools` that may be missing on the host; they are then left out
    and the image's `notes` say so. Any other missing tool is an InfraError naming its package.
    `modules_root`: where kernel releases keep their modules (/lib/modules on Debian).
    `compression`: "none" (default, fastest guest boot under TCG) or "gzip" (a third the size).
    """

    def __init__(
        self,
        cache_root: Path | None = None,
        agent: Path | None = None,
        *,
        tools: Mapping[str, ImageTool] | None = None,
        optional: Collection[str] = frozenset(),
        modules_root: Path = Path("/lib/modules"),
        compression: str = "none",
    ) -> None:
        if compression not in COMPRESSIONS:
            raise choices_error("compression", compression, COMPRESSIONS)
        self.compression = compression
        self.cache_root = default_cache_root() if cache_root is None else cache_root
        self.agent = paths.agent_binary() if agent is None else agent
        self.tools: Mapping[str, ImageTool] = dict(DEFAULT_TOOLS if tools is None else tools)
        missing = sorted(MANDATORY_TOOLS - self.tools.keys())
        if missing:
            raise UserError(f"tools must include {', '.join(missing)}")
        for name in sorted(set(optional)):
            if name not in self.tools:
                raise choices_error("optional tool", name, sorted(self.tools))
            if name in MANDATORY_TOOLS:
                raise UserError(f"{name} cannot be optional: the guest does not work without it")
        self.optional = frozenset(optional)
        self.modules_root = modules_root

    def plan(
        self,
        kernel_release: str | None = None,
        modules: Sequence[str] | None = None,
        extra_files: Mapping[str, Path] = _NO_EXTRA_FILES,
    ) -> ImagePlan:
        """What build() would pack, without packing it."""
        return make_plan(
            agent=self.agent,
            tools=self.tools,
            optional=self.optional,
            modules_root=self.modules_root,
            kernel_release=kernel_release,
            modules=modules,
            extra_files=extra_files,
        )

    def build(
        self,
        kernel_release: str | None = None,
        modules: Sequence[str] | None = None,
        extra_files: Mapping[str, Path] = _NO_EXTRA_FILES,
    ) -> GuestImage:
        """The image for these inputs: from the cache when present and intact, else built.

        `kernel_release` adds that release's modules (`modules`, default DEFAULT_MODULES, with
        their dependencies) and /etc/vmbisect/modules; `extra_files` maps image paths to host files.
        """
        plan = self.plan(kernel_release, modules, extra_files)
        digest = plan.digest()
        image_path = self.cache_root / f"{digest}{_SUFFIX[self.compression]}"
        manifest_path = self.cache_root / f"{digest}-{self.compression}.json"
        cached = _cached(image_path, manifest_path, digest)
        if cached is not None:
            sha256, size = cached
            return _image(plan, digest, image_path, manifest_path, sha256, size, from_cache=True)
        try:
            self.cache_root.mkdir(parents=True, exist_ok=True)
            sha256, size = _publish_archive(plan, image_path, self.compression)
            manifest = _manifest(plan, digest, image_path, sha256, size)
            _publish_bytes(json.dumps(manifest, indent=2).encode() + b"\n", manifest_path)
        except OSError as err:
            raise InfraError(f"cannot write guest image in {self.cache_root}: {err}") from err
        return _image(plan, digest, image_path, manifest_path, sha256, size, from_cache=False)


def _image(
    plan: ImagePlan,
    digest: str,
    image_path: Path,
    manifest_path: Path,
    sha256: str,
    size: int,
    *,
    from_cache: bool,
) -> GuestImage:
    return GuestImage(
        path=image_path,
        manifest_path=manifest_path,
        sha256=sha256,
        inputs_digest=digest,
        size=size,
        kernel_release=plan.kernel_release,
        modules=plan.modules,
        builtin_modules=plan.builtin_modules,
        notes=plan.notes,
        from_cache=from_cache,
    )


def _file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _cached(image_path: Path, manifest_path: Path, digest: str) -> tuple[str, int] | None:
    """(sha256, size) of the cached image if its manifest matches and the file is intact."""
    try:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != FORMAT_VERSION or manifest.get("inputs_digest") != digest:
            return None
        size = image_path.stat().st_size
        if size != manifest["size"] or _file_sha256(image_path) != manifest["sha256"]:
            return None
        return str(manifest["sha256"]), size
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _manifest(plan: ImagePlan, digest: str, image_path: Path, sha256: str, size: int) -> dict[str, object]:
    return {
        "format": FORMAT_VERSION,
        "inputs_digest": digest,
        "image": image_path.name,
        "sha256": sha256,
        "size": size,
        "kernel_release": plan.kernel_release,
        "modules": list(plan.modules),
        "builtin_modules": list(plan.builtin_modules),
        "notes": list(plan.notes),
        "inputs": plan.inputs(),
    }


def _entries(plan: ImagePlan) -> Iterator[Entry]:
    for node in plan.nodes:
        yield Entry(node.path, node.kind, node.mode, _content(node), node.target, node.rdev)


def _content(node: Node) -> bytes | Path:
    if isinstance(node.source, Blob):
        return node.source.data
    if isinstance(node.source, HostFile):
        if node.source.codec:
            return modfiles.decompress(node.source.path, node.source.codec)
        return node.source.path
    return b""


def _temp_in(directory: Path, suffix: str) -> tuple[int, Path]:
    """A new temp file beside the final one, readable by all (QEMU may run as another user)."""
    fd, name = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=suffix)
    os.fchmod(fd, 0o644)
    return fd, Path(name)


def _commit(temp: Path, final: Path) -> None:
    os.replace(temp, final)
    dir_fd = os.open(final.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _publish_archive(plan: ImagePlan, final: Path, compression: str) -> tuple[str, int]:
    """Write the cpio archive to a temp file beside `final`, fsync, rename into place."""
    fd, temp = _temp_in(final.parent, _SUFFIX[compression])
    try:
        with os.fdopen(fd, "wb") as raw:
            if compression == "gzip":
                with gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=raw, mtime=0) as gz:
                    write_archive(_entries(plan), gz)
            else:
                write_archive(_entries(plan), raw)
            raw.flush()
            os.fsync(raw.fileno())
        sha256, size = _file_sha256(temp), temp.stat().st_size
        _commit(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return sha256, size


def _publish_bytes(data: bytes, final: Path) -> None:
    fd, temp = _temp_in(final.parent, final.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        _commit(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
