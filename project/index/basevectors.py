"""The vector leg of a base index, built in the background and adopted by task indexes when ready.

Embedding every chunk of a large repository takes far longer than its graph and full-text tables
(docs/search.md has the figures), so a task must not wait for it. The base index
(`<commit>.db`, graph + lexical) is built first and tasks start on it. Next to it, one background
thread per worker process builds `<commit>.<model>.vectors.db`: a copy of the base carrying the
vectors of one model. Chunks whose text is unchanged since an earlier commit of the repository take
their vectors from that commit's vectors file, so only new chunks are embedded. The file appears
under its final name only when complete (rename), and a file lock keeps two workers from building
the same one. Every batch embedded is also kept by chunk hash in the repository's `<model>.kept.db`
until a build completes: a build stopped midway (the worker restarting, or a newer commit's build
taking over: one build per repository and model runs in a process) loses no embedding, and the next
build starts from what it kept. Before, the first vectors of a large repository had to be made in one
uninterrupted run of hours, and each new commit (each merge request's head under review) started
another full build beside the running ones.

A task index is a copy of the base without vectors. `adopt` gives it the vector leg once the
vectors file exists: vectors are copied by chunk content hash, and only the task's own new chunks
are embedded. Search tools call `state` before each query, so a task picks vectors up mid-run.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from project.index import memory, search_store
from project.index.db import Connection, build_new, connect
from project.index.embed import Embedder

log = logging.getLogger(__name__)

BASE_KEY = "base_index"  # search_meta key of a task index: the base it was copied from
_ADOPTED = "vectors_adopted"  # search_meta key: the model whose base vectors this index took

_lock = threading.Lock()
_running: dict[Path, threading.Event] = {}
_cancelled: set[Path] = set()  # vectors files whose build must stop: their directory is going away
_threads: dict[Path, threading.Thread] = {}
# Set when the process exits: a build stops between batches instead of being killed inside
# onnxruntime (which aborts the whole process when the interpreter tears down under it).
_stopping = threading.Event()


class Stopped(RuntimeError):
    """The process is exiting, or a newer base took over; the partial file is dropped, its vectors kept."""


def _stop_builds() -> None:
    _stopping.set()
    for thread in list(_threads.values()):
        thread.join(timeout=60)


def stop_under(directory: Path, timeout: float = 60.0) -> None:
    """Stop this process's builds whose files lie under `directory` and wait for them to end.

    Whoever removes a data directory calls this first (the evaluation's per-task workspaces): a
    build still writing into a removed file fails with "attempt to write a readonly database"
    (SQLite's SQLITE_READONLY_DBMOVED) and would record a failure for a directory nobody reads.
    """
    root = directory.resolve()
    with _lock:
        found = {t: th for t, th in _threads.items() if t.resolve().is_relative_to(root)}
        _cancelled.update(found)
    for thread in found.values():
        thread.join(timeout=timeout)


atexit.register(_stop_builds)


@dataclass(frozen=True)
class VectorState:
    """Whether a search may use the vector leg, and why not when it may not."""

    embedder: Embedder | None
    absent: str = ""  # empty when the leg is on
    embedded: int = 0  # chunks embedded to get there (the task's own new chunks)


def model_slug(embedder: Embedder) -> str:
    return hashlib.sha256(f"{embedder.model_id}\0{embedder.dimension}".encode()).hexdigest()[:12]


def vectors_path(base: Path, embedder: Embedder) -> Path:
    return base.with_name(f"{base.stem}.{model_slug(embedder)}.vectors.db")


def _failed_path(target: Path) -> Path:
    return target.with_suffix(".failed")


def start(base: Path, embedder: Embedder) -> threading.Event:
    """Build the vectors file of `base` in a daemon thread unless it exists or is being built here.

    Returns an event set when this process's build ends (at once when there is nothing to do).
    """
    target = vectors_path(base, embedder)
    with _lock:
        running = _running.get(target)
        if running is not None:
            return running
        done = threading.Event()
        if target.is_file():
            done.set()
            return done
        # an older commit's build of the same repository and model stops: this one takes what it embedded
        # (`kept_path`) instead of embedding the same chunks beside it
        _cancelled.update(other for other in _running if other.parent == target.parent
                          and other.name.endswith(f".{model_slug(embedder)}.vectors.db"))
        _running[target] = done
    thread = threading.Thread(target=_build_guarded, args=(base, embedder, target, done), daemon=True,
                              name=f"vectors-{base.stem[:12]}")
    with _lock:
        _threads[target] = thread
    thread.start()
    return done


def _build_guarded(base: Path, embedder: Embedder, target: Path, done: threading.Event) -> None:
    try:
        build(base, embedder, stop=lambda: _stopping.is_set() or target in _cancelled,
              why=lambda: "a newer commit's build took over" if target in _cancelled and not _stopping.is_set()
              else "the worker is exiting or its data directory is being removed")
    except Stopped as stopped:
        log.info("vector build for %s stopped: %s", base, stopped)
    except Exception as exc:  # the boundary of a background thread: record, never crash the worker
        log.warning("vector build for %s failed: %s", base, exc)
        with contextlib.suppress(OSError):  # the data dir may be gone (a removed workspace)
            _failed_path(target).write_text(f"{type(exc).__name__}: {exc}")
    finally:
        with _lock:
            _running.pop(target, None)
            _cancelled.discard(target)
            if _threads.get(target) is threading.current_thread():
                del _threads[target]
        done.set()


def build(base: Path, embedder: Embedder, stop: Callable[[], bool] = _stopping.is_set,
          why: Callable[[], str] = lambda: "the worker is exiting or its data directory is being removed") -> Path:
    """Write the vectors file of `base` (blocking); reuse vectors of earlier commits, and those a stopped
    build kept, by chunk hash.

    `stop` is asked between batches; when it says so the partial file is dropped (`Stopped`, with `why`)
    and what was embedded stays kept for the next build.
    """
    target = vectors_path(base, embedder)

    def fill(conn: Connection) -> None:
        search_store.ensure_schema(conn, embedder)
        previous = _previous(base, embedder, target)
        if previous is not None:
            copy_vectors(conn, previous)
        with _Kept(kept_path(base, embedder)) as kept:
            kept.give(conn)
            search_store.embed_pending(conn, embedder, batch_size=32, stop=stop, stored=partial(kept.take, conn))
            _memory_vectors(conn, embedder, previous, stop)
            if stop():
                raise Stopped(why())
            search_store.write_meta(conn, **{_ADOPTED: embedder.model_id})
            kept.clear()  # this file now gives the next build what it needs (`_previous`)

    if build_new(target, fill, seed=base):
        _failed_path(target).unlink(missing_ok=True)
    return target


def kept_path(base: Path, embedder: Embedder) -> Path:
    """The chunk vectors builds of the repository of `base` embedded and no complete build holds yet."""
    return base.with_name(f"{model_slug(embedder)}.kept.db")


class _Kept:
    """The kept vectors of one repository and model: each batch a build embeds is added (committed at
    once, so a stop loses nothing), and a build starts from them (`give`). Builds of several workers may
    share the file: SQLite's lock and `INSERT OR IGNORE` let each add and read."""

    def __init__(self, path: Path) -> None:
        self._conn = connect(path)
        with self._conn:
            self._conn.execute("CREATE TABLE IF NOT EXISTS kept (chunk_hash TEXT PRIMARY KEY, embedding BLOB NOT NULL)"
                               " WITHOUT ROWID")

    def __enter__(self) -> _Kept:
        return self

    def __exit__(self, *_: object) -> None:
        self._conn.close()

    def give(self, conn: Connection) -> int:
        """Give every chunk of `conn` without a vector the one kept for its hash."""
        wanted = dict(conn.execute("SELECT chunk_hash, id FROM chunks WHERE embedded = 0").fetchall())
        ids: list[int] = []
        rows: list[np.ndarray] = []
        hashes = list(wanted)
        for start in range(0, len(hashes), 500):
            some = hashes[start:start + 500]
            for digest, blob in self._conn.execute(
                    f"SELECT chunk_hash, embedding FROM kept WHERE chunk_hash IN ({','.join('?' * len(some))})", some):
                ids.append(wanted[digest])
                rows.append(np.frombuffer(blob, dtype=np.float32))
        if ids:
            search_store.store_vectors(conn, ids, np.stack(rows))
        return len(ids)

    def take(self, conn: Connection, ids: list[int], vectors: np.ndarray) -> None:
        """Keep a batch `conn` just embedded (its chunk ids and vectors)."""
        marks = ",".join("?" * len(ids))
        hashes = dict(conn.execute(f"SELECT id, chunk_hash FROM chunks WHERE id IN ({marks})", ids).fetchall())
        with self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO kept (chunk_hash, embedding) VALUES (?, ?)",
                [(hashes[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(ids, vectors, strict=True)])

    def clear(self) -> None:
        with self._conn:
            self._conn.execute("DELETE FROM kept")


def _memory_vectors(conn: Connection, embedder: Embedder, source: Path | None,
                    stop: Callable[[], bool] | None = None) -> None:
    """The project memory's vector leg, beside the code's: vectors `source` holds for the same item
    text are copied, the rest embedded (a base's history once, a task's own discussions when adopted)."""
    if not memory.present(conn):
        return
    memory.ensure_schema(conn, embedder)
    if source is not None:
        memory.copy_vectors(conn, source)
    memory.embed_pending(conn, embedder, stop=stop)


def _previous(base: Path, embedder: Embedder, target: Path) -> Path | None:
    """The newest complete vectors file of the same repository and model (an earlier commit)."""
    pattern = f"*.{model_slug(embedder)}.vectors.db"
    found = [p for p in base.parent.glob(pattern) if p != target]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def copy_vectors(conn: Connection, source: Path) -> int:
    """Give every chunk without a vector the vector `source` holds for the same chunk hash."""
    reader = connect(source, readonly=True)
    try:
        wanted = dict(conn.execute("SELECT chunk_hash, id FROM chunks WHERE embedded = 0").fetchall())
        if not wanted:
            return 0
        ids: list[int] = []
        rows: list[np.ndarray] = []
        cursor = reader.execute(
            "SELECT c.chunk_hash, v.embedding FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
        )
        for digest, blob in cursor:
            chunk_id = wanted.pop(digest, None)
            if chunk_id is not None:
                ids.append(chunk_id)
                rows.append(np.frombuffer(blob, dtype=np.float32))
    finally:
        reader.close()
    if ids:
        search_store.store_vectors(conn, ids, np.stack(rows))
    return len(ids)


def ready_path(base: Path, embedder: Embedder | None) -> Path:
    """The vectors file of `base` when it is complete, else `base` itself (read-only users)."""
    if embedder is None:
        return base
    target = vectors_path(base, embedder)
    return target if target.is_file() else base


def adopt(conn: Connection, embedder: Embedder) -> VectorState:
    """Bring the vector leg into a task index (`conn` writable); say why not when it cannot."""
    meta = search_store.read_meta(conn)
    if meta.get(_ADOPTED) == embedder.model_id and meta.get("model_id") == embedder.model_id:
        _memory_vectors(conn, embedder, None)  # discussions the task remembered after adopting
        return VectorState(embedder, embedded=search_store.embed_pending(conn, embedder))  # the task's own
    base = meta.get(BASE_KEY, "")
    if not base:
        return VectorState(None, "this index has no base index to take vectors from")
    target = vectors_path(Path(base), embedder)
    if not target.is_file():
        failed = _failed_path(target)
        if failed.is_file():
            return VectorState(None, f"building the vectors failed ({failed.read_text()[:200]})")
        return VectorState(None, "the repository's vectors are still being built in the background")
    search_store.ensure_schema(conn, embedder)
    copy_vectors(conn, target)
    _memory_vectors(conn, embedder, target)
    embedded = search_store.embed_pending(conn, embedder)
    search_store.write_meta(conn, **{_ADOPTED: embedder.model_id})
    return VectorState(embedder, embedded=embedded)


def state(index: Path, embedder: Embedder | None) -> VectorState:
    """The vector leg for a search of the task index at `index`, adopting base vectors when ready."""
    if embedder is None:
        return VectorState(None, "no embedder configured (FORGEBOT_EMBEDDER__KIND=off)")
    meta = _meta(index)
    if not meta.get(BASE_KEY):  # a base, a vectors file (the review route) or a CLI index, read as it is
        if meta.get("model_id") == embedder.model_id and meta.get("dimension") == str(embedder.dimension):
            return VectorState(embedder)
        return VectorState(None, "the repository's vectors are still being built in the background")
    conn = connect(index)
    try:
        return adopt(conn, embedder)
    finally:
        conn.close()


def index_file(conn: Connection) -> Path | None:
    """The file behind an open index connection (None for an in-memory one)."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            return Path(row[2])
    return None


def _meta(index: Path) -> dict[str, str]:
    conn = connect(index, readonly=True)
    try:
        return search_store.read_meta(conn)
    finally:
        conn.close()
