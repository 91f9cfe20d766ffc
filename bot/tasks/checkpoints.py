"""The graph checkpointer: SQLite in the data dir by default, Postgres when a database URL is set.

One setting selects both stores: `database_url` (the intake's) puts the inbox, the task store and
the checkpoints in the same Postgres, so any worker on any machine can resume any task.

Checkpoints live in a database other processes can write to, so reading one must never run code:
the serializer has no pickle fallback and constructs only LangGraph's safe types plus the product's
own pydantic contracts (`graph.schemas`); anything else is refused when loaded.

The same database holds the tool-loop sessions' journals (`graph.runtime.journal`): `SqlJournal`
reads and writes them as JSON text through the checkpointer's own connection, so a session resumes
wherever its task's checkpoints are readable (any worker, with Postgres).
"""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any, NamedTuple

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import BaseModel

from foundation.settings import Settings
from foundation.sqlitewal import enable_wal


def _product_types() -> set[tuple[str, str]]:
    """(module, class) of every pydantic contract in `graph.schemas`: what graph state may hold."""
    import graph.schemas as schemas

    return {
        (cls.__module__, cls.__name__)
        for _, cls in inspect.getmembers(schemas, inspect.isclass)
        if issubclass(cls, BaseModel) and cls.__module__ == schemas.__name__
    }


def safe_serializer() -> JsonPlusSerializer:
    """Checkpoint serde that never unpickles and constructs only allow-listed types: LangGraph's own
    safe types (always allowed beside an explicit list) and the product's contracts."""
    return JsonPlusSerializer(pickle_fallback=False, allowed_json_modules=None,
                              allowed_msgpack_modules=tuple(sorted(_product_types())))


JOURNAL_TABLE = "forgebot_session_journal"
_JOURNAL_DDL = (f"CREATE TABLE IF NOT EXISTS {JOURNAL_TABLE} (thread_id TEXT NOT NULL, scope TEXT NOT NULL, "
                "doc TEXT NOT NULL, PRIMARY KEY (thread_id, scope))")


class SqlJournal:
    """The sessions' journals in the checkpointer's database: one JSON row per (thread, session scope)."""

    def __init__(self, saver: BaseCheckpointSaver[str]) -> None:
        self._saver = saver

    async def get(self, thread: str, scope: str) -> str | None:
        sql = f"SELECT doc FROM {JOURNAL_TABLE} WHERE thread_id = ? AND scope = ?"
        rows = await self._execute(sql, (thread, scope))
        return str(rows[0][0]) if rows else None

    async def put(self, thread: str, scope: str, doc: str) -> None:
        await self._execute(f"INSERT INTO {JOURNAL_TABLE} (thread_id, scope, doc) VALUES (?, ?, ?) "
                            "ON CONFLICT (thread_id, scope) DO UPDATE SET doc = excluded.doc", (thread, scope, doc))

    async def drop(self, thread: str) -> None:
        await self._execute(f"DELETE FROM {JOURNAL_TABLE} WHERE thread_id = ?", (thread,))

    async def _execute(self, sql: str, params: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """One statement on the saver's connection, under the saver's lock (it shares the connection)."""
        saver = self._saver
        if isinstance(saver, AsyncSqliteSaver):
            async with saver.lock:
                async with saver.conn.execute(sql, params) as cursor:
                    rows = [tuple(row) for row in await cursor.fetchall()]
                await saver.conn.commit()
            return rows
        import psycopg
        from psycopg.rows import tuple_row

        conn = getattr(saver, "conn", None)
        if not isinstance(conn, psycopg.AsyncConnection):
            raise TypeError(f"no session journal on a {type(saver).__name__}'s connection")
        async with saver.lock, conn.cursor(row_factory=tuple_row) as cursor:  # type: ignore[attr-defined]
            await cursor.execute(sql.replace("?", "%s"), params)  # the connection is in autocommit mode
            return list(await cursor.fetchall()) if cursor.description else []


_MIGRATED: set[str] = set()  # URLs this process has brought up to date
_MIGRATION_LOCK = 0x666F72676562  # pg_advisory_lock key ("forgeb")


async def _migrate(saver: Any, url: str) -> None:
    """Run the saver's migrations once per process, one process at a time.

    `AsyncPostgresSaver.setup` reads the schema version, then inserts each migration's number:
    two workers starting together both see "none yet" and the second insert fails. An advisory
    lock makes the check-then-migrate atomic across every worker on the database.
    """
    if url in _MIGRATED:
        return
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        # poll with try-lock: a session blocked inside pg_advisory_lock holds a snapshot, and the
        # migrations' CREATE INDEX CONCURRENTLY would wait for it forever
        while not await _try_lock(conn):
            await asyncio.sleep(0.1)
        try:
            await saver.setup()
            await conn.execute(_JOURNAL_DDL)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    _MIGRATED.add(url)


async def _try_lock(conn: Any) -> bool:
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (_MIGRATION_LOCK,))).fetchone()
    return bool(row and row[0])


