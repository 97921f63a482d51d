"""The store against SQLite files (PostgreSQL is covered by tests/integration/test_store_postgres.py)."""

import pytest
from sqlalchemy.exc import StatementError

from orchestrator.decisions import Basis, Decided, Role
from orchestrator.errors import InfraError, UserError
from orchestrator.store import Store, driver_url


@pytest.fixture
def store(tmp_path):
    return Store(f"sqlite:///{tmp_path / 'v.db'}")


def test_samples_come_back_by_commit_in_the_order_taken(store):
    cid = store.new_campaign("c", {"good": "a"})
    boot = store.start_boot(cid, "a" * 40)
    store.add_run(cid, boot, "a" * 40, {"iops": 10.0, "lat": 1.0}, {"fio": "{}"})
    store.add_run(cid, boot, "a" * 40, {"iops": 11.0, "lat": 1.1}, {})
    boot_b = store.start_boot(cid, "b" * 40)
    store.add_run(cid, boot_b, "b" * 40, {"iops": 5.0}, {})
    assert store.samples(cid, "iops") == {"a" * 40: [10.0, 11.0], "b" * 40: [5.0]}
    assert store.samples(cid, "lat") == {"a" * 40: [1.0, 1.1]}
    assert [r.raw for r in store.runs(cid)][0] == {"fio": "{}"}


def test_state_survives_reopening_the_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    first = Store(url)
    cid = first.new_campaign("c", {})
    first.set_bisect_log(cid, "git bisect start\n")
    first.add_decision(cid, Decided("a" * 40, "step", "good", "because", 0.99, 3))
    first.add_build(cid, "a" * 40, "ok", sha256="f" * 64, cache_hit=True)
    again = Store(url)
    assert again.campaign(cid).bisect_log == "git bisect start\n"
    assert again.decisions(cid)[0].verdict == "good" and again.builds(cid)[0].cache_hit


def test_boot_status_and_campaign_result(store):
    cid = store.new_campaign("c", {})
    boot = store.start_boot(cid, "a" * 40)
    store.end_boot(boot, "failed", 0.0, "Kernel panic")
    store.set_state(cid, "done", {"culprit": "a" * 40})
    assert store.boots(cid)[0].error == "Kernel panic"
    assert store.campaign(cid).state == "done" and store.campaign(cid).result["culprit"] == "a" * 40


def test_unknown_campaign_is_a_user_error(store):
    with pytest.raises(UserError, match="no campaign with id 99"):
        store.campaign(99)


def test_a_store_directory_that_cannot_be_made_is_a_user_error():
    with pytest.raises(UserError, match="store: cannot create the directory /proc/nope"):
        Store("sqlite:////proc/nope/x.db")


def test_a_store_opened_to_read_is_never_made(tmp_path):
    with pytest.raises(UserError, match=f"store: no database at {tmp_path / 'v.db'}"):
        Store(f"sqlite:///{tmp_path / 'v.db'}", create=False)
    assert not (tmp_path / "v.db").exists()
    Store(f"sqlite:///{tmp_path / 'v.db'}")
    assert Store(f"sqlite:///{tmp_path / 'v.db'}", create=False).campaigns() == []


def test_unreachable_database_is_an_infra_error():
    with pytest.raises(InfraError, match="store: cannot open"):
        Store("postgresql+psycopg2://nobody@127.0.0.1:1/none")


def test_a_value_longer_than_its_column_is_refused_on_sqlite_as_postgresql_would(store):
    cid = store.new_campaign("long", {})
    with pytest.raises(StatementError, match="holds 64"):
        store.add_decision(cid, Decided("a" * 40, Role.STEP, "bad", "why", 1.0, 1, Basis.INHERITED, "f" * 65))
    assert store.decisions(cid) == []


def test_a_campaign_keeps_its_kind(store):
    assert store.campaign(store.new_campaign("c", {"x": 1}, "compare")).kind == "compare"
    assert store.campaign(store.new_campaign("b", {})).kind == "bisect"


