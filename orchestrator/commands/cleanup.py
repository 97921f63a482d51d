"""`vmbisect cleanup`: destroy guests a crashed controller left behind."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    clean = sub.add_parser("cleanup", help="destroy vmbisect guests left by a crashed controller")
    clean.add_argument("--all", action="store_true", help="destroy every vmbisect guest, running controllers' too")


def run(a: argparse.Namespace) -> int:
    from orchestrator.backends.libvirt_vm import LibvirtProvider

    provider = LibvirtProvider(a.uri)
    removed = provider.cleanup_leftovers(everything=a.all)
    print(f"removed {len(removed)} guest(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0
