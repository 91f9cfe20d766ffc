"""Search quality: MRR@10 and recall@10 of each leg and of the fusion, on real PHP.

Queries are the PHPDoc summaries of real methods ("Get the average value of a given key."); the index
is built with every docblock stripped, so a query can only be answered from code. The answer to a
query is the method it was written for. Run from the repository root:

    python tests/bench/bench_search_quality.py                      # 10 Laravel components, 400 queries
    python tests/bench/bench_search_quality.py --corpus /usr/share/php/Symfony/Component/HttpFoundation

The index is rebuilt each run in a temporary file; chunk vectors are cached in --cache (keyed by the
model and the embedded text), so only the first run pays for embedding (~10 min for 10k chunks).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from graph.index import search_store
from graph.index.chunks import chunk_file
from graph.index.db import connect
from graph.index.minilm import MiniLMEmbedder
from graph.index.parse import parse_source
from graph.index.search import Weights, search

# Laravel components, 2,432 chunks: all of Illuminate (10.7k chunks) takes ~15 min to embed on 2 cores.
DEFAULT_CORPUS = [
    f"/usr/share/php/Illuminate/{name}"
    for name in "Auth Broadcasting Bus Cache Collections Config Console Container Contracts Cookie".split()
]


def summary(docblock: str) -> str:
    """The first sentence-like line of a docblock, or "" if it has none worth asking."""
    for raw in docblock.splitlines():
        line = raw.strip().lstrip("/*").strip()
        if not line:
            continue
        if line.startswith(("@", "{@")) or len(line.split()) < 3:
            return ""
        return line.rstrip(".")
    return ""


def build(db: Path, roots: Sequence[Path], embedder: CachedEmbedder) -> dict[str, tuple[str, int]]:
    """Index every PHP file under `roots`; return summary -> (path, start_line) of its method."""
    conn = connect(db)
    search_store.ensure_schema(conn, embedder)
    targets: dict[str, tuple[str, int]] = {}
    seen: dict[str, int] = {}
    for root in roots:
        for file in sorted(root.rglob("*.php")):
            source = file.read_bytes()
            rel = str(file.relative_to(root.parent))
            symbols = parse_source(rel, source).symbols
            chunks = chunk_file(rel, source.decode(errors="replace"), symbols, docblocks=False)
            search_store.replace_file(conn, rel, "", chunks)
            for symbol in symbols:
                text = summary(symbol.docblock) if symbol.kind == "method" else ""
                if text:
                    seen[text] = seen.get(text, 0) + 1
                    targets[text] = (rel, symbol.start_line)
    started = time.perf_counter()
    count = search_store.embed_pending(conn, embedder)
    took = time.perf_counter() - started
    sys.stdout.write(f"embedded {count} chunks in {took:.0f}s ({count / max(took, 1e-9):.1f} chunks/s)\n")
    conn.close()
    # A summary shared by several methods ("Create a new instance") has no single right answer.
    return {text: where for text, where in targets.items() if seen[text] == 1}


class CachedEmbedder:
    """MiniLM with a persistent text -> vector cache, so re-runs and weight sweeps embed nothing twice."""

    def __init__(self, inner: MiniLMEmbedder, cache: Path) -> None:
        self.inner, self.model_id, self.dimension = inner, inner.model_id, inner.dimension
        self.conn = connect(cache, vectors=False)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS cache (model TEXT, text_hash TEXT, vector BLOB, "
            "PRIMARY KEY (model, text_hash))"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found = {
            row[0]: np.frombuffer(row[1], dtype=np.float32)
            for start in range(0, len(keys), 500)
            for row in self.conn.execute(
                f"SELECT text_hash, vector FROM cache WHERE model = ? AND text_hash IN "
                f"({','.join('?' * len(keys[start : start + 500]))})",
                (self.model_id, *keys[start : start + 500]),
            )
        }
        missing = [i for i, key in enumerate(keys) if key not in found]
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            with self.conn:
                for i, vector in zip(missing, fresh, strict=True):
                    found[keys[i]] = vector
                    self.conn.execute(
                        "INSERT OR REPLACE INTO cache VALUES (?, ?, ?)",
                        (self.model_id, keys[i], vector.tobytes()),
                    )
        return np.stack([found[key] for key in keys])


class _QueryVectors:
    """Serves precomputed query embeddings so weight sweeps do not re-run the model."""

    def __init__(self, embedder: CachedEmbedder, queries: list[str]) -> None:
        self.model_id, self.dimension = embedder.model_id, embedder.dimension
        self._rows = dict(zip(queries, embedder.embed(queries), strict=True))

    def embed(self, texts: Sequence[str]) -> np.ndarray:  # type: ignore[type-arg]
        return np.stack([self._rows[t] for t in texts])


def evaluate(
    conn: object, queries: dict[str, tuple[str, int]], vectors: _QueryVectors | None, weights: Weights
) -> tuple[float, float]:
    reciprocal, found = 0.0, 0
    for query, (path, line) in queries.items():
        answer = search(conn, query, embedder=vectors, limit=10, weights=weights)
        for rank, hit in enumerate(answer.hits, start=1):
            if hit.path == path and hit.start_line == line:
                reciprocal += 1.0 / rank
                found += 1
                break
    return reciprocal / len(queries), found / len(queries)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", action="append", type=Path)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "forgebot-embed-cache.db")
    args = parser.parse_args()
    roots = args.corpus or [Path(p) for p in DEFAULT_CORPUS]
    embedder = CachedEmbedder(MiniLMEmbedder(), args.cache)
    with tempfile.TemporaryDirectory(prefix="forgebot-quality-") as tmp:
        return report(Path(tmp) / "index.db", roots, embedder, args.queries)


def report(db: Path, roots: Sequence[Path], embedder: CachedEmbedder, wanted: int) -> int:
    targets = build(db, roots, embedder)
    conn = connect(db, readonly=True)
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    picked = sorted(targets)
    random.Random(6).shuffle(picked)
    queries = {q: targets[q] for q in picked[:wanted]}
    vectors = _QueryVectors(embedder, list(queries))
    sys.stdout.write(f"corpus: {', '.join(map(str, roots))}: {chunks} chunks, {len(queries)} queries\n")
    legs = {
        "lexical only": Weights(lexical=1, vector=0, graph=0),
        "vector only": Weights(lexical=0, vector=1, graph=0),
        "graph only": Weights(lexical=0, vector=0, graph=1),
        "plain RRF lexical+vector (k=60)": Weights(lexical=1, vector=1, graph=0, k=60),
        "hybrid (default weights)": Weights(),
        "hybrid without the graph leg": Weights(graph=0),
    }
    for name, weights in legs.items():
        mrr, recall = evaluate(conn, queries, vectors, weights)
        sys.stdout.write(f"{name:34s} MRR@10 {mrr:.3f}  recall@10 {recall:.3f}\n")
    conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
