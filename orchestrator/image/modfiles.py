"""Host side of kernel modules: read a release's index files, decompress module files."""

from __future__ import annotations

import gzip
import lzma
import shutil
import subprocess
from pathlib import Path

from orchestrator.errors import InfraError, UserError
from orchestrator.image.modules import (
    ModuleIndex,
    parse_modules_alias,
    parse_modules_builtin,
    parse_modules_dep,
    parse_modules_softdep,
)


def installed_releases(modules_root: Path) -> tuple[str, ...]:
    """Kernel releases below `modules_root` that have a modules.dep, sorted by name."""
    if not modules_root.is_dir():
        return ()
    return tuple(sorted(p.name for p in modules_root.iterdir() if (p / "modules.dep").is_file()))


def release_dir(modules_root: Path, release: str) -> Path:
    if not release or "/" in release or release in (".", ".."):
        raise UserError(f"invalid kernel release {release!r}")
    path = modules_root / release
    if not path.is_dir():
        raise UserError(
            f"kernel release {release} has no modules in {path}; "
            "install its modules (for Debian kernels: the linux-image package of that release)"
        )
    return path


def _read_optional(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def load_index(modules_root: Path, release: str) -> ModuleIndex:
    """The module index of `release`; modules.dep is required, the other files optional."""
    base = release_dir(modules_root, release)
    dep = base / "modules.dep"
    if not dep.is_file():
        raise InfraError(f"{dep} is missing; run `depmod {release}`")
    files, deps = parse_modules_dep(dep.read_text(), str(dep))
    return ModuleIndex(
        files=files,
        deps=deps,
        builtin=parse_modules_builtin(_read_optional(base / "modules.builtin")),
        softdeps=parse_modules_softdep(
            _read_optional(base / "modules.softdep"), str(base / "modules.softdep")
        ),
        aliases=parse_modules_alias(
            _read_optional(base / "modules.alias"), str(base / "modules.alias")
        ),
    )


def require_codec(codec: str) -> None:
    """InfraError now, rather than halfway through a build, if `codec` cannot be decompressed."""
    if codec == "zst" and shutil.which("zstd") is None:
        raise InfraError(
            "zstd-compressed kernel modules need the zstd command; install the Debian package zstd"
        )


def decompress(path: Path, codec: str) -> bytes:
    """Content of a module file; `codec` is "", "xz", "gz" or "zst"."""
    try:
        if codec == "xz":
            return lzma.decompress(path.read_bytes())
        if codec == "gz":
            return gzip.decompress(path.read_bytes())
    except (lzma.LZMAError, OSError, EOFError) as err:
        raise InfraError(f"cannot decompress {path}: {err}") from err
    if codec == "zst":
        require_codec(codec)
        try:
            done = subprocess.run(
                ["zstd", "-d", "-c", "-q", "--", str(path)],
                capture_output=True,
                check=False,
                timeout=120,
            )
        except subprocess.TimeoutExpired as err:
            raise InfraError(f"zstd did not decompress {path} within 120 s") from err
        if done.returncode != 0:
            raise InfraError(f"cannot decompress {path}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout
    return path.read_bytes()
