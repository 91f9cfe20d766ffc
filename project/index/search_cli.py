"""`forgebot search PATH QUERY [--json] [-k N] [--batch FILE]`: hybrid search of a checkout from a shell.

The checkout's index (under the data directory, never inside the checkout) is created on first use
and brought up to date before answering, so results always describe the files on disk. The vector
leg uses the configured embedder (`FORGEBOT_EMBEDDER__KIND`, the offline model by default) once the
index holds its vectors: embedding a repository takes minutes to hours, so a search never builds
them unless `--embed` asks (`forgebot index PATH` builds them too). Until then the answer comes at
once from the lexical and graph legs and says why the vector leg is absent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from foundation.settings import Settings
from project.embedding import command_embedder
from project.index import search_store, taskindex
from project.index.db import Connection, connect
from project.index.embed import Embedder, EmbeddingError, Matrix
from project.index.location import index_path
from project.index.progress import INTERRUPTED, Vectors
from project.index.search import Answer, search


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("search", help="hybrid (full-text, vector, symbol) search of a checkout")
    parser.add_argument("path", type=Path, help="the checkout (a git worktree)")
    parser.add_argument("query", nargs="?", default=None, help="what to look for")
    parser.add_argument("--json", action="store_true", help="one JSON object per query")
    parser.add_argument("-k", type=int, default=10, help="hits per query (default 10)")
    parser.add_argument("--batch", type=Path, help="run one query per line of FILE")
    parser.add_argument("--no-embeddings", action="store_true", help="lexical and symbol legs only")
    parser.add_argument("--embed", action="store_true",
                        help="embed the chunks that have no vector yet before answering (can take minutes)")
    parser.set_defaults(handler=run)


def configured_embedder(args: argparse.Namespace) -> Embedder | None:
    """The embedder `FORGEBOT_EMBEDDER__*` configures (the offline model by default), or none."""
    if args.no_embeddings:
        return None
    settings = getattr(args, "settings", None) or Settings()
    return command_embedder(settings.embedder)


def _queries(args: argparse.Namespace) -> list[str]:
    if (args.query is None) == (args.batch is None):
        raise ValueError("give either QUERY or --batch FILE")
    if args.batch is None:
        return [str(args.query)]
    lines = Path(args.batch).read_text().splitlines()
    return [line.strip() for line in lines if line.strip()]


def _render(answer: Answer, as_json: bool, with_freshness: bool) -> str:
    hits = [{key: value for key, value in hit.as_dict().items() if key != "snippet"} for hit in answer.hits]
    if as_json:
        record: dict[str, object] = {"query": answer.query, "hits": hits}
        if with_freshness:
            record["legs"] = list(answer.legs)
            record["indexed_commit"] = answer.freshness.indexed_commit
            record["stale_files"] = list(answer.freshness.stale_files)
            record["notes"] = list(answer.notes)
        return json.dumps(record)
    lines = [f"# {answer.query}"] if not with_freshness else []
    lines += [
        f"{h['path']}:{h['start_line']}-{h['end_line']}  {h['symbol'] or '-'}  {h['score']:.4f}" for h in hits
    ]
    if with_freshness:
        lines += [f"# {note}" for note in answer.notes]
        if answer.freshness.stale_files:
            lines.append(f"# stale: {', '.join(answer.freshness.stale_files)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        queries = _queries(args)
        if args.k < 1:
            raise ValueError("-k must be at least 1")
        root = Path(args.path).resolve()
        taskindex.head_commit(root)  # fails clearly when PATH is not a git checkout
    except (ValueError, OSError, RuntimeError) as exc:
        sys.stderr.write(f"forgebot search: {exc}\n")
        return 2
    embedder = configured_embedder(args)
    index = index_path(Path(args.data_dir), root)
    if not index.exists():
        hint = "; embedding can take minutes" if embedder and args.embed else ""
        sys.stderr.write(f"forgebot search: building the index of {root} (first run{hint})\n")
    vectors = Vectors("forgebot search", embedder.model_id, f"forgebot search {shlex.quote(str(args.path))} --embed") \
        if embedder is not None and args.embed else None
    failed = False
    try:
        taskindex.refresh(index, root, embedder=embedder if args.embed else None, progress=vectors)
    except KeyboardInterrupt:
        if vectors is None:
            raise
        sys.stderr.write(f"forgebot search: {vectors.interrupted()}\n")
        return INTERRUPTED
    except EmbeddingError as exc:  # an embeddings endpoint down: answer from the other legs, and say so
        if vectors is None:
            raise
        sys.stderr.write(f"forgebot search: {vectors.stopped(str(exc))}\n")
        embedder, failed = None, True
    conn = connect(index, readonly=True)
    search_store.tune_reader(conn)
    try:
        leg, note = vector_leg(conn, embedder)
        if failed:
            note = "the embeddings endpoint failed (said above)"
        single = args.batch is None
        if not single and note:
            sys.stderr.write(f"forgebot search: {note}\n")
        if leg is not None and not single:
            leg = _Embedded(leg, queries)  # one model call for the whole batch, not one per question
        for query in queries:
            answer = search(conn, query, embedder=leg, limit=args.k, absent=note)
            if leg is not None and note:
                answer = dataclasses.replace(answer, notes=(*answer.notes, note))
            sys.stdout.write(_render(answer, args.json, with_freshness=single) + "\n")
    finally:
        conn.close()
    return 1 if failed else 0


class _Embedded:
    """The batch's questions embedded together up front (the model batches them far faster)."""

    def __init__(self, embedder: Embedder, queries: list[str]) -> None:
        self.model_id, self.dimension, self._inner = embedder.model_id, embedder.dimension, embedder
        self._rows = dict(zip(queries, embedder.embed(queries), strict=True))

    def embed(self, texts: Sequence[str]) -> Matrix:
        if all(text in self._rows for text in texts):
            return np.stack([self._rows[text] for text in texts])
        return self._inner.embed(texts)


# Below this share of chunks without a vector, the vector leg runs (the rest are files changed since
# the vectors were built, and the lexical leg still finds them); above it, the leg would rank only
# what happened to be embedded first.
MOST_EMBEDDED = 0.95


def vector_leg(conn: Connection, embedder: Embedder | None) -> tuple[Embedder | None, str]:
    """The embedder when the index holds its vectors for (nearly) every chunk, else None; and a note.

    The note says why the leg is absent, or how many chunks it cannot see yet; "" when none.
    """
    if embedder is None:
        return None, "no embedder configured"
    meta = search_store.read_meta(conn)
    total, pending = conn.execute("SELECT count(*), count(*) FILTER (WHERE embedded = 0) FROM chunks").fetchone()
    build = "`forgebot index PATH` or `forgebot search --embed` builds them"
    if (meta.get("model_id"), meta.get("dimension")) != (embedder.model_id, str(embedder.dimension)):
        return None, f"the index holds no vectors of {embedder.model_id} yet ({build})"
    if total and total - pending < MOST_EMBEDDED * total:
        return None, f"vectors are being built or out of date: {total - pending} of {total} chunks embedded ({build})"
    if pending:
        return embedder, f"{pending} of {total} chunks changed since their vectors were built ({build})"
    return embedder, ""
