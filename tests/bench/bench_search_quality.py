"""Search quality: MRR@10 and recall@10 of each leg and of the fusion, on real PHP.

Queries are the PHPDoc summaries of real methods ("Get the average value of a given key."); the index
is built with every docblock stripped, so a query can only be answered from code. The answer to a
query is the method it was written for. Run from the repository root:

    python tests/bench/bench_search_quality.py     # tune on 10 Laravel components, report on Symfony too
    python tests/bench/bench_search_quality.py --corpus DIR... --held-out DIR...

Fusion weights are tuned on the first corpus only and reported on a held-out one never used for
tuning, beside what tasks ran before (no embedder: lexical and graph legs) and what they run now.

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

from project.index import search_store
from project.index.chunks import chunk_file
from project.index.db import connect
from project.index.minilm import MiniLMEmbedder
from project.index.parse import parse_source
from project.index.search import Weights, search

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
    parser.add_argument("--corpus", action="append", type=Path, help="the corpus weights are tuned on")
    parser.add_argument("--held-out", action="append", type=Path,
                        help="a corpus never used for tuning, where the figures are reported")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "forgebot-embed-cache.db")
    args = parser.parse_args()
    tune_roots = args.corpus or [Path(p) for p in DEFAULT_CORPUS]
    test_roots = args.held_out or [Path(p) for p in HELD_OUT]
    embedder = CachedEmbedder(MiniLMEmbedder(), args.cache)
    with tempfile.TemporaryDirectory(prefix="forgebot-quality-") as tmp:
        tuning = Corpus(Path(tmp) / "tune.db", tune_roots, embedder, args.queries)
        held_out = Corpus(Path(tmp) / "test.db", test_roots, embedder, args.queries)
        best = tune(tuning)
        for corpus, title in ((tuning, "tuning corpus"), (held_out, "held-out corpus (never tuned on)")):
            report(corpus, title, best)
    return 0


# Symfony: another framework's code and docblock style than the tuning corpus.
HELD_OUT = [f"/usr/share/php/Symfony/Component/{name}" for name in ("HttpFoundation", "Console")]


class Corpus:
    """One indexed corpus with its queries and their precomputed vectors."""

    def __init__(self, db: Path, roots: Sequence[Path], embedder: CachedEmbedder, wanted: int) -> None:
        targets = build(db, roots, embedder)
        self.roots = roots
        self.conn = connect(db, readonly=True)
        self.chunks = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        picked = sorted(targets)
        random.Random(6).shuffle(picked)
        self.queries = {q: targets[q] for q in picked[:wanted]}
        self.vectors = _QueryVectors(embedder, list(self.queries))

    def score(self, weights: Weights, *, embedder: bool = True) -> tuple[float, float]:
        return evaluate(self.conn, self.queries, self.vectors if embedder else None, weights)


def tune(corpus: Corpus) -> Weights:
    """The fusion weights with the best MRR@10 on `corpus` (lexical weight fixed at 1)."""
    best, best_mrr = Weights(), -1.0
    for vector in (0.75, 1.0, 1.5):
        for graph in (0.0, 0.3, 0.6):
            for k in (3, 5, 10, 30):
                weights = Weights(lexical=1, vector=vector, graph=graph, k=k)
                mrr, _ = corpus.score(weights)
                if mrr > best_mrr:
                    best, best_mrr = weights, mrr
    sys.stdout.write(
        f"tuned on {', '.join(map(str, corpus.roots))}: vector {best.vector}, graph {best.graph}, k {best.k} "
        f"(MRR@10 {best_mrr:.3f}); defaults: vector {Weights().vector}, graph {Weights().graph}, k {Weights().k}\n"
    )
    return best


def report(corpus: Corpus, title: str, tuned: Weights) -> None:
    sys.stdout.write(
        f"\n{title}: {', '.join(map(str, corpus.roots))}: {corpus.chunks} chunks, {len(corpus.queries)} queries\n"
    )
    rows = {
        "lexical leg alone": (Weights(lexical=1, vector=0, graph=0), True),
        "lexical+graph, no embedder (tasks before)": (Weights(), False),
        "vector leg alone": (Weights(lexical=0, vector=1, graph=0), True),
        "graph leg alone": (Weights(lexical=0, vector=0, graph=1), True),
        "hybrid, default weights (tasks now)": (Weights(), True),
        "hybrid, tuned weights": (tuned, True),
    }
    for name, (weights, with_vectors) in rows.items():
        mrr, recall = corpus.score(weights, embedder=with_vectors)
        sys.stdout.write(f"{name:44s} MRR@10 {mrr:.3f}  recall@10 {recall:.3f}\n")


if __name__ == "__main__":
    sys.exit(main())
