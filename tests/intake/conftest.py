"""Fixtures for the intake tests: the inbox on SQLite and (when a server is reachable) Postgres."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.tasks.inbox import Inbox
from tests.tools import need

POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A throw-away database on the local Postgres; skipped without one unless tools are required."""
    import psycopg

    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        need(False, f"a PostgreSQL server ({type(exc).__name__})")
        raise
    name = f"forgebot_intake_{uuid.uuid4().hex[:12]}"
    admin.execute(f"CREATE DATABASE {name}")
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def _fresh_schema(database_url: str) -> str:
    """A new schema in the test database, and a URL whose connections use it."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return f"{database_url}?options=-csearch_path%3D{schema}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def inbox(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Inbox]:
    """A fresh, empty inbox on each backend."""
    if request.param == "sqlite":
        opened = await Inbox.open(sqlite_path=tmp_path / "inbox.sqlite")
    else:
        opened = await Inbox.open(postgres_url=_fresh_schema(request.getfixturevalue("postgres_database")))
    try:
        yield opened
    finally:
        await opened.close()
