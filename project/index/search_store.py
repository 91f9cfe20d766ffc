"""Search tables in the index database: chunks, their FTS5 terms and their sqlite-vec vectors.

They live beside the code graph's tables (one file per index, opened by `db.connect`), keyed by file
path and content hash. Vectors are kept as sign bits in a vec0 table (`chunks_vec`, for the scan)
and as float32 in `chunk_vectors` (for exact rescoring). `search_meta` records the embedding model
and dimension: a change of either drops the vectors and embeds every chunk again. Within one model,
a chunk keeps its vector while its content hash is unchanged, so a patch re-embeds only what it
touched.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from project.index.chunks import Chunk, lexical_terms, name_words, owner_name, words
from project.index.db import Connection
from project.index.embed import Embedder

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS search_files (path TEXT PRIMARY KEY, content_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    chunk_hash TEXT NOT NULL,
    symbol TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    signature TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    snippet TEXT NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunk_vectors (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks (path);
CREATE INDEX IF NOT EXISTS chunks_by_name ON chunks (name COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks (embedded) WHERE embedded = 0;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (
    name, path, body, tokenize = 'porter unicode61', content = '', contentless_delete = 1
);
"""


def ensure_schema(conn: Connection, embedder: Embedder | None) -> bool:
    """Create the tables; with an embedder, (re)create the vector table. True if vectors were reset."""
    conn.executescript(_SCHEMA)
    meta = read_meta(conn)
    if meta.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise RuntimeError(
            f"search index schema {meta['schema_version']} is not {SCHEMA_VERSION}; rebuild it"
        )
    write_meta(conn, schema_version=SCHEMA_VERSION)
    if embedder is None:
        return False
    wanted = {"model_id": embedder.model_id, "dimension": str(embedder.dimension)}
    if all(meta.get(key) == value for key, value in wanted.items()) and _has_vectors(conn):
        return False
    bits = -(-int(embedder.dimension) // 8) * 8  # bit vectors come in whole bytes
    with conn:
        conn.execute("DROP TABLE IF EXISTS chunks_vec")
        conn.execute("DELETE FROM chunk_vectors")
        conn.execute(f"CREATE VIRTUAL TABLE chunks_vec USING vec0 (embedding bit[{bits}])")
        conn.execute("UPDATE chunks SET embedded = 0")
    write_meta(conn, **wanted)
    return True


# search_meta key of an index whose full-text tables are not built yet (a large repository's base
# starts as its code graph alone, `basecomplete`): its value says why
LEXICAL_PENDING = "lexical_pending"


def lexical_pending(conn: Connection) -> str:
    """Why this index's full-text tables are still empty, or "" when they are built."""
    return read_meta(conn).get(LEXICAL_PENDING, "")


def _has_vectors(conn: Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    return row is not None


def tune_reader(conn: Connection, *, cache_mb: int = 256) -> None:
    """Give a long-lived search connection a page cache and memory map that hold the hot index.

    With SQLite's default 2 MB cache, every query at 100k chunks re-read FTS and vector pages and
    hybrid p99 was ~300 ms on our machines; with 256 MB it was ~50 ms (docs/search.md).
    """
    conn.execute(f"PRAGMA cache_size = {-1024 * int(cache_mb)}")
    conn.execute(f"PRAGMA mmap_size = {1024 * 1024 * int(cache_mb) * 4}")


def read_meta(conn: Connection) -> dict[str, str]:
    return {row[0]: row[1] for row in conn.execute("SELECT key, value FROM search_meta")}


def write_meta(conn: Connection, **values: str) -> None:
    with conn:
        conn.executemany(
            "INSERT INTO search_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )


@contextlib.contextmanager
def transaction(conn: Connection) -> Iterator[None]:
    """Commit at the end unless the caller's transaction is open: then the caller commits.

    A base index writes 10,000 files' chunks; one commit per file cost a quarter of its build.
    """
    if conn.in_transaction:
        yield
        return
    with conn:
        yield


def indexed_files(conn: Connection) -> dict[str, str]:
    """Path -> content hash of every file the search tables hold."""
    return {row[0]: row[1] for row in conn.execute("SELECT path, content_hash FROM search_files")}


def replace_file(conn: Connection, path: str, content_hash: str, chunks: Sequence[Chunk]) -> int:
    """Store `chunks` as the whole of `path`; chunks whose hash is unchanged keep their row and vector.

    Returns how many chunks are new (and so wait for an embedding).
    """
    old = {
        row[1]: row[0] for row in conn.execute("SELECT id, chunk_hash FROM chunks WHERE path = ?", (path,))
    }
    added = 0
    with transaction(conn):
        for chunk in chunks:
            digest = chunk.content_hash
            if digest in old:
                conn.execute(
                    "UPDATE chunks SET start_line = ?, end_line = ? WHERE id = ?",
                    (chunk.start_line, chunk.end_line, old.pop(digest)),
                )
                continue
            _insert(conn, chunk, digest)
            added += 1
        _delete_rows(conn, list(old.values()))
        conn.execute(
            "INSERT INTO search_files (path, content_hash) VALUES (?, ?) "
            "ON CONFLICT (path) DO UPDATE SET content_hash = excluded.content_hash",
            (path, content_hash),
        )
    return added


def remove_file(conn: Connection, path: str) -> None:
    with transaction(conn):
        ids = [row[0] for row in conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        _delete_rows(conn, ids)
        conn.execute("DELETE FROM search_files WHERE path = ?", (path,))


# a chunk as its `chunks` row (without id) and its three full-text columns
ChunkRow = tuple[tuple[str, str, str, str, str, str, int, int, str], tuple[str, str, str]]


def chunk_row(chunk: Chunk, digest: str | None = None) -> ChunkRow:
    """What storing `chunk` writes; the costly part (hash, terms) needs no database, so a base
    index computes it in its parser processes (`add_file`)."""
    name_terms = f"{lexical_terms(chunk.name)} {name_words(chunk.name)} {words(owner_name(chunk.symbol))}"
    return (
        (chunk.path, digest or chunk.content_hash, chunk.symbol, chunk.kind, chunk.name, chunk.signature,
         chunk.start_line, chunk.end_line, chunk.text),
        (name_terms, lexical_terms(chunk.path.replace("/", " ")), lexical_terms(chunk.text)),
    )


def add_file(conn: Connection, path: str, content_hash: str, rows: Sequence[ChunkRow]) -> None:
    """Store the chunks of a file the search tables do not hold yet (a base index's first build).

    The ids are given, so both tables take the file's rows in one statement each (a base index
    writes tens of thousands of chunks: one statement per row was a third of this function's cost).
    """
    with transaction(conn):
        first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()[0]
        conn.executemany(
            "INSERT INTO chunks (id, path, chunk_hash, symbol, kind, name, signature, start_line, end_line, snippet)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(first + n, *row[0]) for n, row in enumerate(rows)],
        )
        conn.executemany(
            "INSERT INTO chunks_fts (rowid, name, path, body) VALUES (?, ?, ?, ?)",
            [(first + n, *row[1]) for n, row in enumerate(rows)],
        )
        conn.execute("INSERT INTO search_files (path, content_hash) VALUES (?, ?)", (path, content_hash))


def _insert(conn: Connection, chunk: Chunk, digest: str) -> None:
    _insert_row(conn, chunk_row(chunk, digest))


def _insert_row(conn: Connection, row: ChunkRow) -> None:
    cursor = conn.execute(
        "INSERT INTO chunks (path, chunk_hash, symbol, kind, name, signature, start_line, end_line, snippet)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        row[0],
    )
    conn.execute("INSERT INTO chunks_fts (rowid, name, path, body) VALUES (?, ?, ?, ?)", (cursor.lastrowid, *row[1]))


def _delete_rows(conn: Connection, ids: list[int]) -> None:
    if not ids:
        return
    vectors = _has_vectors(conn)
    for chunk_id in ids:
        conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (chunk_id,))
        if vectors:
            conn.execute("DELETE FROM chunks_vec WHERE rowid = ?", (chunk_id,))
            conn.execute("DELETE FROM chunk_vectors WHERE id = ?", (chunk_id,))
    conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids])


def _row_chunk(row: Sequence[object]) -> Chunk:
    path, symbol, kind, name, signature, start, end, snippet = row
    return Chunk(
        str(path),
        int(str(start)),
        int(str(end)),
        str(symbol),
        str(kind),
        str(name),
        str(snippet),
        str(signature),
    )


def pending_chunks(conn: Connection) -> int:
    """How many chunks have no vector yet."""
    return int(conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0])


