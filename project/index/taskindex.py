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
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path

from foundation.gitrunner import GitError, GitTampered, git
from project import filetext
from project.index import basevectors, memory_sources, search_store, store
from project.index.aliases import CONFIG_PATTERNS
from project.index.chunks import chunk_file
from project.index.db import Connection, build_new, connect, retire
from project.index.embed import Embedder
from project.index.extractors import PATTERNS
from project.index.memory_history import MAX_COMMITS
from project.index.model import Symbol
from project.index.parse import FileRows, content_hash
from project.index.search import Freshness, read_freshness
from project.index.timings import Timings

Counted = Callable[[int, int], None]  # how far embedding is: (chunks embedded, chunks to embed)

log = logging.getLogger(__name__)

_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
HISTORY_JOURNAL = "history.sqlite"  # beside a repository's bases: its history as read so far (`memory_history`)


@dataclass(frozen=True)
class SyncReport:
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    embedded: int
    freshness: Freshness
    graph: store.SyncReport | None = None  # what the graph's build did (a refresh)


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


def graph_symbols(conn: Connection, path: str) -> list[Symbol]:
    """The code graph's definitions in `path`: search chunks follow exactly what the graph holds."""
    rows = conn.execute(
        "SELECT kind, fqn, name, start_line, end_line, start_byte, end_byte, signature, docblock, parent_fqn "
        "FROM symbols WHERE path = ? ORDER BY start_byte",
        (path,),
    )
    return [
        Symbol(
            kind=r[0],
            fqn=r[1],
            name=r[2],
            path=path,
            start_line=r[3],
            end_line=r[4],
            start_byte=r[5],
            end_byte=r[6],
            signature=r[7],
            docblock=r[8],
            parent_fqn=r[9],
        )
        for r in rows
    ]


def _search_rows(rows: FileRows, source: bytes, timings: Timings) -> list[search_store.ChunkRow] | None:
    """In a parser process: the search rows of a freshly parsed file, cut along the symbols the
    graph stores for it (as `graph_symbols` reads them back); None for a file that did not parse."""
    if rows.has_errors or rows.left_out:
        return None  # the graph marks it stale; `index_files` leaves stale files out too
    with timings.phase("chunking"):
        symbols = [
            Symbol(kind=r[1], fqn=r[2], name=r[3], path=rows.path, start_line=r[5], end_line=r[6],  # type: ignore[arg-type]
                   start_byte=r[7], end_byte=r[8], signature=r[9], docblock=r[10], parent_fqn=r[4])
            for r in sorted(rows.symbols, key=lambda r: r[7])
        ]
        chunks = chunk_file(rows.path, filetext.decode(source), symbols)
    with timings.phase("FTS terms"):
        return [search_store.chunk_row(chunk) for chunk in chunks]


def _add_search_rows(conn: Connection, timings: Timings, rows: FileRows) -> None:
    if isinstance(rows.prepared, list):
        with timings.phase("search writes"):
            search_store.add_file(conn, rows.path, rows.content_hash, rows.prepared)


def index_files(conn: Connection, root: Path, paths: Sequence[str], reread: Collection[str] = ()
                ) -> tuple[list[str], list[str]]:
    """Bring the search tables of `paths` in line with the graph's rows; return (changed, removed).

    A file the graph marked stale (it stopped parsing) keeps its old chunks, as the graph keeps its old
    symbols; so does a file edited again since the graph read it. Both show up as stale files. A file
    the graph `reread` unchanged (its extraction rules changed) is cut again along its new definitions.
    """
    graph_files = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT path, content_hash, stale FROM files")}
    known = search_store.indexed_files(conn)
    changed: list[str] = []
    removed: list[str] = []
    with conn:  # one transaction for all files, not a commit per file
        if not conn.in_transaction:
            conn.execute("BEGIN")
        _index_each(conn, root, paths, graph_files, known, changed, removed, frozenset(reread))
    return changed, removed


