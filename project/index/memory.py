"""Project memory: the memory of intent, kept in the repository's index beside the code.

Design documents and ADRs say *why*, commit messages say *when and what for*; a question like "where
was the lock timeout decided" is answered from them, and each answer carries the **entry points**
into the code graph — the symbols a document names or a commit touched — so the agent can go on to
callers and callees. Items are searched like code chunks: BM25 over FTS5 and cosine over the
configured embedder's vectors, fused with weighted reciprocal rank fusion.

Tables (in the index file, next to the graph's and search's):
    memory_items    one row per document section or commit: kind, source, title, body, symbols, hash
                    (a commit's symbols are named as at that commit: `entrypoints.at_head` says today's)
    memory_fts      contentless FTS5 over title and body
    memory_vectors  float32 vectors (exact cosine: a repository's memory is thousands of rows, not millions)
    memory_meta     the last commit indexed, the embedding model, what history could not read
    memory_touches, memory_moves, memory_links, memory_skipped: what each commit touched, renamed,
                    belongs to and could not be read (`memory_history`)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from project.index.db import Connection, connect
from project.index.embed import Embedder
from project.index.entrypoints import EntryPoint, at_head
from project.index.search import lexical_ranking
from project.index.symbol_history import ranked_commits

Kind = str  # "document" | "commit"

HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_touches (
    commit_sha TEXT NOT NULL, fqn TEXT NOT NULL, kind TEXT NOT NULL, path TEXT NOT NULL, old_path TEXT NOT NULL,
    lines INTEGER NOT NULL, change TEXT NOT NULL, old_start INTEGER, old_end INTEGER, new_start INTEGER,
    new_end INTEGER, words TEXT NOT NULL, ts REAL NOT NULL, merge INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_touches_fqn ON memory_touches (fqn);
CREATE INDEX IF NOT EXISTS memory_touches_commit ON memory_touches (commit_sha);
CREATE TABLE IF NOT EXISTS memory_moves (commit_sha TEXT NOT NULL, old_fqn TEXT NOT NULL, new_fqn TEXT NOT NULL,
                                         ts REAL NOT NULL);
CREATE INDEX IF NOT EXISTS memory_moves_old ON memory_moves (old_fqn);
CREATE INDEX IF NOT EXISTS memory_moves_new ON memory_moves (new_fqn);
CREATE TABLE IF NOT EXISTS memory_links (commit_sha TEXT NOT NULL, ref TEXT NOT NULL, via TEXT NOT NULL,
                                         PRIMARY KEY (commit_sha, ref, via));
CREATE TABLE IF NOT EXISTS memory_skipped (commit_sha TEXT NOT NULL, reason TEXT NOT NULL, whole INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS memory_skipped_commit ON memory_skipped (commit_sha);
"""
HISTORY_TABLES = ("memory_touches", "memory_moves", "memory_links", "memory_skipped")
# bumped when what history stores changes meaning: an older memory's commits are then read again
HISTORY_FORMAT = "3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memory_items (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    source TEXT NOT NULL,
    anchor TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    symbols TEXT NOT NULL,
    paths TEXT NOT NULL,
    ts REAL NOT NULL,
    content_hash TEXT NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memory_by_source ON memory_items (kind, source);
