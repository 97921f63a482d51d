"""argparse types with bounds: a bad value becomes `argument --X: ...`, one line, exit 2.

The bounds are documented in docs/campaign.md ("Limits"); a value past them is a typo, not a
wish (a week-long agent timeout, a billion repetitions, a campaign id SQLite cannot hold).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Callable

MAX_ID = 2**63 - 1  # SQLite's and PostgreSQL's largest integer key
WEEK_S = 7 * 86400


def campaign_id(text: str) -> int:
    if not text.isdigit() or len(text) > 19 or not 1 <= int(text) <= MAX_ID:
        raise argparse.ArgumentTypeError(f"expected a campaign id (a whole number from 1; vmbisect status lists "
                                         f"them), got {text[:40]!r}")
    return int(text)


def count(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        stripped = text.strip()
        digits = stripped.removeprefix("-")
        if not digits.isdigit() or len(digits) > 12 or not low <= int(stripped) <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low} to {high}, got {text[:40]!r}")
        return int(stripped)
    return parse


def seconds(low: float, high: float = WEEK_S) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected seconds from {low:g} to {high:g}, got {text[:40]!r}")
        return value
    return parse


def fraction(low: float, high: float) -> Callable[[str], float]:
    """A probability strictly between low and high (alpha)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low < value < high:  # false for nan
            raise argparse.ArgumentTypeError(f"expected a number between {low:g} and {high:g}, got {text[:40]!r}")
        return value
    return parse


def existing_file(text: str) -> Path:
    """A file to read (a kernel image): checked when the command line is read, before any
    connection to libvirt, image build or probe guest."""
    path = Path(text)
    try:
        ok = path.is_file() and os.access(path, os.R_OK)
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"{text[:200]!r} is not a readable file")
    return path


def output_file(text: str) -> Path:
    """A file to write: its directory must exist and be writable now, not after the work."""
    path = Path(text)
    parent = path.parent
    try:
        ok = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK) and not path.is_dir()
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(f"cannot write {text[:200]!r}: its directory {str(parent)[:200]!r} "
                                         "does not exist or is not writable (or it is a directory)")
    return path
