"""`vmbisect boot`: boot a kernel in a guest and run one command through the agent."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from orchestrator.commands.argtypes import existing_file, seconds
from orchestrator.commands.labopts import add_lab_options, lab_from_args
from orchestrator.commands.vmopts import add_vm_options, spec_from_args


def add_parser(sub: Any) -> None:
    boot = sub.add_parser("boot", help="boot a kernel in a guest and run one command through the agent")
    boot.add_argument("--kernel", required=True, type=existing_file, help="bzImage / vmlinuz to boot")
    boot.add_argument("--initrd-modules-from", metavar="RELEASE",
                      help="put this host kernel release's driver modules into the initramfs")
    add_vm_options(boot)
    add_lab_options(boot)
    boot.add_argument("--append", default="", help="extra kernel command line")
    boot.add_argument("--console", action="store_true", help="print the guest's serial console afterwards")
    boot.add_argument("--timeout", type=seconds(1), default=120.0, help="seconds to wait for the agent (default 120)")
    boot.add_argument("--cmd-timeout", type=seconds(0), default=0.0, help="seconds the command may run (0: no limit)")
    boot.add_argument("cmd", nargs="+", metavar="CMD", help="command and arguments to run in the guest (after --)")


def run(a: argparse.Namespace) -> int:
    from orchestrator.hosts.push import file_sha256
    from orchestrator.ports import KernelArtifact

    spec = spec_from_args(a)
    lab = lab_from_args(a)
    kernel = KernelArtifact(a.kernel, file_sha256(a.kernel), a.initrd_modules_from)
    from orchestrator.wiring import open_pool

    pool = open_pool(lab)
    console_log: Path | None = None
    try:
        with pool.guest(spec, kernel, a.host, a.accel, a.append, a.timeout) as guest:
            console_log = guest.console_log
            result = guest.exec(a.cmd, timeout_s=a.cmd_timeout)
            sys.stdout.buffer.write(result.stdout)
            sys.stdout.flush()
            sys.stderr.buffer.write(result.stderr)
            hello = guest.hello
            print(
                f"vmbisect: host {guest.host}, kernel {hello.get('kernel_release')} accel {guest.accel}, "
                f"{hello.get('cpus_online')} vCPUs, clocksource {hello.get('clocksource') or 'not said'}, "
                f"{len(hello.get('block_devices') or [])} block devices; agent hello {guest.boot_seconds:.2f} s "
                f"after domain start; command exit {result.exit_code} in {result.duration_s:.2f} s"
                + (" (timed out)" if result.timed_out else ""),
                file=sys.stderr,
            )
            if result.stall:
                print("vmbisect: the guest when the command was stopped:\n  " + "\n  ".join(result.stall),
                      file=sys.stderr)
    finally:
        pool.close()
        if a.console and console_log is not None and console_log.exists():
            sys.stderr.write(console_log.read_text(errors="replace"))
    return result.exit_code if result.exit_code >= 0 else 128
