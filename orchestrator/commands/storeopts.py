"""The --store option every command that reads or writes campaigns takes."""

from __future__ import annotations

import argparse


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="URL", help="SQLAlchemy URL (default: SQLite in the data directory)")
