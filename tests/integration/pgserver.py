"""A real PostgreSQL server for the tests that need one: `postgres_url`, started per test
module (initdb + pg_ctl in a temporary directory, a Unix socket only) and stopped after it.
Every integration test gets it through tests/integration/conftest.py."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import require

PG_BIN = sorted(glob.glob("/usr/lib/postgresql/*/bin"))


@pytest.fixture(scope="module")
def postgres_url():
    require(bool(PG_BIN), "PostgreSQL server binaries not installed (make setup installs postgresql)")
    bin_dir = Path(PG_BIN[-1])
    root = Path(tempfile.mkdtemp(prefix="vmbisect-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    run_as: list[str] = []
    if os.geteuid() == 0:
        require(shutil.which("runuser") is not None, "runuser missing")
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        os.chmod(root, 0o755)
        run_as = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(data), "-U", "vmbisect", "--auth=trust"],
                   check=True, capture_output=True)
    port = "54329"
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "-o",
                    f"-k {sock} -p {port} -c listen_addresses=''", "start"], check=True, capture_output=True)
    subprocess.run([*run_as, str(bin_dir / "createdb"), "-h", str(sock), "-p", port, "-U", "vmbisect", "vmbisect"],
                   check=True, capture_output=True)
    yield f"postgresql+psycopg2://vmbisect@/vmbisect?host={sock}&port={port}"
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                   capture_output=True)
    shutil.rmtree(root, ignore_errors=True)
