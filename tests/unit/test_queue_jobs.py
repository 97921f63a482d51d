"""Where the queue's pgqueuer connection goes (orchestrator/queue/jobs.py), as a pure function."""

from __future__ import annotations

from orchestrator.queue.jobs import asyncpg_args


def test_pgqueuer_connects_where_the_store_s_url_points_socket_directory_port_and_tls_included():
    assert asyncpg_args("postgresql+psycopg2://vmbisect@/lab?host=/tmp/pg/sock&port=54331") == {
        "user": "vmbisect", "database": "lab", "host": "/tmp/pg/sock", "port": 54331}
    assert asyncpg_args("postgresql+psycopg2://u:pw@db.example.org:5433/lab?sslmode=require") == {
        "user": "u", "password": "pw", "database": "lab", "host": "db.example.org", "port": 5433, "ssl": "require"}
