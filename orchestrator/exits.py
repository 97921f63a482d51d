"""What an error becomes for the user: one printable line on stderr (a kernel fault's log
after it) and the exit code (orchestrator/errors.py). cli.main and a queue worker's run of a
stored campaign (kinds/run.py run_stored) both end here."""

from __future__ import annotations

import sys
from typing import Callable

from orchestrator.errors import KernelFault, VmbisectError, host_fault


def one_line(message: str) -> str:
    """A message as one printable line whatever it quotes from the input: control characters
    (newlines included) and lone surrogates become escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1]
                   for c in printable(message))


def printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def exit_code(work: Callable[[], int]) -> int:
    """`work()`'s exit code, or its error's: reported on stderr, never a traceback for an
    error vmbisect knows (a bug still raises)."""
    try:
        return int(work())
    except KernelFault as exc:
        print(f"vmbisect: {one_line(str(exc))}", file=sys.stderr)
        if exc.detail:
            print(f"--- {exc.detail_label} ---\n" + printable(exc.detail), file=sys.stderr)
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
