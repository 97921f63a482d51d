"""Content-addressed kernel image store with an alias index and LRU eviction.

Layout under `root` (default ~/.cache/vmbisect/kernels):
  <key>/bzImage, <key>/modules/ (lib/modules/<release>/...), <key>/config, <key>/build.log,
  <key>/manifest.json, <key>/last-used (its mtime is the last use)
  aliases/<digest>   text: the key a (tree id, recipe digest, compiler) alias points at
  names/<name>       text: the key a registered name points at
Entries appear by renaming a finished staging directory, so a reader never sees half of one.
Built entries are keyed by sha256(tree id, .config sha256, compiler); registered ones by the
bzImage's sha256.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import paths
from orchestrator.errors import InfraError, UserError

DEFAULT_MAX_BYTES = 20 * 1024**3
MANIFEST_FORMAT = 1
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_HEX = re.compile(r"^[0-9a-f]{4,64}$")
# how a kernel image was obtained (KernelImage.how)
CACHED, INCREMENTAL, CCACHE, COLD = "cached", "incremental", "ccache", "cold"


@dataclass(frozen=True)
class KernelImage:
    """A kernel in the store. `modules_dir` holds lib/modules/<release> (None: no modules)."""

    key: str
    path: Path
    sha256: str
    size: int
    release: str | None
    modules_dir: Path | None
    manifest: dict[str, Any]
    from_cache: bool
    duration_s: float

    @property
    def manifest_path(self) -> Path:
        return self.path.parent / "manifest.json"

    @property
    def how(self) -> str:
        """How this image was obtained: CACHED, or how its build started (INCREMENTAL, CCACHE,
        COLD; "" for an entry published before the builder recorded it)."""
        return CACHED if self.from_cache else str(self.manifest.get("how", ""))


def cache_key(tree_id: str, config_sha256: str, compiler: str) -> str:
    doc = json.dumps({"tree": tree_id, "config_sha256": config_sha256, "compiler": compiler}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


def alias_key(tree_id: str, recipe_digest: str, compiler: str) -> str:
    doc = json.dumps({"tree": tree_id, "recipe": recipe_digest, "compiler": compiler}, sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class KernelStore:
    def __init__(self, root: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = paths.cache_dir() / "kernels" if root is None else root
        self.max_bytes = max_bytes

    def _entry(self, key: str, from_cache: bool, duration_s: float | None = None) -> KernelImage | None:
        entry = self.root / key
        try:
            manifest = json.loads((entry / "manifest.json").read_text())
        except (OSError, ValueError):
            return None
        out = manifest["outputs"]
        modules = entry / out["modules_dir"] if out.get("modules_dir") else None
        return KernelImage(key, entry / "bzImage", out["bzimage_sha256"], out["bzimage_size"], out.get("release"),
                           modules, manifest, from_cache,
                           manifest.get("duration_s", 0.0) if duration_s is None else duration_s)

    def touch(self, key: str) -> None:
        (self.root / key / "last-used").touch()

    def get(self, key: str, duration_s: float | None = None) -> KernelImage | None:
        """The entry `key` as a cache hit (its last use recorded), or None."""
        image = self._entry(key, from_cache=True, duration_s=duration_s)
        if image is not None:
            self.touch(key)
        return image

    def get_alias(self, alias: str) -> KernelImage | None:
        try:
            key = (self.root / "aliases" / alias).read_text().strip()
        except OSError:
            return None
        return self.get(key)

    def set_alias(self, alias: str, key: str) -> None:
        _write_atomic(self.root / "aliases" / alias, key + "\n")

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A scratch directory on the store's filesystem; removed unless published."""
        self.root.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".stage-", dir=self.root))
        try:
            yield stage
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def publish(self, key: str, stage: Path, manifest: dict[str, Any]) -> KernelImage:
        """Move a staging directory holding bzImage (and modules/) into place as `key`."""
        manifest = {"format": MANIFEST_FORMAT, **manifest}
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        (stage / "last-used").touch()
        try:
            os.rename(stage, self.root / key)
        except OSError:
            if not (self.root / key / "manifest.json").is_file():
                raise InfraError(f"could not publish kernel {key[:12]} into {self.root}") from None
        self.evict(keep=key)
        image = self._entry(key, from_cache=False)
        assert image is not None
        return image

    def entries(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if not p.name.startswith(".") and (p / "manifest.json").is_file())

    def evict(self, keep: str = "") -> list[str]:
        """Remove least recently used entries until the store is under max_bytes."""
        sizes = {key: tree_size(self.root / key) for key in self.entries()}
        total = sum(sizes.values())
        last = {key: (self.root / key / "last-used").stat().st_mtime for key in sizes}
        removed = []
        for key in sorted(sizes, key=lambda k: last[k]):
            if total <= self.max_bytes:
                break
            if key == keep:
                continue
            shutil.rmtree(self.root / key, ignore_errors=True)
            total -= sizes[key]
            removed.append(key)
        return removed

    def register(self, bzimage: Path, modules: Path | None = None, name: str | None = None,
                 release: str | None = None) -> KernelImage:
        """Copy a prebuilt bzImage (and a lib/modules/<release> directory) into the store."""
        if not bzimage.is_file():
            raise UserError(f"register: {bzimage} is not a file")
        if modules is not None and not modules.is_dir():
            raise UserError(f"modules: {modules} is not a directory")
        if name is not None and (not _NAME.match(name) or _HEX.match(name)):
            raise UserError(f"name: {name!r} must be letters, digits, _.+- and not look like a sha256 prefix")
        started = time.monotonic()
        digest = sha256_file(bzimage)
        if self._entry(digest, from_cache=True) is None:
            with self.staging() as stage:
                shutil.copyfile(bzimage, stage / "bzImage")
                modules_rel = None
                if modules is not None:
                    release = release or modules.name
                    modules_rel = f"modules/lib/modules/{release}"
                    shutil.copytree(modules, stage / modules_rel, symlinks=True)
                self.publish(digest, stage, {
                    "kind": "registered",
                    "inputs": {"bzimage": str(bzimage.resolve()),
                               "modules": str(modules.resolve()) if modules else None},
                    "outputs": {"bzimage_sha256": digest, "bzimage_size": bzimage.stat().st_size,
                                "release": release, "modules_dir": modules_rel},
                    "duration_s": round(time.monotonic() - started, 3),
                    "created": time.time(),
                })
        if name is not None:
            _write_atomic(self.root / "names" / name, digest + "\n")
        image = self.get(digest, duration_s=time.monotonic() - started)
        assert image is not None
        return image

    def resolve(self, ref: str) -> KernelImage:
        """A stored kernel by registered name, entry key prefix or bzImage sha256 prefix."""
        name_file = self.root / "names" / ref
        if _NAME.match(ref) and name_file.is_file():
            image = self.get(name_file.read_text().strip())
            if image is not None:
                return image
        if not _HEX.match(ref):
            raise UserError(f"kernel: no registered name {ref!r} and not a sha256 prefix (4-64 hex digits)")
        matches = {}
        for key in self.entries():
            image = self._entry(key, from_cache=True)
            if image is not None and (key.startswith(ref) or image.sha256.startswith(ref)):
                matches[key] = image
        if len(matches) != 1:
            what = "no stored kernel" if not matches else f"{len(matches)} stored kernels"
            raise UserError(f"kernel: {what} match {ref!r}")
        key = next(iter(matches))
        self.touch(key)
        return matches[key]
