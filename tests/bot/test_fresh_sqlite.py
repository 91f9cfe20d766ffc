"""Processes that open one fresh SQLite file at the same moment all get a WAL-mode connection.

`forgebot serve` starts its receiver and its worker together, and a deployment starts several
workers together, all on an empty data directory: the inbox, the review store, the index and the
checkpoints are then opened side by side while none of the files is in WAL mode yet. SQLite
refuses the switch to one of two racing connections without waiting (found as a worker that died at
start-up with "database is locked" in a durability scenario; 4 to 7 rounds in 100 failed here
before the fix). Threads race here like processes do: SQLite's locks are per connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.tasks.checkpoints import open_checkpointer
from bot.tasks.inboxsql import connect_sqlite
from foundation.settings import Settings
from project.index.db import connect
from project.reviewstore import ReviewStore

ROUNDS = 100  # of four openers on a new file: with the unguarded switch, 4 to 7 rounds in 100 failed


def _open(open_file: Callable[[Path], Any], path: Path, start: threading.Barrier, errors: list[str]) -> None:
    start.wait()
    try:
        open_file(path)
    except Exception as exc:  # every failure is the finding
        errors.append(f"{path.parent.name}: {exc!r}")


def _race(open_file: Callable[[Path], Any], directory: Path) -> list[str]:
    """Errors of four threads opening each round's new file at once, over ROUNDS rounds."""
    errors: list[str] = []
    for round_ in range(ROUNDS):
        path = directory / f"r{round_}" / "checkpoints.sqlite"  # the checkpointer's name in a data dir
        path.parent.mkdir()
        start = threading.Barrier(4)
        threads = [threading.Thread(target=_open, args=(open_file, path, start, errors)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return errors


def _inbox(path: Path) -> None:
    connect_sqlite(path).close()


def _index(path: Path) -> None:
    connect(path, vectors=False).close()


def _checkpoints(path: Path) -> None:
    """The checkpointer as a worker opens it, then LangGraph's own setup (its WAL switch)."""

    async def open_and_set_up() -> None:
        settings = Settings(_env_file=None, _secrets_dir=None, data_dir=path.parent)  # type: ignore[call-arg]
        async with open_checkpointer(settings) as saver:
            await saver.setup()  # type: ignore[attr-defined]

    asyncio.run(open_and_set_up())


@pytest.mark.parametrize(
    "open_file", [_inbox, ReviewStore, _index, _checkpoints], ids=["inbox", "reviews", "index", "checkpoints"]
)
def test_openers_racing_on_a_fresh_file_all_succeed_in_wal_mode(
    open_file: Callable[[Path], Any], tmp_path: Path
) -> None:
    assert _race(open_file, tmp_path) == []
    probe = connect(tmp_path / "r0" / "checkpoints.sqlite", vectors=False)
    assert probe.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
