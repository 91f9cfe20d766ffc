"""The rest of a large repository's base index, built after its first task has started.

A task needs the code graph before it investigates; the full-text tables and the project memory
(documents and history) it can wait for. On a repository of thousands of files they cost as much as
the graph again, so `taskindex.build_base(..., defer_from=N)` gives a large checkout its graph alone
(`<commit>.graph.db`) and the task starts on a copy of it. Here a background thread makes the whole
base `<commit>.db` from that graph: the chunks and their full-text terms (from the checkout's files,
each checked against the blob id the graph stored), then the memory. The file appears under its
final name only when complete; a file lock keeps two workers from building it twice.

A task index copied from the graph adopts the rest when it is there (`adopt`, before each search):
the base's search tables are copied whole (the full-text index too, page by page: nothing is
tokenised again), its memory joins the discussions the task took in, and the files the task changed
since are chunked again from its own worktree. Until then a search answers from the definitions'
names and says why (`search.definition_search`). The vectors are built from the whole base, so they
follow it (`basevectors`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from project.index import basevectors, memory, search_store, taskindex
from project.index.db import Connection, build_new, connect
from project.index.memory_history import MAX_COMMITS

log = logging.getLogger(__name__)

# From this many source files a task starts on the graph alone: below it the whole base takes a few
# seconds (about 1,000 files a second of full-text and memory on our cores), not worth a second step.
DEFER_FROM_FILES = 1000
# and from this many commits to remember in a repository's first base (`taskindex.build_base`): about
# 3 s of history on composer's PHP, 30 s on sympy's large Python files
DEFER_FROM_COMMITS = 1000
_GRAPH = ".graph"
_lock = threading.Lock()
_running: dict[Path, threading.Event] = {}


def whole_path(graph: Path) -> Path:
    """The whole base that the graph-only base `graph` (`<commit>.graph.db`) becomes."""
    return graph.with_name(graph.name.replace(f"{_GRAPH}.db", ".db"))


def is_graph_only(base: Path) -> bool:
    return base.name.endswith(f"{_GRAPH}.db")


def complete(graph: Path, root: Path, *, memory_commits: int = MAX_COMMITS) -> Path:
    """Make the whole base from `graph` and the checkout at `root` (blocking); return its path."""
    target = whole_path(graph)

    def fill(conn: Connection) -> None:
        with conn:
            conn.execute("DELETE FROM search_meta WHERE key = ?", (search_store.LEXICAL_PENDING,))
        paths = [row[0] for row in conn.execute("SELECT path FROM files ORDER BY path")]
        taskindex.index_files(conn, root, paths)
        search_store.set_freshness(conn, commit=taskindex.commit_or_none(root),
                                   stale=taskindex.index_stale_files(conn))
        taskindex.remember(conn, root, memory_commits, taskindex.newest_base(target),
                           target.parent / taskindex.HISTORY_JOURNAL)

    build_new(target, fill, partial=".completing", seed=graph)
    return target


def start(graph: Path, root: Path, *, memory_commits: int = MAX_COMMITS,
          then: Callable[[Path], object] | None = None) -> threading.Event:
    """`complete` in a daemon thread (unless the whole base exists or is being built here), then
    `then(whole base)`; the event is set when both have returned."""
    target = whole_path(graph)
    with _lock:
        running = _running.get(target)
        if running is not None:
            return running
        done = threading.Event()
        _running[target] = done

    def run() -> None:
        try:
            whole = complete(graph, root, memory_commits=memory_commits)
            if then is not None:
                then(whole)
        except Exception as exc:  # the boundary of a background thread: the task keeps its graph
            log.warning("completing the base %s failed: %s", graph, exc)
        finally:
            with _lock:
                _running.pop(target, None)
            done.set()

    threading.Thread(target=run, daemon=True, name=f"base-{graph.stem[:12]}").start()
    return done


def adopt(index: Path, root: Path) -> str:
    """Bring the whole base's search tables and memory into the task index at `index` when they are
    built; "" once it has them, else why not (said in the search answers)."""
    reader = connect(index, readonly=True)
    try:
        pending = search_store.lexical_pending(reader)
        graph = Path(search_store.read_meta(reader).get(basevectors.BASE_KEY, ""))
    finally:
        reader.close()
    if not pending:
        return ""
    whole = whole_path(graph)
    if not is_graph_only(graph) or not whole.is_file():
        return pending
    # Its own connection: the full-text table is dropped and made again, so every other connection
    # (the tools') re-reads the schema and finds the copied index, never a cached empty one.
    conn = connect(index)
    try:
        conn.execute("ATTACH DATABASE ? AS whole", (f"file:{whole}?mode=ro",))
        try:
            if conn.execute("SELECT 1 FROM whole.sqlite_master WHERE name = 'memory_items'").fetchone() is not None:
                memory.ensure_schema(conn, None)  # a script: it commits, so before the copy's transaction
            with conn:
                _copy_search(conn)
                _join_memory(conn)
                conn.execute("DELETE FROM search_meta WHERE key = ?", (search_store.LEXICAL_PENDING,))
        finally:
            conn.execute("DETACH DATABASE whole")
        search_store.write_meta(conn, **{basevectors.BASE_KEY: str(whole)})
        taskindex.index_files(conn, root, taskindex.index_stale_files(conn))  # the task's own edits
        commit = search_store.read_meta(conn).get("indexed_commit", "")
        search_store.set_freshness(conn, commit=commit, stale=taskindex.index_stale_files(conn))
    finally:
        conn.close()
    return ""


def _copy_search(conn: Connection) -> None:
    """The whole base's chunks and full-text index in place of the task's (its own edits are redone)."""
    schema = conn.execute("SELECT sql FROM whole.sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    conn.execute("DROP TABLE IF EXISTS main.chunks_fts")
    conn.execute(schema)
    shadows = [row[0] for row in conn.execute(
        "SELECT name FROM whole.sqlite_master WHERE type = 'table' AND name LIKE 'chunks\\_fts\\_%' ESCAPE '\\'")]
    for table in ("chunks", "chunk_vectors", "search_files", *shadows):
        conn.execute(f"DELETE FROM main.{table}")
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM whole.{table}")
    if conn.execute("SELECT 1 FROM main.sqlite_master WHERE name = 'chunks_vec'").fetchone() is not None:
        conn.execute("DELETE FROM main.chunks_vec")


def _join_memory(conn: Connection) -> None:
    """The base's documents and history beside the discussions the task took in at its start."""
    if conn.execute("SELECT 1 FROM whole.sqlite_master WHERE name = 'memory_items'").fetchone() is None:
        return
    offset = conn.execute("SELECT coalesce(max(id), 0) FROM main.memory_items").fetchone()[0]
    columns = "kind, source, anchor, title, body, symbols, paths, ts, content_hash"
    conn.execute(f"INSERT INTO main.memory_items (id, {columns}) SELECT id + ?, {columns} FROM whole.memory_items",
                 (offset,))
    conn.execute("INSERT INTO memory_fts (rowid, title, body) SELECT id + ?, title, body FROM whole.memory_items",
                 (offset,))
    for table in memory.HISTORY_TABLES:
        conn.execute(f"INSERT INTO main.{table} SELECT * FROM whole.{table}")
    conn.execute("INSERT OR IGNORE INTO main.memory_meta SELECT * FROM whole.memory_meta")
