"""`forgebot memory PATH QUERY [--json] [-k N] [--batch FILE]`: project memory (documents and history) of a checkout.

Like `forgebot search`, the checkout's index (under the data directory) is brought up to date before
answering — the code graph first, so every hit's entry-point symbols exist in it — and the answer
says what it ran without (no embedder, memory not embedded, history it could not read). A checkout
that has not changed since the last question (same HEAD, same uncommitted files) is not refreshed
at all: a question then costs one `git status`, run while the index is searched. Discussions on
merged changes and closed issues need a forge, so the command line has documents and commits only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from foundation.gitrunner import GitError, GitTampered, Repo, run
from project.embedding import command_embedder
from project.index import memory, memory_sources, taskindex
from project.index.db import Connection, connect
from project.index.embed import Embedder, EmbeddingError
from project.index.location import index_path
from project.index.memory import MemoryHit
from project.index.memory_history import MAX_COMMITS
from project.index.progress import Progress


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("memory", help="search a checkout's documents and history (why and where decided)")
    parser.add_argument("path", type=Path, help="the checkout (a git worktree)")
    parser.add_argument("query", nargs="?", default=None, help="a question in natural language")
    parser.add_argument("--json", action="store_true", help="one JSON object per question: hits, notes")
    parser.add_argument("-k", type=int, default=10, help="hits (default 10)")
    parser.add_argument("--batch", type=Path, help="answer one question per line of FILE")
    parser.add_argument("--no-embeddings", action="store_true", help="full-text and history legs only")
    parser.add_argument("--embed", action="store_true",
                        help="embed the memory that has no vector yet before answering (can take minutes)")
    parser.add_argument("--max-commits", type=int, default=MAX_COMMITS,
                        help=f"newest commits to remember (default {MAX_COMMITS})")
    parser.set_defaults(handler=run_memory)


def _questions(args: argparse.Namespace) -> list[str]:
    if (args.query is None) == (args.batch is None):
        raise ValueError("give either QUERY or --batch FILE")
    if args.batch is None:
        return [str(args.query)]
    return [line.strip() for line in Path(args.batch).read_text().splitlines() if line.strip()]


def checkout_state(root: Path) -> str:
    """What the index of a checkout depends on, in one `git status`: HEAD, and each changed or untracked
    file with its size and modification time (an edited file that stays edited still changes it). Where
    the upstream branch is does not count: a `git fetch` changes nothing the index holds, and counting
    how far ahead or behind it is costs a walk of the history."""
    done = run(["status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z", "--untracked-files=all"],
               Repo.at(root))
    if done.returncode != 0:
        raise GitError(f"git status failed: {done.stderr[-300:]}")
    digest = hashlib.sha256()
    for entry in done.stdout.split("\0"):
        if entry.startswith(("# branch.upstream ", "# branch.ab ")):
            continue
        digest.update(f"{entry}\0".encode())
        if entry[:1] in ("1", "2", "?", "u"):
            path = entry.rsplit(" ", 1)[-1] if entry[:1] != "?" else entry[2:]
            try:
                info = os.lstat(root / path)
                digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
            except OSError:
                digest.update(f"{path}\0gone\0".encode())
    return digest.hexdigest()


def fresh_index(args: argparse.Namespace, root: Path, embedder: Embedder | None) -> tuple[Path, list[str]]:
    """The checkout's index with its graph and memory up to date (its vectors too, with `embedder`), and
    what the refresh had to say.

    Nothing is refreshed when the checkout is as it was at the last refresh (`checkout_state`)."""
    index = index_path(Path(args.data_dir), root)
    state = checkout_state(root)
    if index.is_file():
        with connect(index, readonly=True) as conn:
            if _current(conn, embedder) == state:
                return index, []
    return _refresh(args, root, embedder, state)


def _refresh(args: argparse.Namespace, root: Path, embedder: Embedder | None, state: str) -> tuple[Path, list[str]]:
    """Bring the checkout's index up to date (the graph, then memory) and record `state` as what it describes."""
    index = index_path(Path(args.data_dir), root)
    if not index.is_file():
        sys.stderr.write(f"forgebot {args.command}: remembering the history of {root} (first run)\n")
    taskindex.refresh(index, root, embedder=None)  # the graph the entry points resolve against
    conn = connect(index)
    try:
        report = memory_sources.refresh(conn, root, embedder=embedder, max_commits=args.max_commits,
                                        progress=Progress(f"forgebot {args.command}"))
        with conn:
            memory.write_meta(conn, checkout_state=state)
    except GitError as exc:  # what git cannot read now is said; the answer comes from what is remembered
        return index, [f"memory not brought up to date: {exc}"]
    finally:
        conn.close()
    return index, report.notes


def _current(conn: Connection, embedder: Embedder | None) -> str | None:
    """The checkout state this index was last brought up to date with; None when it must be refreshed
    whatever the checkout says (no memory yet, or items still to embed for a configured embedder)."""
    if not memory.present(conn) or (embedder is not None and memory.pending(conn) > 0):
        return None
    return memory.read_meta(conn).get("checkout_state")


Answer = tuple[str, list[MemoryHit], list[str]]


