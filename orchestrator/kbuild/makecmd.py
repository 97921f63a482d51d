"""Pure: the make / merge_config.sh command lines and environment of a kernel build."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

# Same inputs, same bzImage bytes: no wall clock, user or host name in the image.
REPRODUCIBLE_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 1970",
    "KBUILD_BUILD_USER": "vmbisect",
    "KBUILD_BUILD_HOST": "vmbisect",
    "KBUILD_BUILD_VERSION": "1",
    "LC_ALL": "C",
    "TZ": "UTC",
}
KVM_GUEST_FRAGMENT = "kernel/configs/kvm_guest.config"
IMAGE = "arch/x86/boot/bzImage"


def compiler_vars(cc: str, ccache: bool) -> list[str]:
    """CC (through ccache when available) and HOSTCC: old trees' host tools need the old compiler too."""
    return [f"CC=ccache {cc}" if ccache else f"CC={cc}", f"HOSTCC={cc}"]


def make_argv(src: Path, build_dir: Path, targets: Sequence[str], cc: str, ccache: bool,
              jobs: int = 1, extra: Sequence[str] = ()) -> list[str]:
    return (["make", "-C", str(src), f"O={build_dir}", f"-j{jobs}"] + compiler_vars(cc, ccache)
            + list(extra) + list(targets))


def merge_argv(src: Path, build_dir: Path, fragments: Sequence[Path]) -> list[str]:
    """merge_config.sh -m: merge only (no make); olddefconfig resolves the result afterwards."""
    return [str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(build_dir),
            str(build_dir / ".config")] + [str(f) for f in fragments]


def build_env(base: Mapping[str, str], ccache_dir: Path | None, ccache_basedir: Path | None,
              ccache_max: str) -> dict[str, str]:
    env = {k: v for k, v in base.items() if not k.startswith(("KBUILD_", "CCACHE_"))}
    env.update(REPRODUCIBLE_ENV)
    if ccache_dir is not None:
        env["CCACHE_DIR"] = str(ccache_dir)
        env["CCACHE_MAXSIZE"] = ccache_max
        # Relative paths and no working-directory hash: a fresh build directory still hits.
        env["CCACHE_NOHASHDIR"] = "1"
        if ccache_basedir is not None:
            env["CCACHE_BASEDIR"] = str(ccache_basedir)
    return env


def build_targets(modules: bool) -> list[str]:
    return ["bzImage", "modules"] if modules else ["bzImage"]
