"""Read-only database tools against real SQLite, Postgres and MariaDB: writes refused, limits held."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from graph.tools.database import DatabaseError, ReadOnlyDatabase
from project.database.drivers import backend_for
from project.database.statement import StatementRefused, check_statement

ROWS = 500
SLOW_QUERY = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "postgres": "SELECT pg_sleep(3600)",
    "mysql": "SELECT SLEEP(3600)",
}


@dataclass
class Seeded:
    """A database URL with two fresh tables and a direct (writable) connection to check rows."""

    url: str
    users: str
    orders: str
    connect: Callable[[], Any]

    def count(self, table: str) -> int:
        conn = self.connect()
        try:
            cur = conn.cursor()
            cur.execute(f"SELECT count(*) FROM {table}")
            return int(cur.fetchone()[0])
        finally:
            conn.close()


def _seed(connect: Callable[[], Any], mark: str, serial: str, blob: str) -> tuple[str, str]:
    users, orders = f"fb_users_{uuid.uuid4().hex[:8]}", f"fb_orders_{uuid.uuid4().hex[:8]}"
    rows = [
        (f"u{i}@example.org", "x" * 3000 if i == 1 else None, b"\x89PNG" if i == 1 else None)
        for i in range(1, ROWS + 1)
    ]
    conn = connect()
    try:
        cur = conn.cursor()
        cur.execute(
            f"CREATE TABLE {users} (id {serial} PRIMARY KEY, email VARCHAR(100) NOT NULL UNIQUE,"
            f" note TEXT, avatar {blob})"
        )
        cur.execute(
            f"CREATE TABLE {orders} (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES {users}(id),"
            f" total DECIMAL(10,2) DEFAULT 0, placed DATE)"
        )
        cur.executemany(f"INSERT INTO {users} (email, note, avatar) VALUES ({mark}, {mark}, {mark})", rows)
        cur.execute(f"INSERT INTO {orders} (id, user_id, total, placed) VALUES (1, 1, 9.99, '2024-02-29')")
        conn.commit()
    finally:
        conn.close()
    return users, orders


def _drop(connect: Callable[[], Any], *tables: str) -> None:
    conn = connect()
    try:
        cur = conn.cursor()
        for table in tables:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        conn.commit()
    finally:
        conn.close()


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mariadb),
    ]
)
def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Seeded]:
    kind = request.param
    if kind == "sqlite":
        path = tmp_path / "app.db"
        connect: Callable[[], Any] = lambda: sqlite3.connect(path)  # noqa: E731
        url, mark, serial, blob = f"sqlite://{path}", "?", "INTEGER", "BLOB"
    elif kind == "postgres":
        url = request.getfixturevalue("postgres_url")
        connect, mark, serial, blob = lambda: psycopg.connect(url), "%s", "SERIAL", "BYTEA"
    else:
        url = request.getfixturevalue("mariadb_url")
        connect = lambda: pymysql.connect(host="127.0.0.1", user="root", password="", database="test")  # noqa: E731
        mark, serial, blob = "%s", "INTEGER AUTO_INCREMENT", "BLOB"
    users, orders = _seed(connect, mark, serial, blob)
    yield Seeded(url, users, orders, connect)
    _drop(connect, orders, users)


def test_tables_are_listed(seeded: Seeded) -> None:
    tables = ReadOnlyDatabase(seeded.url).list_database_tables()
    assert seeded.users in tables and seeded.orders in tables


def test_schema_has_columns_keys_and_constraints(seeded: Seeded) -> None:
    schema = ReadOnlyDatabase(seeded.url).get_table_schema(seeded.orders)
    columns = {c.name: c for c in schema.columns}
    assert list(columns) == ["id", "user_id", "total", "placed"]
    assert columns["id"].primary_key and not columns["user_id"].primary_key
    assert columns["user_id"].nullable and "0" in (columns["total"].default or "")
    assert seeded.users in schema.definition and "REFERENCES" in schema.definition.upper()


def test_unknown_table_is_an_error_listing_the_tables(seeded: Seeded) -> None:
    with pytest.raises(DatabaseError, match=f"no table named 'nope'; tables: .*{seeded.users}"):
        ReadOnlyDatabase(seeded.url).get_table_schema("nope")


def test_rows_are_limited_and_truncation_is_said(seeded: Seeded) -> None:
    db = ReadOnlyDatabase(seeded.url, max_rows=10, max_cell_chars=100)
    result = db.run_readonly_sql(f"SELECT id, email, note, avatar FROM {seeded.users} ORDER BY id")
    assert result.columns == ("id", "email", "note", "avatar")
    assert len(result.rows) == 10 and result.truncated
    first = result.rows[0]
    assert first[:2] == (1, "u1@example.org")
    assert first[2] == "x" * 100 + "..." and first[3] == "<4 bytes>"
    counted = db.run_readonly_sql(f"SELECT count(*) AS n FROM {seeded.users};")
    assert counted.rows == ((ROWS,),) and not counted.truncated


def test_values_become_plain_json_cells(seeded: Seeded) -> None:
    result = ReadOnlyDatabase(seeded.url).run_readonly_sql(f"SELECT total, placed FROM {seeded.orders}")
    assert result.rows[0] in (("9.99", "2024-02-29"), (9.99, "2024-02-29"))  # SQLite has no DECIMAL type


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO {users} (email) VALUES ('evil@example.org')",
        "UPDATE {users} SET email = 'x'",
        "DELETE FROM {users}",
        "DROP TABLE {users}",
        "CREATE TABLE fb_evil (a INTEGER)",
        "SELECT 1; DELETE FROM {users}",
        "WITH gone AS (DELETE FROM {users} RETURNING id) SELECT count(*) FROM gone",
        "SELECT * FROM {users} FOR UPDATE",
    ],
)
def test_write_statements_are_refused(seeded: Seeded, statement: str) -> None:
    with pytest.raises(DatabaseError, match="refused"):
        ReadOnlyDatabase(seeded.url).run_readonly_sql(statement.format(users=seeded.users))
    assert seeded.count(seeded.users) == ROWS


def test_the_session_itself_is_read_only_when_the_check_is_bypassed(seeded: Seeded) -> None:
    backend = backend_for(seeded.url)
    with pytest.raises(Exception) as caught, backend.open(seeded.url, 5.0) as session:
        session.query(f"DELETE FROM {seeded.users}", 10)
    assert "read" in str(caught.value).lower() or "not authorized" in str(caught.value)
    assert seeded.count(seeded.users) == ROWS


def test_a_slow_query_is_stopped_at_the_time_limit(seeded: Seeded) -> None:
    """The queries never end on their own (an hour's sleep, an endless recursion): an answer at all,
    the time-limit error, is the stop."""
    db = ReadOnlyDatabase(seeded.url, timeout_seconds=0.5)
    with pytest.raises(DatabaseError, match="time limit of 0.5s"):
        db.run_readonly_sql(SLOW_QUERY[db.dialect])
    assert db.run_readonly_sql("SELECT 1").rows == ((1,),)  # the next call gets a fresh session


def test_explain_and_show_are_allowed(seeded: Seeded) -> None:
    db = ReadOnlyDatabase(seeded.url)
    plan = db.run_readonly_sql(f"EXPLAIN SELECT * FROM {seeded.users} WHERE id = 1")
    assert plan.rows
    if db.dialect != "sqlite":
        assert db.run_readonly_sql("SHOW TABLES" if db.dialect == "mysql" else "SHOW server_version").rows


@pytest.mark.postgres
def test_postgres_errors_never_show_the_password(postgres_url: str) -> None:
    db = ReadOnlyDatabase("postgresql://postgres:s3cret-pw@127.0.0.1:1/test", timeout_seconds=1)
    with pytest.raises(DatabaseError) as caught:
        db.list_database_tables()
    assert "s3cret-pw" not in str(caught.value)


@pytest.mark.mariadb
def test_mariadb_errors_never_show_the_password(mariadb_url: str) -> None:
    db = ReadOnlyDatabase("mysql://root:s3cret-pw@127.0.0.1:3306/test", timeout_seconds=1)
    with pytest.raises(DatabaseError) as caught:
        db.list_database_tables()
    assert "s3cret-pw" not in str(caught.value) and "Access denied" in str(caught.value)


def test_a_missing_sqlite_file_and_an_unknown_scheme_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="no SQLite database"):
        ReadOnlyDatabase(f"sqlite://{tmp_path}/absent.db").list_database_tables()
    assert not (tmp_path / "absent.db").exists()  # a read-only open never creates the file
    with pytest.raises(ValueError, match="unsupported database URL scheme 'mongodb'"):
        ReadOnlyDatabase("mongodb://localhost/test")


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        ("postgres", "select 1;", "select 1"),
        ("postgres", "  SELECT 1 -- trailing; comment\n", "SELECT 1"),
        ("postgres", "select $$;delete$$", "select $$;delete$$"),
        ("postgres", "with x as (select 1) select * from x", "with x as (select 1) select * from x"),
        ("mysql", "select 1 # ; drop table t", "select 1"),
        ("mysql", "SHOW TABLES", "SHOW TABLES"),
        # As MySQL reads it: one string literal, so nothing follows the SELECT.
        ("mysql", "SELECT 'a\\'; DROP TABLE x; -- '", "SELECT 'a\\'; DROP TABLE x; -- '"),
        ("sqlite", "select \"update\", 'delete' from t /* ; */", "select \"update\", 'delete' from t"),
        ("mysql", "select 1 /* plain */ from t", "select 1 /* plain */ from t"),
        ("mysql", "select 1 --\tnote\nfrom t", "select 1 --\tnote\nfrom t"),
        ("postgres", "select 1--x\nfrom t", "select 1--x\nfrom t"),  # a comment in Postgres
    ],
)
def test_read_only_statements_pass_the_check(dialect: Any, sql: str, expected: str) -> None:
    assert check_statement(sql, dialect) == expected


@pytest.mark.parametrize(
    ("dialect", "sql", "reason"),
    [
        ("postgres", "", "empty"),
        ("postgres", "select 1; select 2", "one statement"),
        ("postgres", "SELECT 'a\\'; DROP TABLE x; --'", "one statement"),  # no backslash escape in PG
        ("postgres", "SELECT E'a\\'; DROP TABLE x", "unterminated"),  # E'' strings do escape
        ("mysql", "SELECT 'a\\'; DROP TABLE x", "unterminated"),  # MySQL strings escape too
        ("mysql", "select * into outfile '/tmp/x' from t", "INTO"),
        ("postgres", "explain analyze delete from t", "ANALYZE"),
        ("postgres", "select pg_read_file('/etc/passwd')", "pg_read_file"),
        ("mysql", "select load_file('/etc/passwd')", "load_file"),
        ("sqlite", "attach database '/tmp/x' as x", "only SELECT"),
        ("sqlite", "pragma writable_schema = 1", "only SELECT"),
        ("postgres", "select * from t for share", "row locks"),
        ("postgres", "select 'unterminated", "unterminated"),
        ("postgres", "select 1 /* open", "unterminated"),
        ("postgres", "select 1" + " " * 20_000, "longer than"),
        # MySQL and MariaDB run what is inside /*! */ and /*M! */: code, not comments
        ("mysql", "SELECT 1 /*!50000 INTO OUTFILE '/tmp/x' */ FROM DUAL", "the server executes"),
        ("mysql", "SELECT 1 /*M! FOR UPDATE */ FROM t", "the server executes"),
        ("mysql", "SELECT 1 /*!; DROP TABLE t */ FROM t", "the server executes"),
        ("mysql", "SELECT /*+ SET_VAR(sort_buffer_size = 1) */ 1 FROM t", "the server executes"),
        # without a space after it, MySQL's `--` is two minus signs and what follows is code
        ("mysql", "SELECT 1--1 INTO OUTFILE '/tmp/x'\n FROM DUAL", "INTO"),
    ],
)
def test_other_statements_are_refused(dialect: Any, sql: str, reason: str) -> None:
    with pytest.raises(StatementRefused, match=reason):
        check_statement(sql, dialect)