def _index_each(
    conn: Connection, root: Path, paths: Sequence[str], graph_files: dict[str, tuple[str, int]],
    known: dict[str, str], changed: list[str], removed: list[str], reread: frozenset[str] = frozenset(),
) -> None:
    for path in paths:
        entry = graph_files.get(path)
        if entry is None:
            if path in known:
                search_store.remove_file(conn, path)
                removed.append(path)
            continue
        digest, stale = entry
        if stale or known.get(path) == digest and path not in reread or not (root / path).is_file():
            continue
        source = (root / path).read_bytes()
        if content_hash(source) != digest:
            continue
        chunks = chunk_file(path, filetext.decode(source), graph_symbols(conn, path))
        if path in known:
            search_store.replace_file(conn, path, digest, chunks)
        else:  # a first fill (a deferred base): the ids are new, one statement per table
            search_store.add_file(conn, path, digest, [search_store.chunk_row(chunk) for chunk in chunks])
        changed.append(path)


def index_stale_files(conn: Connection) -> list[str]:
    """Files whose search rows do not match the graph's (stale graph rows or a skipped update).

    While the full-text tables wait for the background build, only files the graph marked stale
    count: every file lacks its search rows then, which the answers say once, not file by file.
    """
    if search_store.lexical_pending(conn):
        return [row[0] for row in conn.execute("SELECT path FROM files WHERE stale = 1 ORDER BY path")]
    known = search_store.indexed_files(conn)
    rows = conn.execute("SELECT path, content_hash, stale FROM files").fetchall()
    return sorted(r[0] for r in rows if r[2] or known.get(r[0]) != r[1])


def build_base(
    data_dir: Path, repo: str, root: Path, *, workers: int = 1, memory_commits: int = MAX_COMMITS,
    defer_from: int | None = None, defer_commits: int | None = None,
) -> Path:
    """Build (or reuse) the base index of the checkout at `root` for its HEAD commit (one an earlier
    release made is made again: its rows follow other extraction rules).

    Graph and full-text tables only: a task can start on them at once. The vector leg is built
    next to it in the background (`basevectors`). The project memory (documents and history) starts
    from the newest older base of the repository and reads only what changed since (`memory_sources`).

    With `defer_from`, a checkout of at least that many source files gets its code graph alone now
    (`<commit>.graph.db`, returned): a task starts on it while `basecomplete` builds the rest. So does,
    with `defer_commits`, the first base of a repository with at least that many commits to remember:
    reading a long history is minutes (sympy's 20,000 newest commits: ten) a first task never waited
    for on a large checkout, and waited for on a small one.
    """
    commit = head_commit(root)
    target = base_index_path(data_dir, repo, commit)
    graph = graph_base_path(target)
    for made in (target, graph):  # a base an earlier release made is made again (`store.ROWS_VERSION`)
        if made.is_file() and retire(made, _by_these_rules):
            log.info("base index of %s at %s: made by other extraction rules, built again", repo, commit[:12])
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    paths = source_files(root, (*PATTERNS, *CONFIG_PATTERNS))  # the configuration for import aliases too
    if defer_from is not None and (len(paths) >= defer_from or _long_history(root, target, defer_commits)):
        if not graph.is_file():
            build_new(graph, lambda conn: _graph_only(conn, root, paths, workers))
        return graph
    def whole(conn: Connection) -> None:
        _logged(_refresh(conn, root, None, workers, files=paths).graph, repo)
        remember(conn, root, memory_commits, newest_base(target), target.parent / HISTORY_JOURNAL)

    build_new(target, whole)
    return target


def _long_history(root: Path, target: Path, commits: int | None) -> bool:
    """Whether the first base of this repository has at least `commits` commits of history to read (a
    later one starts from the base before it, and reads only what is new)."""
    if commits is None or newest_base(target) is not None:
        return False
    try:
        return int(git(root, "rev-list", "--count", f"--max-count={commits}", "HEAD").strip() or 0) >= commits
    except (GitError, ValueError):
        return False


def _by_these_rules(index: Path) -> bool:
    conn = connect(index, vectors=False, readonly=True)
    try:
        return store.by_these_rules(conn)
    finally:
        conn.close()


def graph_base_path(target: Path) -> Path:
    """Where the code graph of the base `target` waits while the rest of it is built."""
    return target.with_name(f"{target.stem}.graph.db")


