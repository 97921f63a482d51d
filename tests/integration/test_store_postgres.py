"""The store against a real PostgreSQL server (the postgres_url fixture: tests/integration/pgserver.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.decisions import Basis, Decided
from orchestrator.store import Store


def test_runs_samples_decisions_and_log_round_trip_through_postgresql(postgres_url):
    store = Store(postgres_url)
    cid = store.new_campaign("pg", {"good": "v1"})
    boot = store.start_boot(cid, "a" * 40)
    store.add_run(cid, boot, "a" * 40, {"iops": 1.5, "lat": 2.0}, {"raw": "x" * 10000})
    store.add_decision(cid, Decided("a" * 40, "step", "bad", "median at 97% of the gap", 0.99, 3))
    store.set_bisect_log(cid, "git bisect start\n")
    again = Store(postgres_url)
    assert again.samples(cid, "iops") == {"a" * 40: [1.5]}
    assert again.decisions(cid)[0].reason == "median at 97% of the gap"
    assert again.campaign(cid).bisect_log == "git bisect start\n"
    assert len(next(again.runs(cid)).raw["raw"]) == 10000


def test_long_verdicts_and_sha256_commit_ids_fit_postgresql(postgres_url):
    store = Store(postgres_url)
    cid = store.new_campaign("pg-long", {"good": "v1"})
    commit = "c" * 64  # a repository in git's sha256 object format
    store.add_decision(cid, Decided(commit, "revert", "revert does not restore the metric", "why", 0.0, 0))
    assert store.decisions(cid)[0].verdict == "revert does not restore the metric"


def test_a_store_an_older_vmbisect_made_is_widened_when_opened(postgres_url):
    Store(postgres_url)
    from sqlalchemy import create_engine
    with create_engine(postgres_url).begin() as conn:  # the columns as the previous release made them
        conn.exec_driver_sql("DELETE FROM decisions")
        conn.exec_driver_sql('ALTER TABLE decisions ALTER COLUMN "verdict" TYPE varchar(16)')
        conn.exec_driver_sql('ALTER TABLE decisions ALTER COLUMN "commit" TYPE varchar(40)')
    store = Store(postgres_url)
    cid = store.new_campaign("pg-old", {"good": "v1"})
    store.add_decision(cid, Decided("d" * 64, "revert", "revert restores the metric", "why", 0.0, 0))
    assert store.decisions(cid)[0].commit == "d" * 64


def test_a_postgresql_store_from_before_the_kind_column_gets_it_with_kinds_derived(postgres_url):
    store = Store(postgres_url)
    ids = [store.new_campaign("old-b", {"good": "v1"}), store.new_campaign("old-c", {"kind": "compare", "args": {}}),
           store.new_campaign("old-v", {"verify": {"commit": "c"}})]
    from sqlalchemy import create_engine
    with create_engine(postgres_url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE campaigns DROP COLUMN kind")
    again = Store(postgres_url)
    assert [again.campaign(i).kind for i in ids] == ["bisect", "compare", "verify"]
    assert again.campaign(again.new_campaign("new", {}, "compare")).kind == "compare"


def test_a_postgresql_store_from_before_boots_named_their_host_gets_it_from_their_runs(postgres_url):
    store = Store(postgres_url)
    cid = store.new_campaign("pg-hosts", {})
    boot = store.start_boot(cid, "a" * 40)
    store.add_run(cid, boot, "a" * 40, {"iops": 1.0}, {"lab_host": "big1"})
    from sqlalchemy import create_engine
    with create_engine(postgres_url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE boots DROP COLUMN host")
    again = Store(postgres_url)
    assert [b.host for b in again.boots(cid)] == ["big1"]
    assert list(again.boot_samples(cid, "iops", "big1")) == ["a" * 40]


def test_a_postgresql_store_from_before_typed_decisions_and_boot_facts_gets_them_derived(postgres_url):
    store = Store(postgres_url)
    cid = store.new_campaign("pg-typed", {})
    measured = "a" * 40
    store.add_decision(cid, Decided(measured, "step", "bad", "2 boots at 98% of the gap", 0.99, 6))
    store.add_decision(cid, Decided("b" * 40, "step", "bad", f"same image as {measured[:12]} (bad); not booted",
                                    0.99, 0))
    store.add_decision(cid, Decided(measured, "revert", "measuring", "from boot 9: both booted", 0.0, 0))
    boot = store.start_boot(cid, measured)
    from sqlalchemy import create_engine
    with create_engine(postgres_url).begin() as conn:  # the tables as the previous release made them
        for column in ("kind", "inherited_from", "since"):
            conn.exec_driver_sql(f"ALTER TABLE decisions DROP COLUMN {column}")
        conn.exec_driver_sql("ALTER TABLE boots DROP COLUMN facts")
    again = Store(postgres_url)
    assert [(d.basis, d.inherited_from, d.since) for d in again.decisions(cid)] == [
        (Basis.MEASURED, "", -1), (Basis.INHERITED, measured, -1), (Basis.MEASURING, "", 9)]
    assert [b.facts for b in again.boots(cid) if b.id == boot] == [{}]


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_results_an_older_vmbisect_stored_read_into_their_types_and_the_rows_are_not_rewritten(db, request,
                                                                                                  tmp_path):
    """Each result captured from the version before typed results (tests/data/results), stored
    as that version stored it, reads into its type through the store, and reading it (status,
    the list's result line) changes neither the row's JSON nor its `updated` time."""
    import json as json_

    from orchestrator.kinds.table import read_result as read
    from orchestrator.kinds.table import status_line
    from orchestrator.results import BisectResult, Stopped

    url = f"sqlite:///{tmp_path / 'v.db'}" if db == "sqlite" else request.getfixturevalue("postgres_url")
    captured = json_.loads((Path(__file__).parent.parent / "data" / "results" / "stored-896f3d9.json").read_text())
    store = Store(url)
    ids = []
    for stored in captured["results"]:
        cid = store.new_campaign(f"old-{stored['kind']}", {}, stored["kind"])
        store.set_state(cid, stored["state"], stored["result"])  # as the old code wrote it: a plain dict
        ids.append(cid)
    before = {cid: (store.campaign(cid).result, store.campaign(cid).updated) for cid in ids}
    again = Store(url)  # opening the store again migrates nothing in the results
    for cid, stored in zip(ids, captured["results"]):
        row = again.campaign(cid)
        result = read(row.kind, row.state, row.result)
        assert result is not None and status_line(row)
        if stored["state"] != "done":
            assert isinstance(result, Stopped) and result.stop == stored["state"]
        elif stored["kind"] == "bisect":
            assert isinstance(result, BisectResult) and result.outcome == stored["result"]["kind"]
        assert (row.result, row.updated) == before[cid] == (stored["result"], before[cid][1])


def test_a_campaigns_mail_is_claimed_once_on_postgresql_too(postgres_url):
    store = Store(postgres_url)
    cid = store.new_campaign("mailed", {})
    assert store.claim_mail(cid, "a@example.org") == 1 and store.claim_mail(cid, "a@example.org") is None
    store.mail_failed(cid, "smtp mx:25: down")
    assert cid in store.unsent_mails() and store.claim_mail(cid, "a@example.org") == 2
    store.mail_sent(cid, "<m@example.org>", "[vmbisect] mailed: found")
    assert store.claim_mail(cid, "a@example.org") is None and store.mail(cid).state == "sent"
