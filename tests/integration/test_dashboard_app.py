"""The dashboard's application over a real SQLite store holding a bisection the real engine ran
(fake build and measurement ports, real git), and over a real PostgreSQL one: what a page escapes, the policies it is sent
with, the report (the file written at the end, or made again when it is gone), the pages for
an unknown campaign and an unreachable store, and control only with the flag and the token.
`vmbisect serve` itself: a port in use and a bad --listen are one-line errors."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from orchestrator.cli import main
from orchestrator.commands.serve import catalogue
from orchestrator.kinds.run import report_files
from orchestrator.store import Store
from orchestrator.web.app import create_app
from tests.integration.dashboard import XSS_SUBJECT, controller, history, stored_campaign

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """A store with one bisection run to its end, its reports written; the data directory set."""
    tmp = tmp_path_factory.mktemp("dash")
    mp = pytest.MonkeyPatch()
    mp.setenv("VMBISECT_DATA_DIR", str(tmp / "data"))
    repo, _culprit = history(tmp / "repo")
    url = f"sqlite:///{tmp / 'v.db'}"
    cid = stored_campaign(Store(url), repo)
    controller(url, cid)
    yield url, cid
    mp.undo()


def client(url: str, token: str | None = None) -> TestClient:
    return TestClient(create_app(url, catalogue(), token), base_url="http://127.0.0.1:8765", raise_server_exceptions=False)


def test_the_overview_lists_the_campaign_with_its_name_and_result_escaped_and_the_page_policy(done):
    url, cid = done
    r = client(url).get("/")
    assert r.status_code == 200
    assert "nightly &lt;i&gt;fio&lt;/i&gt;" in r.text and "<i>fio</i>" not in r.text
    assert f'href="/campaigns/{cid}/report"' in r.text and '<span class="state done">done</span>' in r.text
    policy = r.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy and "unsafe-inline" not in policy
    assert "Queue" in r.text and "Workers" in r.text and "Lab hosts and slots" in r.text


def test_a_campaign_page_shows_commit_subjects_as_text(done):
    url, cid = done
    r = client(url).get(f"/campaigns/{cid}")
    assert r.status_code == 200
    assert "<script>alert(1)</script>" not in r.text
    assert "net: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt; speedup" in r.text
    assert re.search(r"<iframe class=\"report\" data-reload sandbox src=\"/campaigns/\d+/report\"", r.text)
    assert "<form" not in r.text, "no control without --allow-control"


def test_the_live_fragment_is_the_progress_alone(done):
    url, cid = done
    r = client(url).get(f"/fragment/campaigns/{cid}")
    boots = len(Store(url).boots(cid))
    assert r.status_code == 200 and "<html" not in r.text and f'id="boots">{boots}<' in r.text


def test_the_report_written_at_the_end_is_served_sandboxed_and_made_again_when_it_is_gone(done):
    url, cid = done
    html = report_files(Store(url).campaign(cid))[1]
    r = client(url).get(f"/campaigns/{cid}/report")
    assert r.status_code == 200 and r.text == html.read_text()
    policy = r.headers["content-security-policy"]
    assert policy.startswith("sandbox;") and "script-src" not in policy and "default-src 'none'" in policy
    kept = html.read_text()
    html.unlink()
    try:
        again = client(url).get(f"/campaigns/{cid}/report")
        assert again.status_code == 200 and "<svg" in again.text and XSS_SUBJECT not in again.text
    finally:
        html.write_text(kept)


def test_a_campaign_that_has_not_ended_has_a_note_for_a_report_and_its_clone_is_left_alone(done, tmp_path):
    from orchestrator.bisect.workdir import campaign_workdir

    url, _cid = done
    store = Store(url)
    running = stored_campaign(store, history(tmp_path / "repo")[0], "running-one")
    r = client(url).get(f"/campaigns/{running}/report")
    assert r.status_code == 200 and "written when the campaign ends; it is running" in r.text
    assert r.headers["content-security-policy"].startswith("sandbox;")
    assert not campaign_workdir(store, running).exists(), "no clone made or fetched under a running controller"


def test_a_running_comparison_counts_the_boots_of_its_schedule(done, tmp_path):
    from orchestrator.cli import _parser
    from orchestrator.commands.compare import spec_from_args
    from orchestrator.kinds.table import record

    url, _cid = done
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"k")
    spec = spec_from_args(_parser().parse_args(["compare", "--workload", "fio", "--disks", "2", "--kernel", str(kernel),
                                                "--variant", "none=sched:none", "--variant", "bfq=sched:bfq",
                                                "--reps", "4", "--boots", "2"]))
    cid = record(Store(url), "sched <none> vs bfq", spec)
    r = client(url).get(f"/fragment/campaigns/{cid}")
    assert r.status_code == 200 and "2 of 2 comparison boots left" in r.text
    assert "sched &lt;none&gt; vs bfq" in client(url).get("/").text


def test_an_unknown_campaign_is_a_page_saying_so(done):
    url, _cid = done
    for path in ("/campaigns/999", "/fragment/campaigns/999", "/campaigns/999/report"):
        r = client(url).get(path)
        assert r.status_code == 404 and "no campaign with id 999" in r.text and "Traceback" not in r.text


def test_an_unreachable_store_is_a_page_saying_so():
    r = client("postgresql+psycopg2://nobody@127.0.0.1:1/none").get("/")
    assert r.status_code == 503 and "The store does not answer" in r.text and "Traceback" not in r.text
    assert "127.0.0.1:1" in r.text


def test_control_is_refused_without_the_flag_and_with_a_wrong_token(done):
    url, cid = done
    store = Store(url)
    r = client(url).post(f"/campaigns/{cid}/cancel", data={"token": TOKEN})
    assert r.status_code == 403 and "read-only" in r.text
    armed = client(url, TOKEN)
    assert armed.post(f"/campaigns/{cid}/cancel", data={"token": "guess"}).status_code == 403
    assert armed.post(f"/campaigns/{cid}/cancel").status_code == 403
    assert armed.post(f"/campaigns/{cid}/cancel", content=b"token=" + b"x" * 100_000).status_code == 413
    assert armed.get(f"/campaigns/{cid}/cancel").status_code == 405, "a GET changes nothing"
    assert store.campaign(cid).state == "done"
    page = armed.get(f"/campaigns/{cid}").text
    assert "<form" not in page and TOKEN not in page, "a done campaign offers no control; the token is never shown"


def test_control_with_the_token_changes_the_campaign_or_says_why_not(done, tmp_path):
    url, cid = done
    store = Store(url)
    armed = client(url, TOKEN)
    r = armed.post(f"/campaigns/{cid}/cancel", data={"token": TOKEN})
    assert r.status_code == 409 and "is done" in r.text, "an ended campaign is not cancelled"
    other = store.new_campaign("waiting", {}, "bisect")
    store.set_state(other, "paused")
    page = armed.get(f"/campaigns/{other}").text
    assert f'action="/campaigns/{other}/cancel"' in page and f'action="/campaigns/{other}/requeue"' in page
    assert armed.post(f"/campaigns/{other}/cancel", data={"token": TOKEN}).status_code == 200
    assert store.campaign(other).state == "cancelled"
    page = armed.get(f"/campaigns/{other}").text
    assert "/cancel" not in page and f'action="/campaigns/{other}/requeue"' in page, "no control that cannot act"


def test_a_page_asked_for_under_another_host_name_is_refused(done):
    url, _cid = done
    r = TestClient(create_app(url, catalogue()), base_url="http://attacker.example:8765").get("/")
    assert r.status_code == 400


def test_a_port_in_use_is_a_one_line_error(capsys, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--store", f"sqlite:///{tmp_path / 'v.db'}", "--listen", f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"vmbisect: listen: cannot listen on 127.0.0.1:{port}: Address already in use"


@pytest.mark.parametrize("listen", ["8765", "host:port", "127.0.0.1:70000", "[::1:80"])
def test_a_bad_listen_address_is_a_one_line_error(capsys, listen):
    assert main(["serve", "--listen", listen]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ADDR:PORT" in err[0]


def test_the_listen_address_reads_ipv4_ipv6_and_a_bare_port():
    from orchestrator.commands.serve import listen_address

    assert listen_address("0.0.0.0:80") == ("0.0.0.0", 80)
    assert listen_address("[::1]:8765") == ("::1", 8765)
    assert listen_address(":9000") == ("127.0.0.1", 9000)


def test_nothing_here_reads_a_file_outside_the_static_folder(done):
    url, _cid = done
    c = client(url)
    assert c.get("/static/app.js").status_code == 200
    assert c.get("/static/../app.py").status_code == 404
    assert Path(__file__).name not in c.get("/static/%2e%2e/%2e%2e/").text


def test_the_dashboard_reads_a_postgresql_store(postgres_url, tmp_path, monkeypatch):
    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    cid = stored_campaign(Store(postgres_url), history(tmp_path / "repo")[0])
    controller(postgres_url, cid)
    c = client(postgres_url)
    overview = c.get("/")
    assert overview.status_code == 200 and f'id="campaign-{cid}"' in overview.text
    assert "postgresql+psycopg2://vmbisect@/vmbisect" in overview.text
    page = c.get(f"/campaigns/{cid}")
    assert page.status_code == 200 and "net: &lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert c.get(f"/campaigns/{cid}/report").status_code == 200


def test_an_ended_campaign_is_read_once_until_its_row_changes(done):
    from orchestrator.web.reader import Reader

    url, _cid = done
    store = Store(url)
    ended = store.new_campaign("ended", {}, "bisect")
    store.set_state(ended, "failed")
    reader = Reader(store, catalogue())
    first = reader.view(store.campaign(ended))
    assert reader.view(store.campaign(ended)) is first
    store.set_state(ended, "paused")
    again = reader.view(store.campaign(ended))
    assert again is not first and again.state == "paused"


def test_a_lost_worker_is_listed_lost_and_a_takeover_shows_on_the_campaign_page_escaped(tmp_path, monkeypatch):
    import datetime as dt

    from orchestrator.queue import takeovers
    from orchestrator.queue.rows import now
    from orchestrator.store import WorkerRow

    monkeypatch.setenv("VMBISECT_DATA_DIR", str(tmp_path / "data"))
    url = f"sqlite:///{tmp_path / 'v.db'}"
    store = Store(url)
    cid = stored_campaign(store, history(tmp_path / "repo")[0])
    at = now()
    with store.session() as s, s.begin():
        for name in ("m:1/0", "m:<b>2</b>/0"):
            s.add(WorkerRow(name=name, machine="m", pid=1, pid_started="1", campaign_id=cid,
                            last_beat=at - dt.timedelta(seconds=90), timeout_s=60.0))
    r = client(url).get("/")
    assert r.status_code == 200 and f"lost</span> (campaign {cid} waits to be taken over)" in r.text
    with store.session() as s, s.begin():
        assert takeovers.record(s, cid, "m:<b>2</b>/0", "m:3/0", at) is not None
    r = client(url).get(f"/campaigns/{cid}")
    assert r.status_code == 200 and "<h2>Takeovers</h2>" in r.text
    assert "taken over by m:3/0 from m:&lt;b&gt;2&lt;/b&gt;/0 on m: heartbeat lost (silent 90 s, timeout 60 s)" in r.text
    assert "m:&lt;b&gt;2&lt;/b&gt;/0" not in client(url).get("/").text, "dropped from the list once taken over"
