"""Config recipes: a base, named or file fragments, extra CONFIG_ lines and a compiler.

Parsed from the repeated `--config` items (docs/kernel-builds.md):
  tinyconfig | defconfig      base (first item only; tinyconfig when no base is given)
  base=PATH                   a complete .config as the base (first item only)
  NAME                        kconfigs/NAME.config shipped with vmbisect
  PATH                        a fragment file
  CONFIG_X=VALUE              one extra line (CONFIG_X=n: not set)
  cc=COMPILER                 the compiler, e.g. cc=gcc-10 (default gcc)
No items means the guest base recipe: tinyconfig + guest-base.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.kbuild.kconfig import requested_options
from orchestrator.paths import REPO_ROOT

KCONFIGS_DIR = REPO_ROOT / "kconfigs"
BASES = ("tinyconfig", "defconfig")
DEFAULT_ITEMS = ("guest-base",)
DEFAULT_CC = "gcc"
RECIPE_FORMAT = 1
_EXTRA = re.compile(r"^CONFIG_[A-Za-z0-9_]+=\S.*$")
_CC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class Fragment:
    name: str
    text: str


@dataclass(frozen=True)
class Recipe:
    """`base` is "tinyconfig", "defconfig" or "file" (then `base_text` is the .config)."""

    base: str = "tinyconfig"
    base_text: str = ""
    fragments: tuple[Fragment, ...] = ()
    extras: tuple[str, ...] = ()
    cc: str = DEFAULT_CC

    def digest(self) -> str:
        doc = {
            "format": RECIPE_FORMAT,
            "base": self.base,
            "base_sha256": hashlib.sha256(self.base_text.encode()).hexdigest(),
            "fragments": [[f.name, hashlib.sha256(f.text.encode()).hexdigest()] for f in self.fragments],
            "extras": list(self.extras),
            "cc": self.cc,
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def extras_text(self) -> str:
        return "".join(line + "\n" for line in self.extras)

    def wanted(self) -> dict[str, str]:
        """Every option the fragments and extras ask for (the base is taken as it comes)."""
        return requested_options([f.text for f in self.fragments] + [self.extras_text()])

    def describe(self) -> list[str]:
        items = [self.base] if self.base != "file" else ["base=<file>"]
        items += [f.name for f in self.fragments] + list(self.extras)
        return items + ([f"cc={self.cc}"] if self.cc != DEFAULT_CC else [])


def fragment_names(kconfigs_dir: Path = KCONFIGS_DIR) -> list[str]:
    return sorted(p.stem for p in kconfigs_dir.glob("*.config"))


def _unknown(item: str, kconfigs_dir: Path) -> UserError:
    names = ", ".join(fragment_names(kconfigs_dir))
    return UserError(f"config: unknown item {item!r}; valid choices: tinyconfig, defconfig, base=PATH, "
                     f"cc=COMPILER, CONFIG_X=VALUE, a fragment name ({names}) or a fragment file path")


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise UserError(f"config: cannot read {what} {path}: {exc.strerror}") from exc
    except ValueError as exc:  # not UTF-8
        raise UserError(f"config: cannot read {what} {path}: {exc}") from None


def _is_file(path: Path) -> bool:
    """False, not an exception, for names the file system refuses (too long, a NUL)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def parse_recipe(items: Sequence[str], kconfigs_dir: Path = KCONFIGS_DIR) -> Recipe:
    items = list(items) or list(DEFAULT_ITEMS)
    base, base_text, cc = "tinyconfig", "", DEFAULT_CC
    fragments: list[Fragment] = []
    extras: list[str] = []
    for index, item in enumerate(items):
        is_base = item in BASES or item.startswith("base=")
        if is_base and index > 0:
            raise UserError(f"config: base {item!r} must be the first --config item")
        if item in BASES:
            base = item
        elif item.startswith("base="):
            base, base_text = "file", _read(Path(item.removeprefix("base=")), "base config")
        elif item.startswith("cc="):
            cc = item.removeprefix("cc=")
            if not _CC.match(cc):
                raise UserError(f"config: cc must be a compiler command name like gcc-10, got {cc!r}")
        elif _EXTRA.match(item):
            extras.append(item)
        elif "/" not in item and _is_file(kconfigs_dir / f"{item}.config"):
            fragments.append(Fragment(item, _read(kconfigs_dir / f"{item}.config", "fragment")))
        elif _is_file(Path(item)):
            fragments.append(Fragment(str(Path(item).resolve()), _read(Path(item), "fragment")))
        else:
            raise _unknown(item, kconfigs_dir)
    return Recipe(base, base_text, tuple(fragments), tuple(extras), cc)
