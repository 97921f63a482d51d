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
    cancel,
    cleanup,
    compare,
    demo,
    doctor,
    measure,
    notify,
    report,
    requeue,
    resume,
    serve,
    status,
    submit,
    verify,
    worker,
)
from orchestrator.errors import UserError
from orchestrator.exits import exit_code

# Each module has add_parser(subparsers) and run(args) -> exit code.
COMMANDS: dict[str, ModuleType] = {
    "doctor": doctor, "boot": boot, "cleanup": cleanup, "build": build, "measure": measure,
    "bisect": bisect, "compare": compare, "resume": resume, "status": status, "report": report, "demo": demo,
    "verify": verify,
    "notify": notify, "submit": submit, "worker": worker, "serve": serve,
    "cancel": cancel, "requeue": requeue,
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


def main(argv: Sequence[str] | None = None) -> int:
    _wire_end_hooks()

    def run() -> int:
        args = _parser().parse_args(argv)
        return int(COMMANDS[args.command].run(args))

    return exit_code(run)


def _wire_end_hooks() -> None:
    """What a campaign's end does beyond its reports (kinds/run.py END_HOOKS): the mail
    (commands/notify.py; docs/mail.md). Registered here, where a user's command starts, so a
    test running `run.execute` itself chooses its own hooks."""
    from orchestrator.kinds import run

    if notify.on_end not in run.END_HOOKS:
        run.END_HOOKS.append(notify.on_end)


if __name__ == "__main__":
    sys.exit(main())
