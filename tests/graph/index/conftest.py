"""Fixtures for the code-graph tests: a git checkout of the PHP fixtures, its built index, and PHP."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from project.index.db import Connection, connect
from project.index.store import build

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "php_graph"


def _git(root: Path, *args: str) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)}
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        check=True, capture_output=True, env=env,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository holding a copy of the PHP fixtures (tests may edit it freely)."""
    root = tmp_path / "acme"
    shutil.copytree(FIXTURES, root)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "fixtures")
    return root


def php_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.php"))


@pytest.fixture
def indexed(repo: Path, tmp_path: Path) -> Iterator[tuple[Connection, Path]]:
    """The fixture repository with its graph built into a real SQLite index database."""
    conn = connect(tmp_path / "index.db")
    build(conn, repo, php_files(repo))
    yield conn, repo
    conn.close()


def index_files(tmp_path: Path, files: dict[str, str], paths: list[str] | None = None) -> tuple[Connection, Path]:
    """`files` (path -> text) written under `tmp_path/repo`, and an index built of `paths` (every file
    when None): a test's own small repository."""
    root = tmp_path / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    conn = connect(tmp_path / "index.db")
    build(conn, root, sorted(files) if paths is None else paths)
    return conn, root
