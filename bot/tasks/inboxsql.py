"""The inbox's SQL: its schema and a small connection wrapper over sqlite3 and psycopg.

Statements are written once with `?` placeholders and `ON CONFLICT DO NOTHING`, which both SQLite
(≥ 3.24) and Postgres understand; the Postgres wrapper only swaps the placeholder style.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from foundation.sqlitewal import enable_wal

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    delivery_id TEXT PRIMARY KEY,
    forge TEXT NOT NULL,
    event_name TEXT NOT NULL,
    received_at DOUBLE PRECISION NOT NULL,
    result TEXT NOT NULL,
    task_id TEXT,
    event_json TEXT,
    handled_at DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS deliveries_pending ON deliveries (result, handled_at, received_at);
CREATE TABLE IF NOT EXISTS semantic_keys (
    semantic_key TEXT PRIMARY KEY,
    delivery_id TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    task_key TEXT NOT NULL,
    state TEXT NOT NULL,
    mode TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    detail TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    failure TEXT NOT NULL DEFAULT '',
    unpriced TEXT NOT NULL DEFAULT '',
    link TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS tasks_key ON tasks (task_key, state);
CREATE INDEX IF NOT EXISTS tasks_state ON tasks (state, updated_at);
CREATE INDEX IF NOT EXISTS tasks_created ON tasks (created_at);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_one_active ON tasks (task_key) WHERE state IN ('running', 'waiting');
"""


# columns added after a store was first created: (table, column, definition), each added once
ADDED_COLUMNS = (
    ("tasks", "tokens", "BIGINT NOT NULL DEFAULT 0"),
    ("tasks", "cost_usd", "DOUBLE PRECISION NOT NULL DEFAULT 0"),
    ("tasks", "failure", "TEXT NOT NULL DEFAULT ''"),  # the failure record (graph.failure.TaskFailure, JSON)
    ("tasks", "unpriced", "TEXT NOT NULL DEFAULT ''"),  # models the task called without a price, comma-separated
    ("tasks", "link", "TEXT NOT NULL DEFAULT ''"),  # the issue or change's web address, as the service knew it
)


def upgrade(conn: Connection) -> None:
    """Create the tables, then add the columns a store made by an older release lacks."""
    conn.script(SCHEMA)
    for table, column, definition in ADDED_COLUMNS:
        try:
            conn.one(f"SELECT {column} FROM {table} LIMIT 0")
        except Exception:  # sqlite3.OperationalError / psycopg UndefinedColumn: an older store
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    conn.transaction(lambda: _key_by_repository_id(conn))


def _key_by_repository_id(conn: Connection) -> None:
    """Re-key GitHub tasks an older release keyed by the payload's `owner/name` to the repository id.

    A task's key names its repository by the forge's numeric id (a payload's names are anyone's
    with a hook secret); a task recorded before that would otherwise not be found by the cancel or
    reply that follows it, and a new trigger could start a second task beside it.
    """
    rows = conn.all(
        "SELECT t.task_id, t.task_key, t.state, d.event_json FROM tasks t"
        " JOIN deliveries d ON d.delivery_id = t.delivery_id WHERE t.task_key LIKE ?", ("github:%/%",)
    )
    for task_id, key, state, event_json in rows:
        _, _, rest = str(key).split(":", 1)[1].partition(":")
        repo_id = json.loads(event_json).get("repo_id") if event_json else None
        if not isinstance(repo_id, int) or repo_id <= 0:
            continue
        new_key = f"github:{repo_id}:{rest}"
        taken = conn.one("SELECT 1 FROM tasks WHERE task_key = ? AND state IN ('running', 'waiting')", (new_key,))
        if taken is None or state not in ("running", "waiting"):  # one active task per key, as the index says
            conn.execute("UPDATE tasks SET task_key = ? WHERE task_id = ?", (new_key, task_id))


