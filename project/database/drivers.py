"""One read-only session per database kind: Postgres (psycopg), MariaDB/MySQL (PyMySQL), SQLite.

Each backend opens a session that is read-only on the server's side (a READ ONLY transaction that
is rolled back; SQLite: a `mode=ro` open with `query_only` and an authorizer), with a time limit
enforced by the server (`statement_timeout`, `max_statement_time`/`max_execution_time`; SQLite: a
progress handler) and a row limit that never fetches more than asked.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import psycopg
import pymysql
from psycopg import sql as pgsql

from project.database.statement import Dialect

Rows = list[tuple[Any, ...]]
_PG_TABLES = """
SELECT CASE WHEN table_schema = 'public' THEN table_name ELSE table_schema || '.' || table_name END
FROM information_schema.tables
WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1
"""
_PG_COLUMNS = """
SELECT c.column_name, c.data_type, c.is_nullable = 'YES', c.column_default,
       EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
               AND a.attnum = ANY (i.indkey)
               WHERE i.indrelid = %(oid)s::regclass AND i.indisprimary AND a.attname = c.column_name)
FROM information_schema.columns c
WHERE c.table_schema = %(schema)s AND c.table_name = %(table)s ORDER BY c.ordinal_position
"""
_PG_DEFINITION = """
SELECT 'CONSTRAINT ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = %(oid)s::regclass
UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = %(schema)s AND tablename = %(table)s
"""
_MYSQL_COLUMNS = """
SELECT column_name, column_type, is_nullable = 'YES', column_default, column_key = 'PRI'
FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = %s
ORDER BY ordinal_position
"""


class DatabaseError(RuntimeError):
    """A connection or query failed; the message is safe to show the model (no credentials)."""


class QueryTimeout(Exception):
    """The server (or SQLite's progress handler) stopped a query at the time limit."""


class Session(Protocol):
    """The three operations the tools need, on one open read-only session."""

    def tables(self) -> list[str]: ...
    def schema(self, table: str) -> tuple[list[dict[str, Any]], str]: ...
    def query(self, statement: str, limit: int) -> tuple[list[str], Rows]: ...


class Backend(Protocol):
    """Opens sessions for one kind of database."""

    dialect: Dialect

    def open(self, url: str, timeout: float) -> Any: ...


def backend_for(url: str) -> Backend:
    """The backend for a URL's scheme: postgresql://, mysql:// or mariadb://, sqlite:///path."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("postgres", "postgresql"):
        return _Postgres()
    if scheme in ("mysql", "mariadb"):
        return _MySQL()
    if scheme == "sqlite":
        return _SQLite()
    raise ValueError(f"unsupported database URL scheme {scheme!r} (postgresql, mysql, mariadb, sqlite)")


def is_driver_error(exc: BaseException) -> bool:
    """Whether `exc` comes from one of the database drivers."""
    return isinstance(exc, sqlite3.Error | psycopg.Error | pymysql.Error)


def describe(exc: BaseException) -> str:
    """The first line of a driver error, without the connection string."""
    args = exc.args
    text = str(args[1]) if isinstance(exc, pymysql.Error) and len(args) > 1 else str(exc)
    return (text.strip().splitlines() or [""])[0][:500]


def _columns(rows: Rows) -> list[dict[str, Any]]:
    keys = ("name", "type", "nullable", "default", "primary_key")
    values = ((r[0], str(r[1]), bool(r[2]), _text(r[3]), bool(r[4])) for r in rows)
    return [dict(zip(keys, v, strict=True)) for v in values]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class _Postgres:
    dialect: Dialect = "postgres"

    @contextmanager
    def open(self, url: str, timeout: float) -> Iterator[_PostgresSession]:
        with psycopg.connect(url, connect_timeout=max(1, int(timeout)), autocommit=False) as conn:
            conn.read_only = True
            try:
                with conn.cursor() as cur:
                    cur.execute(pgsql.SQL("SET LOCAL statement_timeout = {}").format(int(timeout * 1000)))
                yield _PostgresSession(conn)
            except psycopg.errors.QueryCanceled as exc:
                raise QueryTimeout() from exc
            finally:
                conn.rollback()


class _PostgresSession:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def tables(self) -> list[str]:
        with self._conn.cursor() as cur:
            return [r[0] for r in cur.execute(_PG_TABLES).fetchall()]

    def schema(self, table: str) -> tuple[list[dict[str, Any]], str]:
        schema, _, name = table.rpartition(".")
        schema = schema or "public"
        oid = pgsql.Identifier(schema, name).as_string(self._conn)
        params = {"schema": schema, "table": name, "oid": oid}
        with self._conn.cursor() as cur:
            columns = _columns(cur.execute(_PG_COLUMNS, params).fetchall())
            definition = "\n".join(r[0] for r in cur.execute(_PG_DEFINITION, params).fetchall())
        return columns, definition

    def query(self, statement: str, limit: int) -> tuple[list[str], Rows]:
        first = statement.lstrip("( \n\t").split(None, 1)[0].upper()
        # A server-side cursor fetches only `limit` rows; DECLARE takes only SELECT/WITH queries.
        named = first in ("SELECT", "WITH")
        with self._conn.cursor(name="forgebot_readonly") if named else self._conn.cursor() as cur:
            cur.execute(statement)
            names = [d.name for d in cur.description or []]
            return names, list(cur.fetchmany(limit)) if cur.description else []


class _MySQL:
    dialect: Dialect = "mysql"

    @contextmanager
    def open(self, url: str, timeout: float) -> Iterator[_MySQLSession]:
        parts = urllib.parse.urlsplit(url)
        conn = pymysql.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=urllib.parse.unquote(parts.username or ""),
            password=urllib.parse.unquote(parts.password or ""),
            database=parts.path.lstrip("/") or None,
            connect_timeout=max(1, int(timeout)),
            read_timeout=int(timeout) + 5,  # the client's backstop if the server ignores its limit
            autocommit=False,
        )
        try:
            with conn.cursor() as cur:
                _limit_time(cur, timeout)
                cur.execute("START TRANSACTION READ ONLY")
            yield _MySQLSession(conn)
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] in (1969, 3024):  # MariaDB / MySQL: statement time exceeded
                raise QueryTimeout() from exc
            raise
        finally:
            conn.rollback()
            conn.close()


def _limit_time(cur: Any, timeout: float) -> None:
    try:
        cur.execute("SET SESSION max_statement_time = %s", (timeout,))  # MariaDB, seconds
    except pymysql.err.MySQLError:
        cur.execute("SET SESSION max_execution_time = %s", (int(timeout * 1000),))  # MySQL, ms


class _MySQLSession:
    def __init__(self, conn: pymysql.connections.Connection[Any]) -> None:
        self._conn = conn

    def tables(self) -> list[str]:
        with self._conn.cursor() as cur:
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
            return sorted(str(r[0]) for r in cur.fetchall())

    def schema(self, table: str) -> tuple[list[dict[str, Any]], str]:
        with self._conn.cursor() as cur:
            cur.execute(_MYSQL_COLUMNS, (table,))
            columns = _columns(list(cur.fetchall()))
            # `table` is one of tables() (checked by the caller); quoting guards the rest.
            cur.execute("SHOW CREATE TABLE `{}`".format(table.replace("`", "``")))
            row = cur.fetchone()
        return columns, str(row[1]) if row else ""

    def query(self, statement: str, limit: int) -> tuple[list[str], Rows]:
        with self._conn.cursor() as cur:
            # The server stops sending after `limit` rows, so the buffered cursor stays small.
            cur.execute("SET SESSION sql_select_limit = %s", (limit,))
            cur.execute(statement)
            names = [d[0] for d in cur.description or []]
            return names, list(cur.fetchmany(limit))


class _SQLite:
    dialect: Dialect = "sqlite"

    @contextmanager
    def open(self, url: str, timeout: float) -> Iterator[_SQLiteSession]:
        path = Path(url.removeprefix("sqlite://"))
        if not path.is_file():
            raise DatabaseError(f"no SQLite database at {path}")
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=timeout)
        deadline = time.monotonic() + timeout
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            conn.execute("PRAGMA query_only = ON")
            yield _SQLiteSession(conn)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise QueryTimeout() from exc
            raise
        finally:
            conn.close()


# What a read-only query may do: read, select, call functions. Everything else is denied.
_SQLITE_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33}  # 33: RECURSIVE


def _sqlite_authorizer(action: int, *_args: object) -> int:
    return sqlite3.SQLITE_OK if action in _SQLITE_ALLOWED else sqlite3.SQLITE_DENY


class _SQLiteSession:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def tables(self) -> list[str]:
        rows = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
        return [r[0] for r in rows]

    def schema(self, table: str) -> tuple[list[dict[str, Any]], str]:
        info = self._conn.execute("SELECT * FROM pragma_table_info(?)", (table,)).fetchall()
        columns = _columns([(r[1], r[2], not r[3], r[4], r[5] > 0) for r in info])
        ddl = self._conn.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL", (table,)
        )
        return columns, "\n".join(r[0] for r in ddl)

    def query(self, statement: str, limit: int) -> tuple[list[str], Rows]:
        self._conn.set_authorizer(_sqlite_authorizer)
        try:
            cur = self._conn.execute(statement)
            names = [d[0] for d in cur.description or []]
            return names, cur.fetchmany(limit)
        finally:
            self._conn.set_authorizer(None)
