"""What the store keeps of each campaign's mail (Store.claim_mail and the `mails` table), on
SQLite files: one mail per campaign, a failed one claimed again, a sender killed mid-send
claimed again once stale, `--again` on purpose only, and an older store gets the table."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import create_engine, inspect

from orchestrator.store import Store


@pytest.fixture
def store(tmp_path):  # type: ignore[no-untyped-def]
    return Store(f"sqlite:///{tmp_path / 'v.db'}")


def test_a_campaigns_mail_is_claimed_once_until_it_fails_and_again_only_on_purpose(store):
    cid = store.new_campaign("c", {})
    assert store.claim_mail(cid, "a@example.org") == 1
    assert store.claim_mail(cid, "a@example.org") is None, "another controller is sending it"
    store.mail_failed(cid, "smtp mx:25: [Errno 111] Connection refused")
    assert store.unsent_mails() == [cid] and store.mail(cid).error.endswith("Connection refused")
    assert store.unsent_mails(below=1) == [] and store.unsent_mails(below=2) == [cid]
    assert store.claim_mail(cid, "a@example.org") == 2
    store.mail_sent(cid, "<vmbisect.x.1.2@example.org>", "[vmbisect] c: refused: flat")
    row = store.mail(cid)
    assert (row.state, row.attempts, row.error, row.message_id) == ("sent", 2, "", "<vmbisect.x.1.2@example.org>")
    assert store.claim_mail(cid, "a@example.org") is None and store.unsent_mails() == []
    assert store.claim_mail(cid, "a@example.org, b@example.org", again=True) == 3
    assert store.mail(cid).recipients == "a@example.org, b@example.org"


def test_a_mail_whose_sender_was_killed_mid_send_is_claimed_again_once_stale(store):
    cid = store.new_campaign("c", {})
    assert store.claim_mail(cid, "a@example.org") == 1  # and the process dies here
    assert store.claim_mail(cid, "a@example.org") is None
    assert store.claim_mail(cid, "a@example.org", stale_after=dt.timedelta(0)) == 2


def test_a_store_from_before_mails_gets_the_table_empty(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    cid = Store(url).new_campaign("c", {})
    with create_engine(url).begin() as conn:  # the store as the previous release made it
        conn.exec_driver_sql("DROP TABLE mails")
    assert "mails" not in inspect(create_engine(url)).get_table_names()
    again = Store(url)
    assert again.mail(cid) is None and again.claim_mail(cid, "a@example.org") == 1
