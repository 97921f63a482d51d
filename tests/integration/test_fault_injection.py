"""Fault injection with figures: the controller SIGKILLed at random moments of simulated
campaigns and resumed (tests/faultharness.py), on SQLite and on a real PostgreSQL; the store's
file system full during a store write. `make reliability` runs the same with larger budgets."""

from __future__ import annotations

import os

import pytest

from tests.faultharness import kill_and_resume

KILLS = int(os.environ.get("VMBISECT_FAULT_KILLS", "50"))


@pytest.mark.slow  # about 1.5 s per kill on 2 busy cores: 50 kills, 80 s
def test_sigkill_at_random_moments_loses_no_sample_counts_none_twice_and_finds_the_culprit_on_sqlite(
        tmp_path, tally):
    figures = kill_and_resume(f"sqlite:///{tmp_path / 'v.db'}", tmp_path, KILLS, seed=13)
    tally.record("SIGKILL and resume (SQLite)", figures.as_dict())
    assert figures.kills == KILLS and figures.ok(), figures


@pytest.mark.slow  # a real PostgreSQL server; fewer kills than on SQLite, same checks
def test_sigkill_at_random_moments_loses_nothing_on_postgresql(tmp_path, postgres_url, tally):  # noqa: F811
    kills = max(KILLS // 3, 10)
    figures = kill_and_resume(postgres_url, tmp_path, kills, seed=17)
    tally.record("SIGKILL and resume (PostgreSQL)", figures.as_dict())
    assert figures.kills == kills and figures.ok(), figures
