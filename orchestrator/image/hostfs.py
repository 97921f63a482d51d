"""Copy host files into an ImageTree at the paths the host has them.

Every symlink on the way is mirrored: the directory symlinks of a merged /usr (/lib -> usr/lib),
library symlinks (libnuma.so.1 -> libnuma.so.1.0.0) and the loader's absolute symlink
(/lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2). Their targets are
copied too, so each path resolves inside the guest just as it does on the host.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from orchestrator.errors import InfraError
from orchestrator.image.tree import HostFile, ImageTree


class HostCopier:
    def __init__(self, tree: ImageTree) -> None:
        self.tree = tree
        self._hashes: dict[Path, str] = {}
        self._links: set[str] = set()

    def sha256(self, path: Path) -> str:
        if path not in self._hashes:
            try:
                with path.open("rb") as f:
                    self._hashes[path] = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError as err:
                raise InfraError(f"cannot read {path}: {err}") from err
        return self._hashes[path]

    def host_file(self, path: Path, codec: str = "") -> HostFile:
        return HostFile(path, self.sha256(path), codec)

    def copy(self, path: str) -> None:
        """Put host file `path` (absolute) into the image at the same path."""
        self._mirror_symlinks(path)
        real = Path(os.path.realpath(path))
        if not real.is_file():
            raise InfraError(f"{path} is not a regular file on this host")
        self.copy_as(str(real), real)

    def copy_as(self, image_path: str, host: Path, mode: int | None = None) -> None:
        """Put the content of `host` at `image_path`; permissions from the host unless `mode`."""
        try:
            host_mode = stat.S_IMODE(host.stat().st_mode)
        except OSError as err:
            raise InfraError(f"cannot read {host}: {err}") from err
        self.tree.add_file(image_path, self.host_file(host), host_mode & 0o777 if mode is None else mode)

    def _mirror_symlinks(self, path: str) -> None:
        pure = PurePosixPath(path)
        for prefix in [*reversed(pure.parents[:-1]), pure]:
            if os.path.islink(prefix):
                self._mirror_link(str(prefix))

    def _mirror_link(self, path: str) -> None:
        if path in self._links:
            return
        self._links.add(path)
        target = os.readlink(path)
        self.tree.add_symlink(path, target)
        followed = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(path)), target))
        self._mirror_symlinks(followed)
