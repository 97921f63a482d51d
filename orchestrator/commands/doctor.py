"""`vmbisect doctor`: probe every part of the host (or every host of a lab) and print what works."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from orchestrator.commands.listing import add_format_option, write_table
from orchestrator.errors import VmbisectError


def add_parser(sub: Any) -> None:
    doc = sub.add_parser("doctor", help="probe every part of the host (or of each lab host) and print what works")
    doc.add_argument("--reprobe", action="store_true", help="probe KVM again instead of using the cached verdict")
    doc.add_argument("--lab", type=Path, metavar="FILE", help="probe every host of this lab file (docs/hosts.md)")
    add_format_option(doc, ("table", "json"))


def run(a: argparse.Namespace) -> int:
    from orchestrator.doctor import Check, boot_check, remote_checks, run_checks
    from orchestrator.hosts.labfile import Host, load_lab, local_lab
    from orchestrator.hosts.launchers import host_launcher

    lab = load_lab(a.lab) if a.lab is not None else local_lab(a.uri)

    def local_checks(host: Host) -> list[Check]:
        def guest_checks() -> list[Check]:
            try:
                launcher = host_launcher(host)
                choice = launcher.choose_accel("auto", reprobe=a.reprobe)
            except VmbisectError as exc:
                return [Check("accelerator", False, str(exc), "make setup")]
            try:
                return [Check("accelerator", True, f"{choice.accel}: {choice.reason}"),
                        boot_check(launcher, choice.accel)]
            finally:
                launcher.close()

        return run_checks(host.uri, guest_checks)

    results = [(h.name, c) for h in lab.hosts
               for c in (remote_checks(h, host_launcher, a.reprobe) if h.remote else local_checks(h))]
    records = [{"host": host, "part": c.name, "status": "ok" if c.ok else ("MISSING" if c.essential else "warning"),
                "detail": c.detail, "fix": "" if c.ok else c.fix} for host, c in results]
    columns = (["host"] if a.lab else []) + ["part", "status", "detail"]
    write_table("vmbisect doctor" + (f" --lab {a.lab}" if a.lab else ""), columns, records, a.format)
    broken = [c for _h, c in results if not c.ok and c.essential]
    if a.format == "table":
        for host, c in results:
            if not c.ok:
                print(f"{host + ': ' if a.lab else ''}{c.name}: fix with: {c.fix}")
    return 1 if broken else 0