def test_a_store_from_before_the_kind_column_gets_it_with_each_campaign_kind_derived_once(tmp_path):
    import json

    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Store(url)
    specs = [{"name": "b", "good": "v1"}, {"kind": "compare", "args": {"workload": "fio"}},
             {"name": "v", "verify": {"commit": "c", "revert_on": "", "boots": 4}}]
    ids = [first.new_campaign("c", spec) for spec in specs]  # all stored as bisections, as before
    with create_engine(url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE campaigns DROP COLUMN kind")
    again = Store(url)
    assert [again.campaign(i).kind for i in ids] == ["bisect", "compare", "verify"]
    assert json.loads(again.campaign(ids[1]).spec) == specs[1]
    assert Store(url).campaign(again.new_campaign("n", {}, "verify")).kind == "verify"  # opened again: kept


def test_the_last_run_of_a_campaign_is_the_one_stored_last(store):
    cid = store.new_campaign("c", {})
    assert store.last_run(cid) is None
    boot = store.start_boot(cid, "a" * 40)
    store.add_run(cid, boot, "a" * 40, {"iops": 1.0}, {"lab_host": "big1"})
    store.add_run(cid, boot, "a" * 40, {"iops": 2.0}, {"lab_host": "big2"})
    last = store.last_run(cid)
    assert last is not None and last.raw == {"lab_host": "big2"}


def test_a_store_from_before_boots_named_their_host_gets_each_boots_host_from_its_runs(tmp_path):
    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Store(url)
    cid = first.new_campaign("c", {})
    boots = [first.start_boot(cid, x * 40) for x in "abc"]
    first.add_run(cid, boots[0], "a" * 40, {"iops": 1.0}, {"lab_host": "big1"})  # a bisection's run
    first.add_run(cid, boots[1], "b" * 40, {"iops": 2.0}, {"result": {"lab_host": "big2"}})  # a comparison's
    first.add_run(cid, boots[2], "c" * 40, {"iops": 3.0}, {})  # from before lab hosts
    with create_engine(url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE boots DROP COLUMN host")
    again = Store(url)
    assert [b.host for b in again.boots(cid)] == ["big1", "big2", ""]
    assert set(again.boot_samples(cid, "iops", "big1")) == {"a" * 40, "c" * 40}  # "": the campaign's one host
    assert set(again.boot_samples(cid, "iops", "big1", legacy=False)) == {"a" * 40}


def test_boots_a_failed_host_lost_are_kept_but_never_sampled(store):
    cid = store.new_campaign("c", {})
    kept, lost = store.start_boot(cid, "a" * 40), store.start_boot(cid, "a" * 40)
    store.end_boot(kept, "ok", 1.0, host="big1")
    store.add_run(cid, kept, "a" * 40, {"iops": 1.0}, {"lab_host": "big1"})
    store.end_boot(lost, "ok", 1.0, host="big1")
    store.add_run(cid, lost, "a" * 40, {"iops": 9.0}, {"lab_host": "big1"})
    store.end_boot(lost, "lost", error="host big1: ssh connection lost")
    assert [b.runs for b in store.boot_samples(cid, "iops")["a" * 40]] == [(1.0,)]
    assert [(b.status, b.host) for b in store.boots(cid)] == [("ok", "big1"), ("lost", "big1")]
    assert len(list(store.runs(cid))) == 2


def test_a_boot_keeps_its_host_state_and_phases_and_an_older_store_gets_the_column_empty(tmp_path):
    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Store(url)
    cid = first.new_campaign("c", {})
    old = first.start_boot(cid, "a" * 40)
    with create_engine(url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE boots DROP COLUMN facts")
    again = Store(url)
    new = again.start_boot(cid, "a" * 40)
    facts = {"host_state": {"dirty_kib": 10, "writeback_kib": 0, "load1": 0.1, "waited_s": 0.0, "quiet": True},
             "phases": {"to_agent": 2.5}}
    again.end_boot(new, "ok", 2.5, host="local", facts=facts)
    assert [(b.id, b.facts) for b in again.boots(cid)] == [(old, {}), (new, facts)]


def test_a_build_keeps_how_it_was_obtained_and_an_older_store_gets_the_column_empty(tmp_path):
    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Store(url)
    cid = first.new_campaign("c", {})
    first.add_build(cid, "a" * 40, "ok", duration_s=3.0)
    with create_engine(url).begin() as conn:  # the table as the previous release made it
        conn.exec_driver_sql("ALTER TABLE builds DROP COLUMN how")
    again = Store(url)
    again.add_build(cid, "b" * 40, "ok", duration_s=11.0, how="incremental")
    assert [(b.commit[0], b.how) for b in again.builds(cid)] == [("a", ""), ("b", "incremental")]


def test_a_store_from_before_typed_decisions_gets_kind_source_and_since_derived_once(tmp_path):
    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Store(url)
    cid = first.new_campaign("c", {})
    measured, same = "a" * 40, "b" * 40
    old = [Decided(measured, Role.GOOD, "good", "good 100, bad 50", 1.0, 6),  # as the previous release wrote them
           Decided(measured, Role.STEP, "bad", "2 boots at 98% of the good-to-bad gap", 0.99, 6),
           Decided(same, Role.STEP, "bad", f"same image as {measured[:12]} (bad); not booted", 0.99, 0),
           Decided("c" * 40, Role.STEP, "skip", "ambiguous after the cap of 6 boots: 6 boots at 50%", 0.0, 18),
           Decided("d" * 40, Role.RECHECK, "skip", "re-examined (why: x): build failed: error", 1.0, 0),
           Decided(measured, Role.CONFIRM, "measuring", "from boot 17: both booted interleaved", 0.0, 0),
           Decided("", Role.HOST, "moved", "host big1 failed: gone; its boots are kept", 0.0, 0)]
    for d in old:
        first.add_decision(cid, d)
    with create_engine(url).begin() as conn:  # the table as the previous release made it
        for column in ("kind", "inherited_from", "since"):
            conn.exec_driver_sql(f"ALTER TABLE decisions DROP COLUMN {column}")
    got = [(d.basis, d.inherited_from, d.since) for d in Store(url).decisions(cid)]
    assert got == [(Basis.ENDPOINTS, "", -1), (Basis.MEASURED, "", -1), (Basis.INHERITED, measured, -1),
                   (Basis.AMBIGUOUS, "", -1), (Basis.BUILD_FAILED, "", -1), (Basis.MEASURING, "", 17),
                   (Basis.MOVED, "", -1)]


def test_a_plain_postgresql_url_gets_the_installed_driver_and_others_are_refused():
    assert driver_url("postgresql://vmbisect@db/lab") == "postgresql+psycopg2://vmbisect@db/lab"
    assert driver_url("postgres://vmbisect@db:5433/lab") == "postgresql+psycopg2://vmbisect@db:5433/lab"
    assert driver_url("postgresql+psycopg2://vmbisect@db/lab") == "postgresql+psycopg2://vmbisect@db/lab"
    assert driver_url("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"
    with pytest.raises(UserError, match="postgresql\\+asyncpg is not a driver vmbisect installs; give postgresql://"):
        driver_url("postgresql+asyncpg://vmbisect@db/lab")
