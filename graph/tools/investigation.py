"""The analyzer's read-only tool set over one checkout, its task index and an optional database.

Search and file tools always; the code-graph tools and semantic search when the task index is open;
the database tools only when the repository's `.forgebot.yml` names a connection the server
configures. `tools_for("analyzer", …)` then keeps what the role may use, so a write tool offered
here by mistake would never reach the model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from langchain_core.tools import BaseTool

from graph.tools.code import graph_tools, search_tools
from graph.tools.database import ReadOnlyDatabase
from graph.tools.files import file_tools
from graph.tools.functiontool import function_tool
from project.index.db import Connection, connect
from project.index.embed import Embedder


@contextlib.contextmanager
def open_index(path: str) -> Iterator[Connection | None]:
    """The task index for a role's tools, open for the role's run; None when the task has none."""
    if not path or not Path(path).is_file():
        yield None
        return
    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()


def database_tools(database: ReadOnlyDatabase) -> dict[str, BaseTool]:
    """list_database_tables, get_table_schema and run_readonly_sql over one configured connection."""

    def list_database_tables() -> str:
        """Tables and views of the project's database."""
        return "\n".join(database.list_database_tables()) or "no tables"

    def get_table_schema(table: str) -> str:
        """Columns, constraints and indexes of one table (a name from list_database_tables)."""
        return database.get_table_schema(table).model_dump_json()

    def run_readonly_sql(sql: str) -> str:
        """Run one read-only statement (SELECT, WITH, EXPLAIN, SHOW); rows are limited."""
        return database.run_readonly_sql(sql).model_dump_json()

    funcs = (list_database_tables, get_table_schema, run_readonly_sql)
    return {f.__name__: function_tool(f) for f in funcs}


def investigation_tools(
    root: Path, conn: Connection | None, database: ReadOnlyDatabase | None = None, embedder: Embedder | None = None
) -> dict[str, BaseTool]:
    """Every read-only tool available for this checkout, by name (graph tools win over file fallbacks)."""
    tools = {**file_tools(root), **search_tools(root, conn, embedder)}
    if conn is not None:
        tools.update(graph_tools(root, conn))
    if database is not None:
        tools.update(database_tools(database))
    return tools
