"""Byte-for-byte snapshots of a directory tree, to prove nothing in it changed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def snapshot(root: Path) -> dict[str, str]:
    """Every file, symlink and directory under root (the .git directory included) with its content hash and mode."""
    found = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            st = path.lstat()
            if path.is_symlink():
                found[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                found[str(path)] = f"{st.st_mode:o}:{st.st_mtime_ns}:" + hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[str(path)] = f"dir:{st.st_mode:o}"
    return found
