"""The last review of each change, by change key: the head SHA it reviewed and a record of it.

A re-review needs both: the SHA to review only what changed since, and the record (the findings
left open, with the threads they were posted in) to carry forward, resolve when fixed, and not
raise again when the author answered. One small SQLite table under the data directory; a row is
replaced whole after each published review, so a crash mid-publication leaves the previous review
as the reference. The store keeps any pydantic record as JSON; what a record holds is the review
route's (`graph.findings.ReviewRecord`), so the store needs nothing of the agent.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from foundation.sqlitewal import enable_wal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    change TEXT PRIMARY KEY,
    head TEXT NOT NULL,
    record TEXT NOT NULL,
    updated_at REAL NOT NULL
)
"""


R = TypeVar("R", bound=BaseModel)


def change_key(forge: str, project: str, number: int) -> str:
    """One change on one forge (GitLab project id or GitHub owner/name, and the change's number)."""
    return f"{forge}:{project}:{number}"


class ReviewStore:
    """Reviews by change key in `<data_dir>/reviews.sqlite`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as conn, conn:
            conn.execute(_SCHEMA)

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> ReviewStore:
        return cls(data_dir / "reviews.sqlite")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10)
        enable_wal(conn)  # workers open the one file side by side
        return conn

    def load(self, change: str, record: type[R]) -> R | None:
        """The last review of `change` read as `record`, None when it was never reviewed."""
        with closing(self._connect()) as conn:
            row = conn.execute("SELECT record FROM reviews WHERE change = ?", (change,)).fetchone()
        return None if row is None else record.model_validate_json(row[0])

    def save(self, change: str, head: str, record: BaseModel) -> None:
        """Replace `change`'s review with `record`, made at `head`."""
        with closing(self._connect()) as conn, conn:
            conn.execute(
                "INSERT INTO reviews (change, head, record, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(change) DO UPDATE SET head = excluded.head, record = excluded.record, "
                "updated_at = excluded.updated_at",
                (change, head, record.model_dump_json(), time.time()),
            )
