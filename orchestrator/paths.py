"""Where vmbisect keeps its state: data (database, reports), cache (images), runtime (sockets)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _base(env: str, xdg: str, default: str) -> Path:
    if os.environ.get(env):
        return Path(os.environ[env])
    root = os.environ.get(xdg) or str(Path.home() / default)
    return Path(root) / "vmbisect"


def data_dir() -> Path:
    return _base("VMBISECT_DATA_DIR", "XDG_DATA_HOME", ".local/share")


def cache_dir() -> Path:
    return _base("VMBISECT_CACHE_DIR", "XDG_CACHE_HOME", ".cache")


def run_dir() -> Path:
    """Per-VM working files (console logs, agent sockets, disk images unless told otherwise)."""
    if os.environ.get("VMBISECT_RUN_DIR"):
        return Path(os.environ["VMBISECT_RUN_DIR"])
    return data_dir() / "run"


def agent_binary() -> Path:
    if os.environ.get("VMBISECT_AGENT"):
        return Path(os.environ["VMBISECT_AGENT"])
    return REPO_ROOT / "build" / "vmbisect-agent"
