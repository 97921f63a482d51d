"""`vmbisect doctor`: probe every part of the host and print what works."""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.errors import VmbisectError


def add_parser(sub: Any) -> None:
    doc = sub.add_parser("doctor", help="probe every part of the host and print what works")
    doc.add_argument("--reprobe", action="store_true", help="probe KVM again instead of using the cached verdict")


def run(a: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from orchestrator.backends.factory import real_launcher
    from orchestrator.doctor import Check, boot_check, run_checks

    def guest_checks() -> list[Check]:
        try:
            launcher = real_launcher(a.uri)
            choice = launcher.choose_accel("auto", reprobe=a.reprobe)
        except VmbisectError as exc:
            return [Check("accelerator", False, str(exc), "make setup")]
        return [Check("accelerator", True, f"{choice.accel}: {choice.reason}"), boot_check(launcher, choice.accel)]

    checks = run_checks(a.uri, guest_checks)
    table = Table(title="vmbisect doctor")
    for col in ("part", "status", "detail"):
        table.add_column(col)
    for c in checks:
        status = "ok" if c.ok else ("MISSING" if c.essential else "warning")
        table.add_row(c.name, status, c.detail)
    console = Console()
    console.print(table)
    broken = [c for c in checks if not c.ok and c.essential]
    for c in checks:
        if not c.ok:
            console.print(f"{c.name}: fix with: {c.fix}", markup=False)
    return 1 if broken else 0