CREATE TABLE IF NOT EXISTS memory_vectors (id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5 (
    title, body, tokenize = 'porter unicode61', content = '', contentless_delete = 1
);
""" + HISTORY_SCHEMA
SNIPPET_CHARS = 400
RRF_K = 5
# a symbol's own history knows which commits changed it; text similarity only guesses
LEG_WEIGHTS = {"history": 2.0}


@dataclass(frozen=True)
class MemoryItem:
    """One thing to remember: a document section or a commit, with the symbols it concerns."""

    kind: Kind
    source: str  # document path, or commit sha
    anchor: str  # the section heading, or "" for a commit
    title: str
    body: str
    symbols: tuple[str, ...]  # fully qualified names in the code graph: the entry points
    paths: tuple[str, ...]  # files it concerns (a commit's touched files, a document's own path)
    ts: float  # commit time; 0 for documents
    content_hash: str


@dataclass(frozen=True)
class MemoryHit:
    kind: Kind
    source: str
    anchor: str
    title: str
    snippet: str
    symbols: tuple[str, ...]
    paths: tuple[str, ...]
    score: float
    legs: tuple[str, ...]
    # a commit's entry points as it named them, and today's names: kept, moved or gone
    entry_points: tuple[EntryPoint, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "source": self.source, "anchor": self.anchor, "title": self.title,
                "snippet": self.snippet, "symbols": list(self.symbols), "paths": list(self.paths),
                "score": round(self.score, 6), "legs": list(self.legs),
                "entry_points": [e.as_dict() for e in self.entry_points]}


def ensure_schema(conn: Connection, embedder: Embedder | None) -> None:
    """Create the tables; a different embedding model than the stored vectors' drops them."""
    conn.executescript(_SCHEMA)
    _history_format(conn)
    if embedder is None:
        return
    model = f"{embedder.model_id}:{embedder.dimension}"
    if read_meta(conn).get("model") != model:
        with conn:
            conn.execute("DELETE FROM memory_vectors")
            conn.execute("UPDATE memory_items SET embedded = 0")
            write_meta(conn, model=model)


def _history_format(conn: Connection) -> None:
    """Commits remembered by an older format (entry points read off HEAD's line numbers) are read again."""
    if read_meta(conn).get("history_format") == HISTORY_FORMAT:
        return
    with conn:
        commits = [str(r[0]) for r in conn.execute("SELECT source FROM memory_items WHERE kind = 'commit'")]
        remove_sources(conn, "commit", commits)
        for table in HISTORY_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM memory_meta WHERE key = 'last_commit'")
        write_meta(conn, history_format=HISTORY_FORMAT)


def present(conn: Connection) -> bool:
    """Whether this index file has a memory at all (an index built before memory existed has none)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_items'").fetchone() is not None


def adopt(conn: Connection, previous: Path) -> bool:
    """Start an empty memory from an older index's (the same repository at an earlier commit).

    The delta sync then reads only what changed since that index: documents whose blob changed,
    commits after its last one. Rows keep their vectors. False when there was nothing to adopt.
    """
    if conn.execute("SELECT 1 FROM memory_items LIMIT 1").fetchone() is not None or not previous.is_file():
        return False
    conn.execute("ATTACH DATABASE ? AS previous", (f"file:{previous}?mode=ro",))
    try:
        if conn.execute("SELECT 1 FROM previous.sqlite_master WHERE name = 'memory_items'").fetchone() is None:
            return False
        tables = [t for t in ("memory_items", "memory_vectors", "memory_meta", *HISTORY_TABLES) if conn.execute(
            "SELECT 1 FROM previous.sqlite_master WHERE name = ?", (t,)).fetchone() is not None]
        with conn:
            conn.execute("DELETE FROM memory_meta")
            for table in tables:
                conn.execute(f"INSERT INTO {table} SELECT * FROM previous.{table}")
            conn.execute("INSERT INTO memory_fts (rowid, title, body) SELECT id, title, body FROM memory_items")
    finally:
        conn.execute("DETACH DATABASE previous")
    _history_format(conn)
    return True


def read_meta(conn: Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM memory_meta")}


def write_meta(conn: Connection, **values: str) -> None:
    conn.executemany("INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                     "SET value = excluded.value", list(values.items()))


def hashes(conn: Connection, kind: Kind, source: str | None = None) -> dict[tuple[str, str], str]:
    """(source, anchor) → content hash of every stored item of `kind` (of one `source`, when given)."""
    if source is None:
        rows = conn.execute("SELECT source, anchor, content_hash FROM memory_items WHERE kind = ?", (kind,))
    else:
        rows = conn.execute("SELECT source, anchor, content_hash FROM memory_items WHERE kind = ? AND source = ?",
                            (kind, source))
    return {(str(r[0]), str(r[1])): str(r[2]) for r in rows}


def replace_source(conn: Connection, kind: Kind, source: str, items: Sequence[MemoryItem]) -> int:
    """Replace every item of one document (or commit) with `items`; unchanged sections keep their vectors."""
    old = {(str(r[1]), str(r[2])): int(r[0]) for r in conn.execute(
        "SELECT id, anchor, content_hash FROM memory_items WHERE kind = ? AND source = ?", (kind, source))}
    keep = {(item.anchor, item.content_hash) for item in items}
    _delete(conn, [row_id for key, row_id in old.items() if key not in keep])
    added = 0
    for item in items:
        if (item.anchor, item.content_hash) in old:
            continue
        cursor = conn.execute(
            "INSERT INTO memory_items (kind, source, anchor, title, body, symbols, paths, ts, content_hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item.kind, item.source, item.anchor, item.title, item.body, json.dumps(list(item.symbols)),
             json.dumps(list(item.paths)), item.ts, item.content_hash))
        conn.execute("INSERT INTO memory_fts (rowid, title, body) VALUES (?, ?, ?)",
                     (cursor.lastrowid, item.title, item.body))
        added += 1
    return added


def add_items(conn: Connection, items: Sequence[MemoryItem]) -> int:
    """Store items known to be new (a batch of commits never remembered) in two statements, not three per item."""
    if not items:
        return 0
    last = conn.execute("SELECT coalesce(max(id), 0) FROM memory_items").fetchone()[0]
    conn.executemany(
        "INSERT INTO memory_items (kind, source, anchor, title, body, symbols, paths, ts, content_hash)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(i.kind, i.source, i.anchor, i.title, i.body, json.dumps(list(i.symbols)), json.dumps(list(i.paths)), i.ts,
          i.content_hash) for i in items])
    conn.execute("INSERT INTO memory_fts (rowid, title, body) SELECT id, title, body FROM memory_items WHERE id > ?",
                 (last,))
    return len(items)


def remove_sources(conn: Connection, kind: Kind, sources: Iterable[str]) -> int:
    ids: list[int] = []
    for source in sources:
        ids += [int(r[0]) for r in conn.execute(
            "SELECT id FROM memory_items WHERE kind = ? AND source = ?", (kind, source))]
    _delete(conn, ids)
    return len(ids)


def _delete(conn: Connection, ids: list[int]) -> None:
    for row_id in ids:
        conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (row_id,))
        conn.execute("DELETE FROM memory_vectors WHERE id = ?", (row_id,))
        conn.execute("DELETE FROM memory_items WHERE id = ?", (row_id,))


def pending(conn: Connection) -> int:
    """How many items have no vector yet."""
    return int(conn.execute("SELECT count(*) FROM memory_items WHERE embedded = 0").fetchone()[0])


def embed_pending(
    conn: Connection, embedder: Embedder, *, batch_size: int = 64, stop: Callable[[], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed the items without a vector (new or changed ones), until `stop()` says so; returns how many
    (`progress` is told the count after each batch)."""
    done = 0
    while stop is None or not stop():
        rows = conn.execute("SELECT id, title, body FROM memory_items WHERE embedded = 0 LIMIT ?",
                            (batch_size,)).fetchall()
        if not rows:
            return done
        vectors = embedder.embed([f"{r[1]}\n{r[2]}"[:2000] for r in rows])
        with conn:
            for row, vector in zip(rows, vectors, strict=True):
                conn.execute("INSERT OR REPLACE INTO memory_vectors (id, embedding) VALUES (?, ?)",
                             (int(row[0]), np.asarray(vector, dtype=np.float32).tobytes()))
                conn.execute("UPDATE memory_items SET embedded = 1 WHERE id = ?", (int(row[0]),))
        done += len(rows)
        if progress is not None:
            progress(done)
    return done


def copy_vectors(conn: Connection, source: Path) -> int:
    """Give every item without a vector the vector `source` (an index of the same model) holds for the
    same content: a base's background vectors reach the task indexes copied from it, and an earlier
    commit's reach the next base, so only new or changed items are embedded."""
    reader = connect(source, readonly=True)
    try:
        if not present(reader):
            return 0
        wanted: dict[str, list[int]] = {}
        for row_id, digest in conn.execute("SELECT id, content_hash FROM memory_items WHERE embedded = 0"):
            wanted.setdefault(str(digest), []).append(int(row_id))
        if not wanted:
            return 0
        found: list[tuple[int, bytes]] = []
        cursor = reader.execute("SELECT i.content_hash, v.embedding FROM memory_items i "
                                "JOIN memory_vectors v ON v.id = i.id")
        for digest, blob in cursor:
            for row_id in wanted.pop(str(digest), []):
                found.append((row_id, bytes(blob)))
    finally:
        reader.close()
    with conn:
        for row_id, blob in found:
            conn.execute("INSERT OR REPLACE INTO memory_vectors (id, embedding) VALUES (?, ?)", (row_id, blob))
            conn.execute("UPDATE memory_items SET embedded = 1 WHERE id = ?", (row_id,))
    return len(found)


def count(conn: Connection) -> dict[str, int]:
    return {str(k): int(n) for k, n in conn.execute("SELECT kind, count(*) FROM memory_items GROUP BY kind")}


def _lexical(conn: Connection, query: str, limit: int) -> list[int]:
    """BM25 (title weighted twice) on the question's rarer terms, as code search does: scoring every
    commit that says "fix" or "test" cost a warm question tens of milliseconds and changed little."""
    return lexical_ranking(conn, query, limit, table="memory_fts", columns=(2.0, 1.0))


def _history_leg(conn: Connection, query: str, limit: int) -> list[int]:
    shas = ranked_commits(conn, query, limit)
    if not shas:
        return []
    marks = ",".join("?" * len(shas))
    ids = {str(r[0]): int(r[1]) for r in conn.execute(
        f"SELECT source, id FROM memory_items WHERE kind = 'commit' AND source IN ({marks})", shas)}
    return [ids[sha] for sha in shas if sha in ids]


def _vector(conn: Connection, embedder: Embedder, query: str, limit: int) -> list[int]:
    rows = conn.execute("SELECT id, embedding FROM memory_vectors").fetchall()
    if not rows:
        return []
    ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = matrix @ np.asarray(embedder.embed([query])[0], dtype=np.float32)
    top = np.argsort(-scores)[:limit]
    return [int(ids[i]) for i in top]


def search(conn: Connection, query: str, *, embedder: Embedder | None, limit: int = 10,
           kinds: Sequence[Kind] = ()) -> tuple[list[MemoryHit], list[str]]:
    """Hybrid memory search: hits (best first) and notes (e.g. which leg was absent)."""
    meta = read_meta(conn)
    # what history could not read, and where a lost commit object cut it, is said with every answer
    notes = [meta[key] for key in ("history_listing", "history_skipped") if meta.get(key)]
    depth = max(limit * 5, 50)
    rankings = {"lexical": _lexical(conn, query, depth)}
    named = _history_leg(conn, query, depth)
    if named:  # the question names a symbol: the commits of its history, the line asked about first
        rankings["history"] = named
    if embedder is None:
        notes.append("vector leg absent: no embedder configured; lexical memory search only")
    elif meta.get("model") not in (None, f"{embedder.model_id}:{embedder.dimension}"):
        notes.append(f"vector leg absent: memory embedded by {meta['model']}, not {embedder.model_id}")
    else:
        rankings["vector"] = _vector(conn, embedder, query, depth)
        if not rankings["vector"] and count(conn):
            notes.append("vector leg absent: memory not embedded yet")
    fused: dict[int, tuple[float, tuple[str, ...]]] = {}
    for leg, ids in rankings.items():
        for rank, row_id in enumerate(ids, start=1):
            score, legs = fused.get(row_id, (0.0, ()))
            fused[row_id] = (score + LEG_WEIGHTS.get(leg, 1.0) / (RRF_K + rank), (*legs, leg))
    hits: list[MemoryHit] = []
    for row_id, (score, legs) in sorted(fused.items(), key=lambda item: -item[1][0]):
        hit = _hit(conn, row_id, score, legs)
        if hit is None or (kinds and hit.kind not in kinds):
            continue
        hits.append(hit)
        if len(hits) >= limit:
            break
    return hits, notes


def _hit(conn: Connection, row_id: int, score: float, legs: tuple[str, ...]) -> MemoryHit | None:
    row = conn.execute("SELECT kind, source, anchor, title, body, symbols, paths, ts FROM memory_items WHERE id = ?",
                       (row_id,)).fetchone()
    if row is None:
        return None
    symbols: tuple[str, ...] = tuple(json.loads(row[5]))
    entry_points: tuple[EntryPoint, ...] = ()
    if row[0] == "commit":  # named as at the commit: today's names (and which are gone) are looked up now
        entry_points = tuple(at_head(conn, symbols, float(row[7])))
        symbols = tuple(dict.fromkeys(e.head for e in entry_points if e.status != "gone"))
    return MemoryHit(str(row[0]), str(row[1]), str(row[2]), str(row[3]), str(row[4])[:SNIPPET_CHARS], symbols,
                     tuple(json.loads(row[6])), score, legs, entry_points)