def _logged(report: store.SyncReport | None, repo: str) -> None:
    """The operator's view of a base build's left-out files (`forgebot index` prints them itself, and
    every search answer names them to the agent)."""
    if report is not None and report.unread_config:
        log.warning("base index of %s: configuration not read, its import aliases are not followed: %s",
                    repo, "; ".join(report.unread_config[:5]))
    if report is not None and report.left_out:
        log.info("base index of %s: %d file(s) left out, not hand-written source or not in the checkout: %s",
                 repo, len(report.left_out), ", ".join(f"{p} ({why})" for p, why in list(report.left_out.items())[:5]))


def _graph_only(conn: Connection, root: Path, paths: Sequence[str], workers: int) -> None:
    """The code graph, and empty search tables marked as waiting for the background build."""
    search_store.ensure_schema(conn, None)
    _logged(store.build(conn, root, paths, workers=workers), root.name)
    search_store.write_meta(conn, **{search_store.LEXICAL_PENDING: "the full-text leg and the project memory are "
                                     "being built in the background"})
    search_store.set_freshness(conn, commit=commit_or_none(root), stale=index_stale_files(conn))


def remember(conn: Connection, root: Path, max_commits: int, previous: Path | None, journal: Path) -> None:
    """The base's project memory; a failure leaves the base without it (search_memory says so), not broken.

    History read for it is also kept in the repository's `journal`, durably (the base is built in a
    throw-away file): a build killed while remembering a long history resumes where it stopped."""
    try:
        memory_sources.refresh(conn, root, embedder=None, max_commits=max_commits, previous=previous,
                               journal=journal)
    except GitTampered:
        raise
    except Exception as exc:  # the boundary: memory is an aid, the task must still get its index
        log.warning("project memory not built for %s: %s", root, exc)


def newest_base(target: Path) -> Path | None:
    """The most recently built other base of the same repository, if any (not a vectors file beside one)."""
    others = [p for p in target.parent.glob("*.db") if p != target and _COMMIT.match(p.stem)]
    return max(others, key=lambda p: p.stat().st_mtime, default=None)


def refresh(
    index: Path, root: Path, *, embedder: Embedder | None, workers: int = 1,
    files: Sequence[str] | None = None, timings: Timings | None = None, progress: Counted | None = None,
) -> SyncReport:
    """Create or bring up to date the index of a checkout (the `forgebot search`/`index` path).

    `files` are the checkout's files when the caller listed them (a directory that is not a git
    checkout); by default git lists them. With an `embedder`, every chunk without a vector is
    embedded before this returns; `progress` is told (embedded, to embed) as it starts and after
    each batch.
    """
    index.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(index)
    try:
        return _refresh(conn, root, embedder, workers, files=files, timings=timings, progress=progress)
    finally:
        conn.close()



def _refresh(
    conn: Connection, root: Path, embedder: Embedder | None, workers: int, *,
    files: Sequence[str] | None = None, timings: Timings | None = None, progress: Counted | None = None,
) -> SyncReport:
    timings = timings if timings is not None else Timings()
    search_store.ensure_schema(conn, embedder)
    with timings.phase("file walk"):
        paths = source_files(root, (*PATTERNS, *CONFIG_PATTERNS)) if files is None else sorted(files)
    reread: list[str] = []  # files the graph read again: their search rows are cut again too
    if search_store.indexed_files(conn):
        graph = store.build(conn, root, paths, workers=workers, timings=timings)
        reread = graph.parsed
    else:  # a first build: the search rows come from the same pass over the files
        graph = store.build(conn, root, paths, workers=workers, prepare=_search_rows,
                            consume=partial(_add_search_rows, conn, timings), timings=timings)
    with timings.phase("search writes"):
        changed, removed = index_files(conn, root, sorted(set(paths) | set(search_store.indexed_files(conn))),
                                       reread)
    embedded = 0
    if embedder is not None:
        with timings.phase("vectors"):
            told = None
            if progress is not None:
                told = _Told(progress, search_store.pending_chunks(conn))
            embedded = search_store.embed_pending(conn, embedder, stored=told)
    search_store.set_freshness(conn, commit=commit_or_none(root), stale=index_stale_files(conn))
    return SyncReport(tuple(changed), tuple(removed), embedded, read_freshness(conn), graph)


