"""`forgebot index | symbols | callers | impact | outline`: the code graph on the command line.

`register()` adds the subcommands to the product's parser; `bot/cli/main.py` sets `args.data_dir` before
calling a handler. `index` builds what a task's base index holds, in one pass over the files: the
code graph, the search tables (the same index `forgebot search` answers from) and, in a git
checkout, the project memory; then the vectors unless `--no-embeddings`. `--timings` prints where
the time went, phase by phase.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from foundation.gitrunner import GitError, GitTampered, git
from project.index import treewalk
from project.index.db import Connection, build_new, connect
from project.index.location import index_path
from project.index.progress import INTERRUPTED, Vectors
from project.index.store import SyncReport, default_workers, relative_path
from project.index.timings import Timings, process_age

if TYPE_CHECKING:  # the answers' models (pydantic) load with the commands that answer, not with `index`
    from pydantic import BaseModel

    from project.index.embed import Embedder
    from project.index.results import IndexStatus


class _Answered(Protocol):
    @property
    def status(self) -> IndexStatus: ...


_R = TypeVar("_R", bound=_Answered)
_H = TypeVar("_H", bound="BaseModel")


def list_files(root: Path) -> list[str]:
    """Files of a checkout: git's view (tracked and untracked, not ignored), else a directory walk.

    Neither descends into a symlinked directory; a symlinked file is kept only when it points
    inside the checkout (its target outside is not ours to index).
    """
    try:
        out = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        names = {name for name in out.split("\0") if name}
    except GitTampered:
        raise
    except GitError:
        names = set(_walk(root))
    base = str(root.resolve())
    return sorted(name for name in names if not os.path.islink(os.path.join(base, name))
                  or Path(os.path.realpath(os.path.join(base, name))).is_relative_to(base))


# installed dependencies, never a project's own code: a checkout's .gitignore keeps them out of git's
# list, and a plain directory gets the same (one node_modules holds tens of thousands of files)
_DEPENDENCY_DIRS = frozenset({"node_modules", "__pycache__"})


def _walk(root: Path) -> Iterable[str]:
    """Files under `root`, hidden files and directories and `_DEPENDENCY_DIRS` left out (os.walk follows
    no directory link)."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _DEPENDENCY_DIRS]
        relative = os.path.relpath(directory, root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        yield from (prefix + name for name in files if not name.startswith("."))


def _root(args: argparse.Namespace) -> Path:
    root = Path(args.path).resolve()
    if not root.is_dir():
        swapped = getattr(args, "fqn", None) or getattr(args, "file", None)
        if isinstance(swapped, str) and Path(swapped).is_dir():  # `callers FQN .`: the order a newcomer tries
            raise SystemExit(f"forgebot: {args.path}: not a directory; the checkout comes first: "
                             f"forgebot {getattr(args, 'command', '')} {swapped} {args.path}")
        raise SystemExit(f"forgebot: {args.path}: not a directory")
    return root


def _open(args: argparse.Namespace, root: Path) -> Connection | None:
    db = index_path(Path(args.data_dir), root)
    return connect(db, readonly=True) if db.is_file() else None


def _emit(lines: Iterable[str]) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")


def _report_status(status: IndexStatus, root: Path) -> int:
    from project.index.results import STALE_NOTE

    if status.state == "missing":
        sys.stderr.write(f"forgebot: no code index for {root}: run `forgebot index {root}` first; "
                         "check not performed\n")
        return 2
    if status.state == "stale":
        sys.stderr.write(f"forgebot: index is stale for {len(status.stale_paths)} file(s): "
                         f"{', '.join(status.stale_paths[:10])}\n")
    note = status.note.removeprefix(STALE_NOTE).removeprefix("; ")  # a query's own note, past the stale line's
    if note:
        sys.stderr.write(f"forgebot: {note}\n")
    return 0


def run_index(args: argparse.Namespace) -> int:
    timings = Timings()
    timings.add("start", time.process_time(), process_age())  # interpreter start, imports, arguments
    root = _root(args)
    db = index_path(Path(args.data_dir), root)
    vectors = None
    try:
        with timings.phase("file walk"):
            files = list_files(root)
        if args.no_embeddings and not args.full_text:
            lines = _index_graph(db, root, files, args.workers, timings)
        else:
            embedder = None if args.no_embeddings else _embedder(args)
            if embedder is not None:
                vectors = Vectors("forgebot index", embedder.model_id, f"forgebot index {shlex.quote(str(args.path))}")
            lines = _index_all(db, root, files, embedder, vectors, args.workers, timings)
    except KeyboardInterrupt:  # Ctrl-C: what it leaves, not a traceback
        what = vectors.interrupted() if vectors is not None else (
            "interrupted; the index keeps what was complete (a first build keeps nothing), "
            "`forgebot index` builds the rest")
        sys.stderr.write(f"forgebot index: {what}\n")
        return INTERRUPTED
    except RuntimeError as exc:  # an embeddings endpoint down or answering nonsense: what was built stays
        from project.index.embed import EmbeddingError  # numpy and httpx load only when embedding

        if vectors is None or not isinstance(exc, EmbeddingError):
            raise
        sys.stderr.write(f"forgebot index: {vectors.stopped(str(exc))}\n")
        return 1
    _emit([*lines, "memory: deferred (`forgebot memory` reads the documents and history on its first question)"])
    if args.timings:
        _emit(timings.table(total_wall=process_age(), total_cpu=time.process_time() + timings.cpu_elsewhere))
        _emit([treewalk.described()])
    return 0


def _index_graph(db: Path, root: Path, files: list[str], workers: int, timings: Timings) -> list[str]:
    """The code graph alone: what the graph commands read and a first task needs before anything else.

    The full-text tables wait for the first `forgebot search`, which brings them in line with the
    graph before answering (as the vectors wait for `--embed`); neither is read by the graph commands.
    """
    from project.index.store import build

    db.parent.mkdir(parents=True, exist_ok=True)
    done: list[tuple[SyncReport, list[int]]] = []

    def fill(conn: Connection) -> None:
        graph = build(conn, root, files, workers=workers, timings=timings)
        done.append((graph, [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                             for table in ("symbols", "relations")]))

    # a first build goes into a file of its own, renamed into place when complete; one that another
    # `forgebot index` made meanwhile is brought up to date like any existing index
    if db.is_file() or not build_new(db, fill):
        conn = connect(db, vectors=False)
        try:
            fill(conn)
        finally:
            conn.close()
    graph, counts = done[0]
    return [_graph_line(graph, counts),
            "search: deferred (`forgebot search` builds its full-text tables on first use; `--full-text` now)"]


def _embedder(args: argparse.Namespace) -> Embedder | None:
    """The embedder the settings configure (the offline model unless `FORGEBOT_EMBEDDER__*` says otherwise;
    none for `FORGEBOT_EMBEDDER__KIND=off`)."""
    from project.embedding import command_embedder  # onnxruntime and the settings load only when embedding

    if getattr(args, "settings", None) is None:
        from foundation.settings import Settings

        return command_embedder(Settings().embedder)
    return command_embedder(args.settings.embedder)


def _index_all(db: Path, root: Path, files: list[str], embedder: Embedder | None, vectors: Vectors | None,
               workers: int, timings: Timings) -> list[str]:
    """The graph, the full-text tables and (with an embedder) the vectors, in one pass."""
    from project.index import taskindex

    report = taskindex.refresh(db, root, embedder=embedder, workers=workers, files=files, timings=timings,
                               progress=vectors)
    conn = connect(db)
    try:
        counts = [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                  for table in ("symbols", "relations", "chunks")]
    finally:
        conn.close()
    assert report.graph is not None  # a refresh always builds the graph
    return [
        _graph_line(report.graph, counts),
        f"search: {counts[2]} chunks, {report.embedded} embedded"
        + ("" if embedder else " (no vector leg: --no-embeddings or FORGEBOT_EMBEDDER__KIND=off)"),
    ]


def _graph_line(graph: SyncReport, counts: list[int]) -> str:
    for path, why in list(graph.failed.items())[:20]:  # on stderr: stdout's lines keep their form
        sys.stderr.write(f"forgebot: {path}: left out of the code graph, its extractor failed ({why})\n")
    if len(graph.failed) > 20:
        sys.stderr.write(f"forgebot: and {len(graph.failed) - 20} more file(s) left out of the code graph\n")
    if graph.left_out:
        shown = "; ".join(f"{path} ({why})" for path, why in list(graph.left_out.items())[:5])
        more = f"; and {len(graph.left_out) - 5} more" if len(graph.left_out) > 5 else ""
        sys.stderr.write(f"forgebot: {len(graph.left_out)} file(s) left out of the index, not hand-written source "
                         f"or not in the checkout: {shown}{more}\n")
    broken = [path for path in graph.stale if path not in graph.failed]
    if broken:  # "1 stale" alone left the user to find which file, and that every answer will name it
        shown = ", ".join(broken[:5]) + (f"; and {len(broken) - 5} more" if len(broken) > 5 else "")
        sys.stderr.write(f"forgebot: {len(broken)} file(s) with syntax errors, named stale in every answer until "
                         f"fixed: {shown}\n")
    for line in graph.unread_config[:20]:
        sys.stderr.write(f"forgebot: {line}: not read, its import aliases are not followed\n")
    return (f"graph: {len(graph.parsed)} parsed, {len(graph.unchanged)} unchanged, {len(graph.removed)} removed, "
            f"{len(graph.stale)} stale; {counts[0]} symbols, {counts[1]} relations")


def run_symbols(args: argparse.Namespace) -> int:
    from project.index.queries import index_ready
    from project.index.results import IndexStatus

    root = _root(args)
    conn = _open(args, root)
    if conn is None or not index_ready(conn):
        return _report_status(IndexStatus(state="missing"), root)
    rows = conn.execute(
        "SELECT kind, fqn, path, start_line, end_line FROM symbols WHERE kind != 'namespace' "
        "ORDER BY path, start_line, start_byte"
    )
    for kind, fqn, path, start, end in rows:
        record = {"kind": kind, "fqn": fqn, "path": path, "start_line": start, "end_line": end}
        sys.stdout.write((json.dumps(record) if args.json else f"{path}:{start}-{end}\t{kind}\t{fqn}") + "\n")
    stale = [row[0] for row in conn.execute("SELECT path FROM files WHERE stale = 1 ORDER BY path")]
    status = IndexStatus(state="stale", stale_paths=stale) if stale else IndexStatus(state="ok")
    return _report_status(status, root)


def _answer(
    args: argparse.Namespace,
    ask: Callable[[Connection, Path], _R],
    hits: Callable[[_R], Sequence[_H]],
    text: Callable[[_H], str],
) -> int:
    """Ask the index one question; print each hit (as JSON with `--json`, else `text`) and the status."""
    from project.index.results import IndexStatus

    root = _root(args)
    conn = _open(args, root)
    if conn is None:
        return _report_status(IndexStatus(state="missing"), root)
    result = ask(conn, root)
    _emit(hit.model_dump_json() if args.json else text(hit) for hit in hits(result))
    return _report_status(result.status, root)


def run_callers(args: argparse.Namespace) -> int:
    from project.index.queries import callers

    return _answer(args, lambda conn, root: callers(conn, root, args.fqn, limit=args.limit), lambda r: r.sites,
                   lambda site: f"{site.path}:{site.line}\t{site.caller or '(file)'}\t{site.certainty}")


def run_impact(args: argparse.Namespace) -> int:
    from project.index.queries import impact

    return _answer(args, lambda conn, root: impact(conn, root, args.fqn, depth=args.depth), lambda r: r.nodes,
                   lambda node: f"{node.distance}\t{node.relation}\t{node.fqn or '(file)'}\t{node.path}:{node.line}")


def run_outline(args: argparse.Namespace) -> int:
    from project.index.queries import outline

    return _answer(args, lambda conn, root: outline(conn, root, relative_path(root, args.file)), lambda r: r.symbols,
                   lambda hit: f"{hit.start_line}-{hit.end_line}\t{hit.kind}\t{hit.signature or hit.fqn}")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the code-graph subcommands to the `forgebot` parser."""
    index = sub.add_parser("index", help="build or refresh the code index of a checkout")
    index.add_argument("path")
    index.add_argument("--no-embeddings", action="store_true",
                       help="the code graph only: no vectors, and the full-text tables wait for `forgebot search`")
    index.add_argument("--full-text", action="store_true",
                       help="with --no-embeddings: build the full-text tables now, not on the first search")
    index.add_argument("--workers", type=int, default=default_workers(), help="parser processes")
    index.add_argument("--timings", action="store_true",
                       help="print the CPU and wall time of each build phase (file walk, parse, ...)")
    index.set_defaults(handler=run_index)
    symbols = sub.add_parser("symbols", help="every definition: kind, fqn, path, start_line, end_line")
    symbols.add_argument("path")
    symbols.add_argument("--json", action="store_true")
    symbols.set_defaults(handler=run_symbols)
    for name, handler, text in (
        ("callers", run_callers, "call sites of a symbol"),
        ("impact", run_impact, "symbols that depend on a symbol, up to --depth hops"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument("path")
        command.add_argument("fqn")
        command.add_argument("--json", action="store_true")
        command.add_argument("--limit", type=int, default=200)
        command.add_argument("--depth", type=int, default=2)
        command.set_defaults(handler=handler)
    outline_cmd = sub.add_parser("outline", help="definitions of one file with their signatures")
    outline_cmd.add_argument("path")
    outline_cmd.add_argument("file", help="file path, relative to PATH")
    outline_cmd.add_argument("--json", action="store_true")
    outline_cmd.set_defaults(handler=run_outline)
