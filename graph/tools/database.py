"""Read-only database tools for investigation roles: list tables, a table's schema, read-only SQL.

Used when a repository's `.forgebot.yml` names a connection the server configures for that project
(the URL and its credentials live in the server's settings, never in the repository; `connection_for`
refuses a connection not bound to the project). Postgres, MariaDB/MySQL and
SQLite. Every query runs in a read-only transaction (SQLite: a read-only open, `query_only` and an
authorizer) after the statement check in `project.database.statement`, with a row limit and a time limit.
Messages never contain the URL.
"""

from __future__ import annotations

import datetime
import decimal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from foundation.forge import RepoRef
from foundation.settings import Settings
from project.database import drivers
from project.database.drivers import DatabaseError
from project.database.statement import Dialect, StatementRefused, check_statement
from project.repoconfig import RepoConfigError

Cell = str | int | float | bool | None
MAX_TABLES_LISTED = 50
__all__ = ["Column", "DatabaseError", "DatabaseRefused", "QueryResult", "ReadOnlyDatabase", "TableSchema",
           "connection_for"]


class DatabaseRefused(RepoConfigError):
    """`.forgebot.yml` names a connection this project may not use; the message is fit for its comment."""


def connection_for(settings: Settings, repo: RepoRef, name: str) -> str:
    """The URL of the connection `name` when the server binds it to `repo`; DatabaseRefused otherwise.

    `repo` is the repository as the forge resolved it, never a payload's names. A name the server
    does not know gets the same answer as one bound elsewhere, so a repository cannot learn which
    connections other projects have.
    """
    connection = settings.databases.get(name)
    keys = {f"{repo.forge}:{repo.project.lower()}", f"{repo.forge}:{repo.path.lower()}"}
    keys |= {f"{repo.forge}:{repo.id}"} if repo.id else set()
    keys |= {f"local:{repo.clone_url}"} if repo.forge == "local" else set()
    if connection is None or not keys & set(connection.projects):
        where = repo.clone_url if repo.forge == "local" else repo.path
        raise DatabaseRefused(
            f"`.forgebot.yml` names the database connection `{name}`, which this server does not provide to "
            f"{repo.forge} project {where}. An operator binds a connection to projects in `FORGEBOT_DATABASES` "
            f"(`projects`, e.g. `{repo.forge}:{where}`); otherwise remove `database:` from `.forgebot.yml`."
        )
    return connection.url.get_secret_value()


class Column(BaseModel):
    """One column as the database reports it."""

    name: str
    type: str
    nullable: bool
    default: str | None = None
    primary_key: bool = False


class TableSchema(BaseModel):
    """A table's columns plus its constraints and indexes as the database's own DDL text."""

    name: str
    columns: tuple[Column, ...]
    definition: str


class QueryResult(BaseModel):
    """Rows of a read-only query, at most the row limit; `truncated` says more existed."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    truncated: bool
    elapsed_ms: int


class ReadOnlyDatabase:
    """One configured connection; each call opens its own read-only session and closes it."""

    def __init__(
        self, url: str, *, max_rows: int = 200, timeout_seconds: float = 5.0, max_cell_chars: int = 1000
    ) -> None:
        self._backend = drivers.backend_for(url)
        self._url = url
        self.max_rows = max_rows
        self.timeout_seconds = timeout_seconds
        self.max_cell_chars = max_cell_chars

    @property
    def dialect(self) -> Dialect:
        """Which SQL dialect the statement check applies."""
        return self._backend.dialect

    def list_database_tables(self) -> list[str]:
        """Tables and views (Postgres: `schema.table` outside `public`)."""
        with self._session() as session:
            return session.tables()

    def get_table_schema(self, table: str) -> TableSchema:
        """Columns, constraints and indexes of `table`, which must be one of the listed tables."""
        with self._session() as session:
            known = session.tables()
            if table not in known:
                shown = ", ".join(known[:MAX_TABLES_LISTED])
                raise DatabaseError(f"no table named {table!r}; tables: {shown}")
            columns, definition = session.schema(table)
        return TableSchema(name=table, columns=tuple(Column(**c) for c in columns), definition=definition)

    def run_readonly_sql(self, sql: str) -> QueryResult:
        """Run one SELECT, WITH, EXPLAIN or SHOW statement; refuse anything else."""
        try:
            statement = check_statement(sql, self.dialect)
        except StatementRefused as exc:
            raise DatabaseError(f"refused: {exc}") from exc
        started = time.monotonic()
        with self._session() as session:
            columns, rows = session.query(statement, self.max_rows + 1)
        elapsed = int((time.monotonic() - started) * 1000)
        cells = tuple(tuple(self._cell(v) for v in row) for row in rows[: self.max_rows])
        return QueryResult(
            columns=tuple(columns), rows=cells, truncated=len(rows) > self.max_rows, elapsed_ms=elapsed
        )

    @contextmanager
    def _session(self) -> Iterator[drivers.Session]:
        try:
            with self._backend.open(self._url, self.timeout_seconds) as session:
                yield session
        except DatabaseError:
            raise
        except drivers.QueryTimeout as exc:
            raise DatabaseError(f"query exceeded the time limit of {self.timeout_seconds:g}s") from exc
        except Exception as exc:  # driver errors differ per backend; none may escape untranslated
            if not drivers.is_driver_error(exc):
                raise
            raise DatabaseError(f"{type(exc).__name__}: {drivers.describe(exc)}") from exc

    def _cell(self, value: Any) -> Cell:
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<{len(bytes(value))} bytes>"
        if isinstance(value, datetime.date | datetime.time | datetime.timedelta):
            text = value.isoformat() if not isinstance(value, datetime.timedelta) else str(value)
        elif isinstance(value, decimal.Decimal):
            text = str(value)
        else:
            text = str(value)
        return text if len(text) <= self.max_cell_chars else text[: self.max_cell_chars] + "..."
