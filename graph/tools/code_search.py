"""The agent's search tools as plain typed functions: by meaning, by exact text, and by line range.

They take the checkout root and (for semantic search) an open index; every path the agent names is
checked by code to lie inside the root. The LangChain wrappers live elsewhere and only adapt these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from foundation.gitrunner import GitTimeout, Repo, run
from graph.tools.files import numbered
from project import filetext
from project.index import basecomplete, memory
from project.index.basevectors import VectorState, index_file, state
from project.index.db import Connection
from project.index.embed import Embedder
from project.index.search import Answer, Weights, definition_search, search
from project.index.search_store import lexical_pending
from project.index.store import relative_path
from project.index.taskindex import live_stale_files

MAX_SNIPPET_LINES = 400
# A search pattern comes from the model: a backtracking -P regex over a large checkout must not hold the
# worker. On timeout git grep is killed and the tool answers an error the agent can act on.
GREP_TIMEOUT_SECONDS = 20.0
_GLOB = re.compile(r"^[A-Za-z0-9_.*?/\[\]-]*$")


@dataclass(frozen=True)
class CodeMatch:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Snippet:
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str  # the lines, each prefixed with its number


def semantic_search(
    conn: Connection,
    root: Path,
    query: str,
    *,
    embedder: Embedder | None = None,
    k: int = 10,
    path_glob: str = "",
    kinds: Sequence[str] = (),
    weights: Weights | None = None,
) -> Answer:
    """Hybrid search; the answer's stale files include worktree edits made since the last sync.

    The vector leg runs when the index has (or can now adopt) vectors of `embedder`'s model; when it
    cannot, the answer's notes say why (`basevectors.state`).
    """
    if path_glob:
        _check_glob(path_glob)
    pending = adopt_base(conn, root)
    if pending:
        return definition_search(conn, query, limit=k, path_glob=path_glob, kinds=kinds, why=pending)
    leg = vector_leg(conn, embedder)
    answer = search(
        conn, query, embedder=leg.embedder, limit=k, path_glob=path_glob, kinds=kinds, weights=weights,
        absent=leg.absent,
    )
    stale = tuple(sorted(set(answer.freshness.stale_files) | set(live_stale_files(conn, root))))
    return replace(answer, freshness=replace(answer.freshness, stale_files=stale))


def adopt_base(conn: Connection, root: Path | None) -> str:
    """Take the whole base's full-text tables and memory into a task index that started on the code
    graph alone, once they are built; "" when the index has them, else why not."""
    pending = lexical_pending(conn)
    path = index_file(conn)
    if not pending or path is None or root is None:
        return pending
    return basecomplete.adopt(path, root)


def search_memory(
    conn: Connection, query: str, *, embedder: Embedder | None = None, k: int = 8, root: Path | None = None,
) -> tuple[list[memory.MemoryHit], list[str]]:
    """Project memory (documents, ADRs, commits, merged changes, closed issues, past findings) by
    meaning; each hit names the graph symbols it concerns. An index without memory says so, and so
    does one whose documents and history are still being read (`root` lets it take them in)."""
    if not query.strip():
        raise ValueError("query is empty")
    pending = adopt_base(conn, root)
    if pending and not memory.present(conn):
        return [], [f"no project memory yet: {pending}"]
    if not memory.present(conn):
        return [], ["no project memory in this index (built before memory existed)"]
    leg = vector_leg(conn, embedder)  # adopts the base's vectors (code and memory) once they are built
    hits, notes = memory.search(conn, query, embedder=leg.embedder, limit=max(1, min(k, 20)))
    if leg.embedder is None and embedder is not None:
        notes = [f"vector leg absent: {leg.absent}; lexical memory search only"]
    if pending:
        notes = [*notes, f"the task's discussions only, documents and history not yet: {pending}"]
    return hits, notes


def vector_leg(conn: Connection, embedder: Embedder | None) -> VectorState:
    """Whether this index can serve `embedder`'s vector leg now (adopting base vectors if ready)."""
    path = index_file(conn)
    if path is None or embedder is None:  # an in-memory index is whatever its builder made it
        return VectorState(embedder, "" if embedder else "no embedder configured")
    return state(path, embedder)


def _check_glob(path_glob: str) -> None:
    """A path glob both search tools read alike: fnmatch's, where `*` crosses directories (`*.py` is every
    Python file, `src/**` everything below src/); the model is told what it may not write."""
    if path_glob.startswith("/") or ".." in path_glob.split("/"):
        raise ValueError(f"path glob {path_glob!r} must be relative to the repository, without '..'")
    if not _GLOB.match(path_glob):
        raise ValueError(f"path glob {path_glob!r}: letters, digits and _ . - / * ? [ ] only (no braces or "
                         "commas: one glob per search, e.g. 'src/*.py')")


def search_code(
    root: Path,
    pattern: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    path_glob: str = "",
    max_hits: int = 100,
    timeout: float | None = None,
) -> list[CodeMatch]:
    """Exact (or Perl-style regex) text search over tracked and untracked, non-ignored files.

    Raises ValueError (a tool error) when git grep runs past `timeout` (default GREP_TIMEOUT_SECONDS).
    """
    if not pattern:
        raise ValueError("pattern is empty")
    if regex:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
    if path_glob:
        _check_glob(path_glob)
    # -z: NUL after path and line number, so a path with ":" in it cannot be misread.
    args = ["grep", "-n", "-z", "-I", "--no-color", "--untracked", "-P" if regex else "-F"]
    if ignore_case:
        args.append("-i")
    args += ["-e", pattern, "--"]
    if path_glob:  # git's plain pathspec is fnmatch's (`*` crosses `/`), as `semantic_search` filters
        args.append(path_glob)
    limit = GREP_TIMEOUT_SECONDS if timeout is None else timeout
    try:
        result = run(args, Repo.at(root), timeout=limit)
    except GitTimeout as exc:
        raise ValueError(f"search timed out after {limit:g}s; use a simpler pattern or a narrower path_glob") from exc
    if result.returncode not in (0, 1):  # 1 means no match
        raise RuntimeError(f"git grep failed: {result.stderr.strip()}")
    matches = []
    for line in result.stdout.splitlines()[:max_hits]:
        path, number, text = line.split("\0", 2)
        matches.append(CodeMatch(path, int(number), text[:400]))
    return matches


def read_file_snippet(root: Path, path: str, start_line: int = 1, end_line: int = 0) -> Snippet:
    """Lines `start_line`..`end_line` (inclusive, 1-based; 0 means to the end, capped) of a file."""
    rel = relative_path(root, path)  # raises ValueError for paths outside the root, symlinks included
    file = root.resolve() / rel
    if not file.is_file():
        raise FileNotFoundError(f"no such file in the repository: {rel}")
    if start_line < 1 or (end_line and end_line < start_line):
        raise ValueError(f"bad line range {start_line}-{end_line}")
    lines = filetext.read(file).splitlines()
    last = min(end_line or len(lines), len(lines), start_line + MAX_SNIPPET_LINES - 1)
    text, last = numbered(lines, start_line, last, "{:>6}  ")
    return Snippet(rel, start_line, last, len(lines), text)
