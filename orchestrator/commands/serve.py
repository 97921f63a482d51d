"""`vmbisect serve [--store URL] [--listen ADDR:PORT] [--allow-control]`: the dashboard
(orchestrator/web, docs/dashboard.md): the queue, campaigns with their progress and reports, the
lab's slots and the workers, read from the store and refreshed in place. Read-only and on
127.0.0.1 unless told otherwise; with --allow-control, cancel and requeue take the token printed
at start."""

from __future__ import annotations

import argparse
import ipaddress
import re
import secrets
import socket
from typing import TYPE_CHECKING, Any

from orchestrator.commands.storeopts import add_store_option
from orchestrator.errors import UserError

if TYPE_CHECKING:
    from orchestrator.web.reader import Catalogue

DEFAULT_LISTEN = "127.0.0.1:8765"


def listen_address(text: str) -> tuple[str, int]:
    """`ADDR:PORT`, `[IPv6]:PORT` or `:PORT` (127.0.0.1) -> (address, port)."""
    match = re.fullmatch(r"(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]*)):(\d{1,5})", text.strip())
    if not match or not 0 < int(match.group(3)) < 65536:
        raise argparse.ArgumentTypeError(f"expected ADDR:PORT like 127.0.0.1:8765, 0.0.0.0:8765 or [::1]:8765, "
                                         f"got {text[:60]!r}")
    return match.group(1) or match.group(2) or "127.0.0.1", int(match.group(3))


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="the dashboard: queue, campaigns, reports, lab and workers in a web page")
    p.add_argument("--listen", type=listen_address, default=listen_address(DEFAULT_LISTEN), metavar="ADDR:PORT",
                   help=f"where to listen (default {DEFAULT_LISTEN}: this machine only)")
    p.add_argument("--allow-control", action="store_true",
                   help="allow cancel and requeue, each with the token printed at start (default: read-only)")
    add_store_option(p)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a one-line UserError (the port in use, an address not here)."""
    try:
        family = socket.AF_INET6 if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address) else socket.AF_INET
    except ValueError:
        family = socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise UserError(f"listen: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def catalogue() -> Catalogue:
    """What the dashboard reads of the kind table and of `vmbisect status`."""
    from orchestrator.commands import status
    from orchestrator.kinds import run, table
    from orchestrator.web.reader import Catalogue

    return Catalogue(table.status_line, table.metric_of, run.report_files, table.report, status.counts,
                     run.REPORTED, table.stored, table.estimate)


def run(a: argparse.Namespace) -> int:
    import uvicorn

    from orchestrator.web.app import create_app, shown_url

    host, port = a.listen
    sock = bind(host, port)
    token = secrets.token_urlsafe(24) if a.allow_control else None
    app = create_app(a.store, catalogue(), token, listen_host=host)
    shown = f"[{host}]" if ":" in host else host
    mode = "cancel and requeue allowed with the token below" if token else "read-only"
    print(f"vmbisect serve: http://{shown}:{port}/ ({mode}; store {shown_url(a.store)})", flush=True)
    if token:
        print(f"vmbisect serve: control token: {token}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    server.run(sockets=[sock])
    return 0