def embed_pending(
    conn: Connection, embedder: Embedder, *, batch_size: int = 256, stop: Callable[[], bool] | None = None,
    stored: Callable[[list[int], np.ndarray], None] | None = None,
) -> int:
    """Embed every chunk that has no vector yet (until `stop()` says so); returns how many were embedded.
    Each batch is committed with its vectors, then told to `stored` (its chunk ids and vectors): a stop,
    or an interrupt, keeps what was embedded, and the next call goes on from there."""
    done = 0
    while stop is None or not stop():
        rows = conn.execute(
            "SELECT id, path, symbol, kind, name, signature, start_line, end_line, snippet FROM chunks "
            "WHERE embedded = 0 ORDER BY id LIMIT ?",
            (batch_size,),
        ).fetchall()
        if not rows:
            return done
        vectors = embedder.embed([_row_chunk(tuple(row)[1:]).embed_text for row in rows])
        ids = [int(row[0]) for row in rows]
        store_vectors(conn, ids, vectors)
        done += len(rows)
        if stored is not None:
            stored(ids, vectors)
    return done


def store_vectors(conn: Connection, ids: Iterable[int], vectors: np.ndarray) -> None:
    """Keep each vector twice: float32 for exact scoring, sign bits in vec0 for the coarse scan.

    A full float scan of 100k vectors in vec0 took ~60 ms on our cores; the bit scan for 40
    candidates takes a fraction of that, and rescoring those exactly well under a millisecond.
    """
    with conn:
        for chunk_id, vector in zip(ids, vectors, strict=True):
            row = np.asarray(vector, dtype=np.float32)
            conn.execute("DELETE FROM chunks_vec WHERE rowid = ?", (chunk_id,))
            conn.execute(
                "INSERT INTO chunks_vec (rowid, embedding) VALUES (?, vec_bit(?))",
                (chunk_id, np.packbits(row > 0).tobytes()),
            )
            conn.execute(
                "INSERT OR REPLACE INTO chunk_vectors (id, embedding) VALUES (?, ?)",
                (chunk_id, row.tobytes()),
            )
            conn.execute("UPDATE chunks SET embedded = 1 WHERE id = ?", (chunk_id,))


def set_freshness(conn: Connection, *, commit: str, stale: Sequence[str], degraded: str = "") -> None:
    """Record what the index reflects; every search answer reports it."""
    write_meta(conn, indexed_commit=commit, stale_files=json.dumps(sorted(stale)), degraded=degraded)
