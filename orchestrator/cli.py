"""The `vmbisect` command: the only place that owns the console and exits the process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from orchestrator.errors import KernelFault, UserError, VmbisectError
from orchestrator.vm.spec import BACKINGS, CACHE_MODES, AIO_MODES, DiskSpec, MACHINES, VmSpec


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("vmbisect").strip()
        raise UserError(f"{command}: {message}" if command else message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="vmbisect", description="Kernel performance bisection in libvirt/QEMU guests.")
    p.add_argument("--uri", default="qemu:///system", help="libvirt URI (default qemu:///system)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    doc = sub.add_parser("doctor", help="probe every part of the host and print what works")
    doc.add_argument("--reprobe", action="store_true", help="probe KVM again instead of using the cached verdict")

    boot = sub.add_parser("boot", help="boot a kernel in a guest and run one command through the agent")
    boot.add_argument("--kernel", required=True, type=Path, help="bzImage / vmlinuz to boot")
    boot.add_argument("--initrd-modules-from", metavar="RELEASE",
                      help="put this host kernel release's driver modules into the initramfs")
    _vm_options(boot)
    boot.add_argument("--append", default="", help="extra kernel command line")
    boot.add_argument("--console", action="store_true", help="print the guest's serial console afterwards")
    boot.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the agent (default 120)")
    boot.add_argument("--cmd-timeout", type=float, default=0.0, help="seconds the command may run (0: no limit)")
    boot.add_argument("cmd", nargs="+", metavar="CMD", help="command and arguments to run in the guest (after --)")

    clean = sub.add_parser("cleanup", help="destroy vmbisect guests left by a crashed controller")
    clean.add_argument("--all", action="store_true", help="destroy every vmbisect guest, running controllers' too")
    return p


def _vm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vcpus", type=int, default=2)
    p.add_argument("--memory", type=int, default=1024, metavar="MiB")
    p.add_argument("--machine", default="pc", help=f"one of {', '.join(MACHINES)}")
    p.add_argument("--disks", type=int, default=0, help="number of data disks")
    p.add_argument("--disk-size", type=int, default=1024, metavar="MiB")
    p.add_argument("--controller", default="virtio-scsi",
                   help="virtio-blk, virtio-scsi, lsisas1068, lsisas1078 or lsilogic")
    p.add_argument("--backing", default="raw", help=f"one of {', '.join(BACKINGS)}")
    p.add_argument("--disk-dir", type=Path, help="directory for disk files (e.g. a tmpfs)")
    p.add_argument("--cache", default="none", help=f"one of {', '.join(CACHE_MODES)}")
    p.add_argument("--aio", default="threads", help=f"one of {', '.join(AIO_MODES)}")
    p.add_argument("--queues", type=int, default=0)
    p.add_argument("--iothreads", type=int, default=0)
    p.add_argument("--accel", default="auto", help="auto (probe), kvm or tcg")


def _spec(a: argparse.Namespace) -> VmSpec:
    disks = DiskSpec(count=a.disks, size_mib=a.disk_size, controller=a.controller, backing=a.backing,
                     directory=a.disk_dir, cache=a.cache, aio=a.aio, queues=a.queues, iothreads=a.iothreads)
    return VmSpec(vcpus=a.vcpus, memory_mib=a.memory, machine=a.machine, disks=disks).validate()


def cmd_doctor(a: argparse.Namespace) -> int:
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


def cmd_boot(a: argparse.Namespace) -> int:
    from orchestrator.backends.factory import real_launcher

    spec = _spec(a)
    launcher = real_launcher(a.uri)
    choice = launcher.choose_accel(a.accel)
    console_log: Path | None = None
    try:
        with launcher.boot(spec, a.kernel, choice.accel, a.initrd_modules_from, a.append, a.timeout) as guest:
            console_log = guest.console_log
            result = guest.exec(a.cmd, timeout_s=a.cmd_timeout)
            sys.stdout.buffer.write(result.stdout)
            sys.stdout.flush()
            sys.stderr.buffer.write(result.stderr)
            hello = guest.hello
            print(
                f"vmbisect: kernel {hello.get('kernel_release')} accel {guest.accel}, {hello.get('cpus_online')} vCPUs, "
                f"{len(hello.get('block_devices') or [])} block devices; agent hello {guest.boot_seconds:.2f} s "
                f"after domain start; command exit {result.exit_code} in {result.duration_s:.2f} s"
                + (" (timed out)" if result.timed_out else ""),
                file=sys.stderr,
            )
    finally:
        if a.console and console_log is not None and console_log.exists():
            sys.stderr.write(console_log.read_text(errors="replace"))
    return result.exit_code if result.exit_code >= 0 else 128


def cmd_cleanup(a: argparse.Namespace) -> int:
    from orchestrator.backends.libvirt_vm import LibvirtProvider

    provider = LibvirtProvider(a.uri)
    removed = provider.cleanup_leftovers(everything=a.all)
    print(f"removed {len(removed)} guest(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0


COMMANDS = {"doctor": cmd_doctor, "boot": cmd_boot, "cleanup": cmd_cleanup}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except KernelFault as exc:
        print(f"vmbisect: {exc}", file=sys.stderr)
        if exc.detail:
            print("--- console tail ---\n" + exc.detail, file=sys.stderr)
        return exc.exit_code
    except VmbisectError as exc:
        print(f"vmbisect: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("vmbisect: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
