"""Comments a MySQL or MariaDB server executes cannot carry a write past the read-only SQL tool.

The statement check used to blank `/*! ... */` and `/*M! ... */` as comments, which MySQL and
MariaDB run as code, and `--` followed by a non-space, which MySQL reads as two minus signs: each
let `INTO OUTFILE` through as a plain `SELECT`. Against the real MariaDB, through the product's own
`ReadOnlyDatabase.run_readonly_sql` (the tool investigation roles call): every variant is refused,
and the server writes no file (a plain-SQL control shows the server would have).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pymysql
import pytest

from graph.tools.database import DatabaseError, ReadOnlyDatabase

pytestmark = pytest.mark.mariadb


@pytest.fixture
def outfile() -> Iterator[Path]:
    """A path the MariaDB server on this machine would create (it runs here, as its own user)."""
    path = Path(f"/tmp/forgebot-outfile-{uuid.uuid4().hex}")
    yield path
    path.unlink(missing_ok=True)


def _attacks(path: Path) -> list[str]:
    return [
        f"SELECT 1 /*!50000 INTO OUTFILE '{path}' */ FROM DUAL",
        f"SELECT 1 /*!INTO OUTFILE '{path}' */ FROM DUAL",
        f"SELECT 1 /*M!100000 INTO OUTFILE '{path}' */ FROM DUAL",
        f"SELECT 1--1 INTO OUTFILE '{path}'\n FROM DUAL",
    ]


def test_executed_comments_are_refused_and_write_nothing(mariadb_url: str, outfile: Path) -> None:
    db = ReadOnlyDatabase(mariadb_url)
    for attack in _attacks(outfile):
        with pytest.raises(DatabaseError, match="refused"):
            db.run_readonly_sql(attack)
        assert not outfile.exists(), attack


def test_the_server_would_have_run_them(mariadb_url: str, outfile: Path) -> None:
    """The control: sent as they are, without the tool, the server writes the file."""
    where = urlsplit(mariadb_url)
    conn = pymysql.connect(host=where.hostname, port=where.port or 3306, user="root", password="", database="test")
    try:
        with conn.cursor() as cur:
            cur.execute(_attacks(outfile)[0])
    finally:
        conn.close()
    assert outfile.exists()
