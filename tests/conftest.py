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


# Property-based tests (Hypothesis). `make test` runs the bounded, derandomized profile "ci";
# `make reliability` runs "reliability" (many more inputs, random) and records every outcome
# through `tally` so docs/reliability.md can show the figures.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("reliability", max_examples=int(os.environ.get("VMBISECT_PROPERTY_EXAMPLES", "3000")),
                          deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


class Tally:
    """Outcomes of generated inputs per property, written as JSON lines to the file named by
    VMBISECT_RELIABILITY_LOG (nothing is written without it)."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.figures: dict[str, dict[str, object]] = {}

    def __call__(self, prop: str, outcome: str) -> None:
        per = self.counts.setdefault(prop, {})
        per[outcome] = per.get(outcome, 0) + 1

    def record(self, prop: str, figures: dict[str, object]) -> None:
        self.figures[prop] = figures


_TALLY = Tally()


@pytest.fixture(scope="session")
def tally() -> Tally:
    return _TALLY


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get("VMBISECT_RELIABILITY_LOG")
    if path and (_TALLY.counts or _TALLY.figures):
        import json

        with open(path, "a") as f:
            for prop, outcomes in sorted(_TALLY.counts.items()):
                f.write(json.dumps({"property": prop, "outcomes": outcomes}) + "\n")
            for prop, figures in sorted(_TALLY.figures.items()):
                f.write(json.dumps({"property": prop, "figures": figures}) + "\n")
