"""Fixtures for the durability tests: a worker cluster on SQLite, or on Postgres (`postgres` marker)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.durability.harness import Cluster, drop_schema, fresh_schema, stop_forkserver
from tests.fakes.server import ServerThread
from tests.tools import need

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_schema() -> str:
    """A fresh schema on the test server and a URL whose connections use it; skips without a server."""
    import psycopg

    try:
        return fresh_schema(POSTGRES_URL)
    except psycopg.OperationalError as exc:
        need(False, f"a PostgreSQL server ({type(exc).__name__})")
        raise


@pytest.fixture(scope="session", autouse=True)
def forkserver() -> Iterator[None]:
    """At the end of the session the workers' forkserver is reaped (under xdist too)."""
    yield
    stop_forkserver()


# the Postgres runs repeat the SQLite scenarios process for process: `slow`, so `-m "not slow"` stays quick
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.slow])])
def cluster(
    request: pytest.FixtureRequest, tmp_path: Path, redis_url: str, forge_server: ServerThread
) -> Iterator[Cluster]:
    """Workers on the SQLite stores, or on Postgres for the checkpointer and the task store."""
    extra = {"database_url": postgres_schema()} if request.param == "postgres" else {}
    made = Cluster.create(tmp_path / "cluster", redis_url, forge_server.url, **extra)
    try:
        yield made
    finally:
        made.stop()
        if extra:
            drop_schema(extra["database_url"])