class _Told:
    """Tells `progress` how many of `total` chunks are embedded: at once, then after each batch."""

    def __init__(self, progress: Counted, total: int) -> None:
        self._progress, self._total, self._done = progress, total, 0
        progress(0, total)

    def __call__(self, ids: list[int], vectors: object) -> None:
        self._done += len(ids)
        self._progress(self._done, self._total)


def commit_or_none(root: Path) -> str:
    """HEAD's commit, or "" for a directory that is not a git checkout (`forgebot index` takes both)."""
    try:
        return head_commit(root)
    except GitError:
        return ""


def copy_for_task(base: Path, data_dir: Path, task_id: str) -> Path:
    """A private copy of the base index for one task; the base stays untouched."""
    target = task_index_path(data_dir, task_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(base, target)
    conn = connect(target)
    try:  # the task's search tools find the base's vectors through this, once they are built
        search_store.write_meta(conn, **{basevectors.BASE_KEY: str(base)})
    finally:
        conn.close()
    return target


def sync_task(
    index: Path, root: Path, *, embedder: Embedder | None, changed_paths: Sequence[str] | None = None
) -> SyncReport:
    """Apply the worktree's changes (all files, or `changed_paths`) to a task index.

    A failure is recorded as degraded search with the files it left stale, and returned, not raised.
    """
    conn = connect(index)
    try:
        paths = (
            _all_paths(conn, root)
            if changed_paths is None
            else [store.relative_path(root, p) for p in changed_paths]
        )
        try:
            return _sync(conn, root, paths, embedder)
        except GitTampered:
            raise  # not a broken sync: a security stop for the whole task
        except Exception as exc:  # the boundary: a broken sync must not stop the task
            log.warning("index sync failed for %s: %s", index, exc)
            stale = sorted(set(paths) | set(index_stale_files(conn)))
            commit = read_freshness(conn).indexed_commit
            search_store.set_freshness(conn, commit=commit, stale=stale, degraded=f"sync failed: {exc}")
            return SyncReport((), (), 0, read_freshness(conn))
    finally:
        conn.close()


def _all_paths(conn: Connection, root: Path) -> list[str]:
    return sorted(set(source_files(root)) | set(search_store.indexed_files(conn)))


def _sync(conn: Connection, root: Path, paths: list[str], embedder: Embedder | None) -> SyncReport:
    task = bool(search_store.read_meta(conn).get(basevectors.BASE_KEY)) if _has_meta(conn) else False
    # a task index takes its vectors from the base's vectors file (`basevectors.adopt`): embedding
    # here would embed the whole repository on the task's time
    search_store.ensure_schema(conn, None if task else embedder)
    store.sync_files(conn, root, paths)
    changed, removed = index_files(conn, root, paths)
    if embedder is None:
        embedded = 0
    elif task:
        embedded = basevectors.adopt(conn, embedder).embedded
    else:
        embedded = search_store.embed_pending(conn, embedder)
    search_store.set_freshness(conn, commit=head_commit(root), stale=index_stale_files(conn))
    return SyncReport(tuple(changed), tuple(removed), embedded, read_freshness(conn))


def _has_meta(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'search_meta'").fetchone() is not None


def live_stale_files(conn: Connection, root: Path) -> list[str]:
    """Files whose worktree content differs from what the index holds, checked now.

    Only candidates are hashed: files git reports as changed against HEAD, files changed between
    the indexed commit and HEAD, and files the index already knows are stale. Hashing every file
    would cost a full read of the checkout on each search.
    """
    known = search_store.indexed_files(conn)
    candidates = set(index_stale_files(conn)) | _changed_since(root, read_freshness(conn).indexed_commit)
    stale = set(index_stale_files(conn))
    for path in candidates:
        if not any(fnmatchcase(path, pat) for pat in PATTERNS):
            continue
        file = root / path
        current = content_hash(file.read_bytes()) if file.is_file() else None
        if known.get(path) != current:
            stale.add(path)
    return sorted(stale)


def _changed_since(root: Path, commit: str) -> set[str]:
    status = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    changed = {entry[3:] for entry in status.split("\0") if len(entry) > 3}
    if _COMMIT.match(commit) and commit != head_commit(root):
        changed |= set(git(root, "diff", "--name-only", "-z", "--no-renames", commit, "HEAD").split("\0"))
    return {path for path in changed if path}
