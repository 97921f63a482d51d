"""A PostgreSQL store whose role needs a password (scram-sha-256 over TCP, as Debian's
postgresql sets up host connections), reached with a plain `postgresql://USER@HOST/DB` URL
that carries no password: the store (psycopg2, libpq) and the queue (asyncpg, pgqueuer) both
take it from PGPASSWORD or a pgpass file (docs/lab.md), and without one the store says so in
one line."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.errors import InfraError
from orchestrator.queue.jobs import jobs_for
from orchestrator.store import Store
from tests.conftest import require

PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
PASSWORD = "s3cret-not-in-argv"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def password_server() -> Iterator[str]:
    """A server on 127.0.0.1 whose role `vmbisect` logs in with PASSWORD only; its URL, without it."""
    require(bool(PG_BIN), "PostgreSQL server binaries not installed (make setup installs postgresql)")
    bin_dir = Path(PG_BIN[-1])
    root = Path(tempfile.mkdtemp(prefix="vmbisect-pgpw-"))
    data, sock, pwfile = root / "data", root / "sock", root / "pw"
    sock.mkdir()
    pwfile.write_text(PASSWORD + "\n")
    run_as: list[str] = []
    if os.geteuid() == 0:
        require(shutil.which("runuser") is not None, "runuser missing")
        for path in (root, sock, pwfile):
            shutil.chown(path, "postgres")
        os.chmod(root, 0o755)
        run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(data), "-U", "vmbisect", f"--pwfile={pwfile}",
                    "--auth=scram-sha-256"], check=True, capture_output=True)
    port = _free_port()
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "-o",
                    f"-k {sock} -p {port} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    yield f"postgresql://vmbisect@127.0.0.1:{port}/postgres"
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                   capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def no_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No password from the environment or the user's own ~/.pgpass."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))


def _store_and_queue_work(url: str) -> None:
    store = Store(url)
    assert store.engine.url.drivername == "postgresql+psycopg2"
    campaign = store.new_campaign("pw", {})
    jobs = jobs_for(store)
    jobs.enqueue(campaign, 0)
    ticket = jobs.take("runner-pw", 60.0)
    assert ticket is not None and ticket.campaign_id == campaign
    jobs.finish(ticket)


def test_a_url_without_a_password_opens_the_store_and_the_queue_with_pgpassword(
        password_server: str, no_password: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    _store_and_queue_work(password_server)


def test_a_url_without_a_password_opens_the_store_and_the_queue_with_a_pgpass_file(
        password_server: str, no_password: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    port = password_server.rsplit(":", 1)[1].split("/")[0]
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{port}:postgres:vmbisect:{PASSWORD}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    _store_and_queue_work(password_server.replace("postgresql://", "postgres://"))


def test_without_a_password_the_store_says_so_in_one_line(password_server: str, no_password: None) -> None:
    with pytest.raises(InfraError) as caught:
        Store(password_server)
    assert "no password supplied" in str(caught.value) and "\n" not in str(caught.value)