def answers(args: argparse.Namespace, root: Path, embedder: Embedder | None, questions: list[str], *,
            embed: bool = False) -> list[Answer]:
    """Each question's hits and notes, from an index that describes the checkout as it is; the vector leg
    from the vectors the index holds, made before answering only when asked (`embed`): as for `forgebot
    search`, a first question on a history of 20,000 commits would otherwise wait for each to be embedded.

    The freshness check (`git status`) and the search of the index as it stands run side by side: on a
    checkout unchanged since the last question, the common case, those answers stand and a question
    costs the longer of the two rather than their sum. When the checkout changed, the index is brought
    up to date and the questions asked again. When git cannot say (a failed `git status`), the answers
    come from what is remembered, and say so."""
    index = index_path(Path(args.data_dir), root)
    embedding = embedder if embed else None  # what the refresh embeds with
    with ThreadPoolExecutor(max_workers=1) as pool:
        probe = pool.submit(checkout_state, root)
        early = _ask(index, questions, embedder, embedding, args.k, None) if index.is_file() else None
        problem = ""
        try:
            state: str | None = probe.result()
        except GitTampered:
            raise
        except GitError as exc:
            state, problem = None, f"memory not brought up to date: {exc}"
    if state is None:
        if early is not None and early[0] is not None:
            return [(q, hits, [problem, *notes]) for q, hits, notes in early[1]]
        raise GitError(problem)
    if early is not None and early[0] == state:
        return early[1]
    index, refreshed = _refresh(args, root, embedding, state)
    return _ask(index, questions, embedder, embedding, args.k, refreshed)[1]


def _ask(index: Path, questions: list[str], embedder: Embedder | None, embedding: Embedder | None, k: int,
         refreshed: list[str] | None) -> tuple[str | None, list[Answer]]:
    """The state the index describes and its answers, read in one transaction (a refresh by another
    process in between cannot mix two states). Before a refresh (`refreshed` None), no answers when
    the index must be refreshed whatever the checkout says; after one, its notes go with the first answer."""
    with connect(index, readonly=True) as conn:
        conn.execute("BEGIN")
        try:
            state = _current(conn, embedding) if refreshed is None else ""
            if state is None:
                return None, []
            first = refreshed or []
            waiting = memory.pending(conn) if embedder is not None and embedding is None else 0
            if waiting:
                items = sum(memory.count(conn).values())
                first = [*first, f"{waiting:,} of {items:,} memory items have no vector yet: "
                                 "`forgebot memory --embed` embeds them (can take minutes)"]
            found: list[Answer] = []
            for question in questions:
                hits, notes = memory.search(conn, question, embedder=embedder, limit=k)
                found.append((question, hits, list(dict.fromkeys([*first, *notes]))))
                first = []
            return state, found
        finally:
            conn.execute("COMMIT")


def checked_root(args: argparse.Namespace, command: str) -> Path | None:
    """The checkout PATH names, or None after a one-line error (not a git checkout with a commit)."""
    try:
        root = Path(args.path).resolve()
        taskindex.head_commit(root)
        return root
    except (ValueError, OSError, GitError, GitTampered) as exc:
        sys.stderr.write(f"forgebot {command}: {exc}\n")
        return None


def run_memory(args: argparse.Namespace) -> int:
    try:
        questions = _questions(args)
        if args.k < 1 or args.max_commits < 1:
            raise ValueError("-k and --max-commits must be at least 1")
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"forgebot memory: {exc}\n")
        return 2
    root = checked_root(args, "memory")
    if root is None:
        return 2
    embedder = None if args.no_embeddings else command_embedder(args.settings.embedder)
    try:
        found = answers(args, root, embedder, questions, embed=args.embed)
    except (GitTampered, GitError) as exc:
        sys.stderr.write(f"forgebot memory: {exc}\n")
        return 2
    except EmbeddingError as exc:  # an embeddings endpoint down: what was read and embedded stays
        sys.stderr.write(f"forgebot memory: the embeddings endpoint failed ({' '.join(str(exc).split())}): what was "
                         "remembered and embedded "
                         "is kept; check FORGEBOT_EMBEDDER__*, then ask again (without --embed the other legs "
                         "answer)\n")
        return 1
    for question, hits, notes in found:
        _print(question, hits, notes, args.json, single=args.batch is None)
    return 0


# the symbols a hit's line names; `--json` has them all
SHOWN_SYMBOLS = 4


def _print(question: str, hits: list[MemoryHit], notes: list[str], as_json: bool, single: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"query": question, "hits": [h.as_dict() for h in hits], "notes": notes}) + "\n")
        return
    if not single:
        sys.stdout.write(f"# {question}\n")
    for hit in hits:
        where = hit.source[:12] if hit.kind == "commit" else f"{hit.source} § {hit.anchor}"
        sys.stdout.write(f"{hit.kind:8}  {where}  {hit.title}  {hit.score:.4f}\n")
        named = [e.label() for e in hit.entry_points] if hit.entry_points else list(hit.symbols)
        if len(named) > SHOWN_SYMBOLS + 1:  # a refactoring's commit touches dozens: one line stays readable
            named = [*named[:SHOWN_SYMBOLS], f"{len(named) - SHOWN_SYMBOLS} more (--json lists them)"]
        if named:
            sys.stdout.write(f"          → {', '.join(named)}\n")
    for note in notes:
        sys.stdout.write(f"# {note}\n")