@asynccontextmanager
async def open_checkpointer(settings: Settings) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """The configured checkpointer, tables created, with the safe serializer."""
    serde = safe_serializer()
    url = settings.database_url.get_secret_value() if settings.database_url else None
    if url:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(url, serde=serde) as saver:
            await _migrate(saver, url)
            yield saver
        return
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # WAL before LangGraph's own switch in `setup()`, which workers starting together would race
    await asyncio.to_thread(_wal_mode, settings.checkpoint_path)
    # `from_conn_string` takes no serializer, so the connection is opened here
    async with aiosqlite.connect(str(settings.checkpoint_path)) as conn:
        await conn.execute(_JOURNAL_DDL)
        await conn.commit()
        yield AsyncSqliteSaver(conn, serde=serde)


def _wal_mode(path: Path) -> None:
    with closing(sqlite3.connect(path, timeout=10.0)) as conn:
        enable_wal(conn)


async def delete_checkpoints(settings: Settings, thread_ids: list[str]) -> int:
    """Drop the checkpoints of finished tasks (retention); returns how many threads were dropped."""
    async with open_checkpointer(settings) as saver:
        journal = SqlJournal(saver)
        for thread_id in thread_ids:
            await saver.adelete_thread(thread_id)
            await journal.drop(thread_id)
    return len(thread_ids)


class Spent(NamedTuple):
    """What a task spent: tokens, cost in USD, and the models it called that have no price."""

    tokens: int
    cost_usd: float
    unpriced: tuple[str, ...] = ()


def most_spent(checkpointed: Spent, then: Mapping[str, Any] | None) -> Spent:
    """The larger of a task's checkpointed spend and what it had spent when a node failed (`then`: the
    checkpoint's spend and that node's calls, `Deps.spent_at_failure`), which no checkpoint holds."""
    if not then:
        return checkpointed
    usage = then.get("usage") or {}
    failed = Spent(int(usage.get("tokens", then.get("tokens")) or 0), float(usage.get("cost_usd") or 0.0),
                   tuple(str(m) for m in usage.get("unpriced") or ()))
    return failed if failed.tokens > checkpointed.tokens else checkpointed


async def spent(saver: BaseCheckpointSaver[str], task_id: str) -> Spent:
    """What a task spent, from its last checkpoint; nothing when it has none."""
    checkpoint = await saver.aget_tuple({"configurable": {"thread_id": task_id, "checkpoint_ns": ""}})
    values: dict[str, Any] = checkpoint.checkpoint.get("channel_values", {}) if checkpoint else {}
    usage = values.get("usage") or {}
    return Spent(int(values.get("tokens") or 0), float(usage.get("cost_usd") or 0.0),
                 tuple(str(m) for m in usage.get("unpriced") or ()))
