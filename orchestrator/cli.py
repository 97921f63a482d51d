"""The `vmbisect` command: the only place that owns the console and exits the process."""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import NoReturn, Sequence

from orchestrator.commands import (
    bisect,
    boot,
    build,
    cleanup,
    compare,
    demo,
    doctor,
    measure,
    report,
    resume,
    status,
    verify,
)
from orchestrator.errors import KernelFault, UserError, VmbisectError, host_fault

# Each module has add_parser(subparsers) and run(args) -> exit code.
COMMANDS: dict[str, ModuleType] = {
    "doctor": doctor, "boot": boot, "cleanup": cleanup, "build": build, "measure": measure,
    "bisect": bisect, "compare": compare, "resume": resume, "status": status, "report": report, "demo": demo,
    "verify": verify,
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("vmbisect").strip()
        raise UserError(f"{command}: {message}" if command else message)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="vmbisect", description="Kernel performance bisection in libvirt/QEMU guests.")
    p.add_argument("--uri", default="qemu:///system", help="libvirt URI (default qemu:///system)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in COMMANDS.values():
        module.add_parser(sub)
    return p


def one_line(message: str) -> str:
    """A message as one printable line whatever it quotes from the input: control characters
    (newlines included) and lone surrogates become escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1]
                   for c in _printable(message))


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return int(COMMANDS[args.command].run(args))
    except KernelFault as exc:
        print(f"vmbisect: {one_line(str(exc))}", file=sys.stderr)
        if exc.detail:
            print(f"--- {exc.detail_label} ---\n" + _printable(exc.detail), file=sys.stderr)
        return exc.exit_code
    except VmbisectError as exc:
        print(f"vmbisect: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        fault = host_fault(exc)
        if fault is None:
            raise
        print(f"vmbisect: {one_line(str(fault))}", file=sys.stderr)
        return fault.exit_code
    except KeyboardInterrupt:
        print("vmbisect: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
