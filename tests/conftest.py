"""Shared fixtures. Tests that need a real host part skip without it, except under CI=true,
where `make setup` must have provided it and a skip would hide a broken setup."""

from __future__ import annotations

import os

import pytest


def require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must have this (make setup provides it): {reason}")
    pytest.skip(reason)