class Connection(ABC):
    """One DB-API connection in autocommit mode; writes go through `transaction`."""

    local = False  # True: statements are local and quick enough to run on the event loop

    @abstractmethod
    def checkpoint(self) -> None:
        """Housekeeping after many commits (run on a thread, off the event loop)."""

    def __init__(self, raw: Any, placeholder: str, integrity_errors: tuple[type[Exception], ...]) -> None:
        self._raw = raw
        self._placeholder = placeholder
        self.integrity_errors = integrity_errors

    def _sql(self, sql: str) -> str:
        return sql if self._placeholder == "?" else sql.replace("?", self._placeholder)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> bool:
        """Run one statement; True when it changed at least one row."""
        cursor = self._raw.execute(self._sql(sql), params)
        return bool(cursor.rowcount and cursor.rowcount > 0)

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        row = self._raw.execute(self._sql(sql), params).fetchone()
        return None if row is None else tuple(row)

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._raw.execute(self._sql(sql), params).fetchall()]

    def script(self, sql: str) -> None:
        for statement in filter(None, (part.strip() for part in sql.split(";"))):
            self._raw.execute(statement)

    @abstractmethod
    def transaction(self, fn: Callable[[], T]) -> T:
        """Run `fn` in one write transaction; roll back if it raises."""

    def close(self) -> None:
        self._raw.close()


class SqliteConnection(Connection):
    local = True

    def __init__(self, raw: Any, placeholder: str, errors: tuple[type[Exception], ...], checkpointer: Any) -> None:
        super().__init__(raw, placeholder, errors)
        self._checkpointer = checkpointer

    def checkpoint(self) -> None:
        """Copy committed WAL frames into the database file without blocking writers (PASSIVE);
        runs on its own connection, off the event loop (sqlite releases the GIL meanwhile)."""
        self._checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        self._checkpointer.close()
        super().close()

    def transaction(self, fn: Callable[[], T]) -> T:
        # IMMEDIATE takes the write lock up front: no deadlock when two processes upgrade a read
        self._raw.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
        except BaseException:
            self._raw.execute("ROLLBACK")
            raise
        self._raw.execute("COMMIT")
        return result


SCHEMA_LOCK = 0x666F72676569  # pg_advisory_xact_lock key ("forgei"): the inbox's tables are created one at a time


class PostgresConnection(Connection):
    def checkpoint(self) -> None:
        return None  # the server checkpoints and vacuums on its own schedule

    def script(self, sql: str) -> None:
        """Run the schema in one transaction under an advisory lock: `CREATE TABLE IF NOT EXISTS`
        is not atomic in Postgres, so workers starting together would both try to create a table
        and the second would fail on the catalog's unique index."""
        with self._raw.transaction():
            self._raw.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            super().script(sql)

    def transaction(self, fn: Callable[[], T]) -> T:
        with self._raw.transaction():
            return fn()


def connect_sqlite(path: Path, sync: Literal["normal", "full"] = "normal") -> Connection:
    """A WAL-mode file. `normal`: a committed delivery survives a crash or kill of the process
    (not a power cut: like Redis's default `appendfsync everysec`); `full`: one fsync per commit
    (batched by the inbox's group commit), surviving a power cut too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    enable_wal(raw)  # the receiver and workers may open a fresh file at the same moment
    # no checkpoint inside a commit: copying the WAL back (and its sync) would stall the event
    # loop for tens of ms every few hundred deliveries; the inbox checkpoints on a thread instead
    raw.execute("PRAGMA wal_autocheckpoint=0")
    raw.execute(f"PRAGMA synchronous={'FULL' if sync == 'full' else 'NORMAL'}")
    checkpointer = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10.0)
    return SqliteConnection(raw, "?", (sqlite3.IntegrityError,), checkpointer)


def connect_postgres(url: str) -> Connection:
    import psycopg

    raw = psycopg.connect(url, autocommit=True)
    return PostgresConnection(raw, "%s", (psycopg.IntegrityError,))
