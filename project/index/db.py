"""The one place that opens an index database.

CPython builds on our machines ship an `sqlite3` that cannot load extensions, so the index uses
`sqlean.py` (a drop-in `sqlite3` module with extension loading, FTS5 and a recent SQLite) and loads
`sqlite-vec` into it. Every index connection comes from `connect()`; no other module imports a
SQLite driver for index data.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlean

from foundation.sqlitewal import enable_wal

Connection = Any  # sqlean.Connection, untyped upstream


@lru_cache(maxsize=1)
def _vec_extension() -> str:
    """The sqlite-vec loadable extension's path, found without importing the package: its
    `__init__` imports numpy, a tenth of a second every `forgebot index` would pay for nothing."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sqlite-vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def connect(path: Path | str, *, vectors: bool = True, readonly: bool = False) -> Connection:
    """Open an index database with WAL, foreign keys and (by default) sqlite-vec loaded."""
    target = str(path)
    if readonly and target != ":memory:":
        conn = sqlean.connect(f"file:{target}?mode=ro", uri=True, check_same_thread=False)
    else:
        conn = sqlean.connect(target, check_same_thread=False)
    conn.row_factory = sqlean.Row
    if vectors:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension())
        conn.enable_load_extension(False)
    if target != ":memory:" and not readonly:
        enable_wal(conn)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def retire(target: Path, keep: Callable[[Path], bool]) -> bool:
    """Remove the database `target` unless `keep(target)`, under the lock `build_new` takes (so no build
    of it is under way); True when it was removed. A process that opened it keeps reading the file it
    opened; the next `build_new` makes it again."""
    with target.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_file() or keep(target):
            return False
        target.unlink()
        return True


def build_new(
    target: Path, fill: Callable[[Connection], None], *, partial: str = ".building", seed: Path | None = None
) -> bool:
    """Make the database `target` once among processes: `fill` a file (empty, or a copy of `seed`) under
    the name `partial` (a suffix) and rename it into place; False when another process made it
    meanwhile (this one waited on the lock, then found it) and `fill` did not run.

    A reader never opens a half-built file, and a failure (or a stop) leaves neither `target` nor the
    partial file. Until the rename the file is throw-away: a crash loses nothing a rebuild does not
    redo, so no fsync and no write-ahead log, which doubled every page written (the commit of sympy's
    187 MB graph alone took 0.45 s copying it from the log into the file). The result is one
    self-contained file in rollback mode (a task's copy of a base is a plain file copy); `connect`
    puts it in WAL mode when it is opened to be written.
    """
    with target.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process building it: wait, then find it done
        if target.is_file():
            return False
        building = target.with_suffix(partial)
        building.unlink(missing_ok=True)  # what a killed build left
        if seed is not None:
            shutil.copyfile(seed, building)
        conn = connect(building)
        try:
            conn.execute("PRAGMA journal_mode=MEMORY")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("PRAGMA cache_size=-65536")
            fill(conn)
            conn.execute("PRAGMA journal_mode=DELETE")
        except BaseException:
            conn.close()
            building.unlink(missing_ok=True)
            raise
        conn.close()
        building.replace(target)
    return True
