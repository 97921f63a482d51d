"""`--lab FILE [--host NAME]`, shared by the commands that boot guests."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.hosts.labfile import Lab, lab_from


def add_lab_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lab", type=Path, metavar="FILE", help="lab file listing the hosts guests run on (docs/hosts.md)")
    p.add_argument("--host", metavar="NAME", help="run on this host of the lab (default: the first free slot)")


def lab_from_args(a: argparse.Namespace) -> Lab:
    """The lab file's hosts, or this machine alone (at --uri) without one. --host is checked here."""
    return lab_from(a.lab, a.host, a.uri)
