"""`forgebot memory PATH QUERY [--json] [-k N]`: project memory (documents and history) of a checkout.

Like `forgebot search`, the checkout's index (under the data directory) is brought up to date before
answering — the code graph first, so every hit's entry-point symbols exist in it — and the answer
says what it ran without (no embedder, memory not embedded). Discussions on merged changes and closed
issues need a forge, so the command line has documents and commits only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from foundation.gitrunner import GitError
from project.embedding import embedder_for
from project.index import memory, memory_sources, taskindex
from project.index.db import connect
from project.index.location import index_path


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("memory", help="search a checkout's documents and history (why and where decided)")
    parser.add_argument("path", type=Path, help="the checkout (a git worktree)")
    parser.add_argument("query", help="a question in natural language")
    parser.add_argument("--json", action="store_true", help="one JSON object: hits, notes")
    parser.add_argument("-k", type=int, default=10, help="hits (default 10)")
    parser.add_argument("--no-embeddings", action="store_true", help="full-text leg only")
    parser.add_argument("--max-commits", type=int, default=10_000, help="newest commits to remember (default 10000)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        if args.k < 1 or args.max_commits < 1:
            raise ValueError("-k and --max-commits must be at least 1")
        root = Path(args.path).resolve()
        taskindex.head_commit(root)  # fails clearly when PATH is not a git checkout with a commit
    except (ValueError, OSError, GitError) as exc:
        sys.stderr.write(f"forgebot memory: {exc}\n")
        return 2
    embedder = None if args.no_embeddings else embedder_for(args.settings.embedder)
    index = index_path(Path(args.data_dir), root)
    taskindex.refresh(index, root, embedder=None)  # the graph the entry points resolve against
    conn = connect(index)
    try:
        report = memory_sources.refresh(conn, root, embedder=embedder, max_commits=args.max_commits)
        hits, notes = memory.search(conn, args.query, embedder=embedder, limit=args.k)
    finally:
        conn.close()
    notes = [*report.notes, *notes]
    if args.json:
        sys.stdout.write(json.dumps({"query": args.query, "hits": [h.as_dict() for h in hits], "notes": notes}) + "\n")
        return 0
    for hit in hits:
        where = hit.source[:12] if hit.kind == "commit" else f"{hit.source} § {hit.anchor}"
        sys.stdout.write(f"{hit.kind:8}  {where}  {hit.title}  {hit.score:.4f}\n")
        if hit.symbols:
            sys.stdout.write(f"          → {', '.join(hit.symbols)}\n")
    for note in notes:
        sys.stdout.write(f"# {note}\n")
    return 0
