"""Base index per repository and commit, a cheap copy per task, and the delta sync after each patch.

The base index is built once from a checkout at a known commit (graph and search tables in one
SQLite file), then never written again. Each task gets its own file copy, so the agent's edits never
leak into the base or into another task. After a patch, `sync_task` re-parses only the files whose
git blob id changed, for the graph and the search tables together, and re-embeds only the chunks
whose text changed. A sync that fails is recorded in the index as degraded search, not raised: the
task keeps going with the index it has, and every search answer says so.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Protocol

from graph.index import search_store
from graph.index.chunks import chunk_file
from graph.index.db import Connection, connect
from graph.index.embed import Embedder
from graph.index.model import ParsedFile
from graph.index.parse import content_hash, parse_source
from graph.index.search import Freshness, read_freshness

log = logging.getLogger(__name__)

_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
PATTERNS = ("*.php",)


class GraphStore(Protocol):
    """What the code graph store (`graph.index.store`) offers the sync; a module satisfies it."""

    def build(self, conn: Connection, root: Path, paths: Sequence[str]) -> object: ...

    def sync_files(self, conn: Connection, root: Path, changed_paths: Sequence[str]) -> object: ...


Parse = Callable[[str, bytes], ParsedFile]


@dataclass(frozen=True)
class SyncReport:
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    embedded: int
    freshness: Freshness


def git(root: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)},
    )
    if result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def head_commit(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def source_files(root: Path, patterns: Sequence[str] = PATTERNS) -> list[str]:
    """Tracked and untracked-but-not-ignored files of the worktree that match `patterns`."""
    listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    return sorted({p for p in listed if p and any(fnmatchcase(p, pat) for pat in patterns)})


def base_index_path(data_dir: Path, repo: str, commit: str) -> Path:
    if not _NAME.match(repo.replace("/", "--")) or not _COMMIT.match(commit):
        raise ValueError(f"bad repository name or commit: {repo!r} {commit!r}")
    return data_dir / "indexes" / "base" / repo.replace("/", "--") / f"{commit}.db"


def task_index_path(data_dir: Path, task_id: str) -> Path:
    if not _NAME.match(task_id):
        raise ValueError(f"bad task id: {task_id!r}")
    return data_dir / "indexes" / "tasks" / task_id / "index.db"


def _index_files(
    conn: Connection, root: Path, paths: Sequence[str], embedder: Embedder | None, parse: Parse
) -> tuple[list[str], list[str]]:
    """Bring the search tables of `paths` in line with the worktree; return (changed, removed)."""
    known = search_store.indexed_files(conn)
    changed: list[str] = []
    removed: list[str] = []
    for path in paths:
        file = root / path
        if not file.is_file():
            if path in known:
                search_store.remove_file(conn, path)
                removed.append(path)
            continue
        source = file.read_bytes()
        digest = content_hash(source)
        if known.get(path) == digest:
            continue
        parsed = parse(path, source)
        chunks = chunk_file(path, source.decode(errors="replace"), parsed.symbols)
        search_store.replace_file(conn, path, digest, chunks)
        changed.append(path)
    return changed, removed


def build_base(
    data_dir: Path, repo: str, root: Path, *, graph: GraphStore, embedder: Embedder | None,
    parse: Parse = parse_source,
) -> Path:
    """Build (or reuse) the base index of the checkout at `root` for its HEAD commit."""
    commit = head_commit(root)
    target = base_index_path(data_dir, repo, commit)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".building")
    partial.unlink(missing_ok=True)
    conn = connect(partial)
    try:
        search_store.ensure_schema(conn, embedder)
        paths = source_files(root)
        graph.build(conn, root, paths)
        _index_files(conn, root, paths, embedder, parse)
        if embedder is not None:
            search_store.embed_pending(conn, embedder)
        search_store.set_freshness(conn, commit=commit, stale=[])
        # One self-contained file: task copies are then a plain file copy.
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    partial.replace(target)  # readers never see a half-built base
    return target


def copy_for_task(base: Path, data_dir: Path, task_id: str) -> Path:
    """A private copy of the base index for one task; the base stays untouched."""
    target = task_index_path(data_dir, task_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(base, target)
    return target


def sync_task(
    index: Path, root: Path, *, graph: GraphStore, embedder: Embedder | None,
    changed_paths: Sequence[str] | None = None, parse: Parse = parse_source,
) -> SyncReport:
    """Apply the worktree's changes to a task index; failures become degraded freshness."""
    conn = connect(index)
    try:
        paths = list(changed_paths) if changed_paths is not None else _all_paths(conn, root)
        try:
            return _sync(conn, root, paths, graph, embedder, parse)
        except Exception as exc:  # the boundary: a broken sync must not stop the task
            log.warning("index sync failed for %s: %s", index, exc)
            search_store.set_freshness(
                conn, commit=read_freshness(conn).indexed_commit, stale=paths, degraded=f"sync failed: {exc}"
            )
            return SyncReport((), (), 0, read_freshness(conn))
    finally:
        conn.close()


def _all_paths(conn: Connection, root: Path) -> list[str]:
    return sorted(set(source_files(root)) | set(search_store.indexed_files(conn)))


def _sync(
    conn: Connection, root: Path, paths: list[str], graph: GraphStore, embedder: Embedder | None, parse: Parse
) -> SyncReport:
    search_store.ensure_schema(conn, embedder)
    wanted = [p for p in paths if any(fnmatchcase(p, pat) for pat in PATTERNS)]
    changed, removed = _index_files(conn, root, wanted, embedder, parse)
    if changed or removed:
        graph.sync_files(conn, root, [*changed, *removed])
    embedded = search_store.embed_pending(conn, embedder) if embedder is not None else 0
    search_store.set_freshness(conn, commit=head_commit(root), stale=[])
    return SyncReport(tuple(changed), tuple(removed), embedded, read_freshness(conn))


def stale_files(conn: Connection, root: Path) -> list[str]:
    """Files whose worktree content differs from what the index holds (checked now, from disk)."""
    known = search_store.indexed_files(conn)
    stale = []
    for path in _all_paths(conn, root):
        file = root / path
        current = content_hash(file.read_bytes()) if file.is_file() else None
        if known.get(path) != current:
            stale.append(path)
    return stale
