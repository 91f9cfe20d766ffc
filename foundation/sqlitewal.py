"""Switching an SQLite file to WAL mode when other processes may be opening it at the same moment.

`PRAGMA journal_mode=WAL` on a file still in rollback mode needs an exclusive lock. When two
connections race to make that switch (a worker and the receiver of `forgebot serve`, or two workers,
starting on a fresh data directory), SQLite answers one of them "database is locked" at once,
without calling its busy handler: waiting could deadlock, so the connection's `timeout` does not
apply. Measured before this module: 2 to 7 in 100 rounds of four threads opening a fresh file
failed (`tests/bot/test_fresh_sqlite.py`), and a worker that lost the race died at start-up. Once
one switch commits, the mode is stored in the file and every later open is a read, so retrying for
a short while always ends.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import sqlean

# both drivers' errors: the stdlib's (the inbox, the review store) and sqlean's (the index, which
# loads sqlite-vec)
_LOCKED = (sqlite3.OperationalError, sqlean.OperationalError)


def enable_wal(conn: Any, timeout: float = 10.0) -> None:
    """Put `conn`'s database in WAL mode, retrying while a concurrent opener holds the lock;
    re-raises any other error, and the lock error once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except _LOCKED as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
