"""Search quality: MRR@10 and recall@10 of each leg and of the fusion, on real code of any language.

Queries are the doc summaries of real methods ("Get the average value of a given key."): PHPDoc of
PHP methods, JSDoc of TypeScript/JavaScript methods and functions, and the docstrings of Python
methods and functions (read by Python's own `ast`). The index is built as a base index builds it,
each file by its language's extractor, with every docblock and docstring stripped (line numbers
kept), so a query can only be answered from code. The answer to a query is the definition it was
written for. Run from the repository root:

    python tests/bench/bench_search_quality.py   # tune on 3 Laravel components, report on Monolog and Ramsey
    python tests/bench/bench_search_quality.py --corpus DIR... --held-out NAME=DIR[,DIR]...

docs/search.md names two more held-out code bases (fetched at pinned commits, never tuned on) and
the command that adds them.

Fusion weights are tuned on the first corpus only (with `--tune-also`, on the mean over it and those)
and reported on held-out ones never used for tuning, beside what tasks ran before (no embedder:
lexical and graph legs) and what they run now.
The batch line times what `forgebot search --batch` does per question on a warm index with its
vectors: embed the question, run the legs, fuse (the command adds its own start, about a second).

The index is rebuilt each run in a temporary file; chunk vectors are cached in --cache (keyed by the
model and the embedded text), so only the first run pays for embedding (~10 min for 10k chunks).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from project.index import search_store
from project.index.chunks import chunk_file, owner_name, words
from project.index.db import connect
from project.index.extractors import Parsers, extractor_for
from project.index.minilm import MiniLMEmbedder
from project.index.model import Symbol
from project.index.search import Weights, search

# Three Laravel components, about 1,160 chunks: embedding a corpus takes minutes on two shared cores.
DEFAULT_CORPUS = [f"/usr/share/php/Illuminate/{name}" for name in "Auth Cache Collections".split()]


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


def strip_docstrings(source: bytes) -> tuple[bytes, dict[int, str]]:
    """A Python file with every docstring replaced by `...` (line numbers kept), and the summary each
    function's docstring gave, by the function's `def` line (Python's `ast`, the language's own reader)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source, {}
    lines = source.split(b"\n")
    questions: dict[int, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0] if node.body else None
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)) or first.end_lineno is None or first.end_col_offset is None:
            continue
        if not isinstance(node, ast.Module) and not isinstance(node, ast.ClassDef):
            text = summary(first.value.value.strip())
            if text:
                questions[node.lineno] = text
        start, end = first.lineno - 1, first.end_lineno - 1
        tail = lines[end][first.end_col_offset:]
        head = lines[start][:first.col_offset]
        for n in range(start + 1, end + 1):
            lines[n] = b""
        lines[start] = head + b"..." + (tail if start == end else b"")
        if start != end:
            lines[end] = tail.lstrip() and b" " * first.col_offset + tail.lstrip()
    return b"\n".join(lines), questions


def build(db: Path, roots: Sequence[Path], embedder: CachedEmbedder) -> dict[str, tuple[str, int]]:
    """Index every source file under `roots` (any language the graph reads, each by its own extractor, as a
    base index does); return summary -> (path, start_line) of its method or function."""
    conn = connect(db)
    search_store.ensure_schema(conn, embedder)
    targets: dict[str, tuple[str, int]] = {}
    seen: dict[str, int] = {}
    parsers = Parsers()
    for root in roots:
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            rel = str(file.relative_to(root.parent))
            extractor = extractor_for(rel)
            if extractor is None or "/node_modules/" in rel:
                continue
            source = file.read_bytes()
            questions: dict[int, str] = {}
            if extractor.language == "python":
                source, questions = strip_docstrings(source)
            rows = extractor.read(rel, source, parsers.get(extractor).parse(source), "")
            symbols = [
                Symbol(kind=r[1], fqn=r[2], name=r[3], path=rel, start_line=r[5], end_line=r[6],  # type: ignore[arg-type]
                       start_byte=r[7], end_byte=r[8], signature=r[9], docblock=r[10], parent_fqn=r[4])
                for r in sorted(rows.symbols, key=lambda r: r[7])
            ]
            chunks = chunk_file(rel, source.decode(errors="replace"), symbols, docblocks=False)
            search_store.replace_file(conn, rel, "", chunks)
            for symbol in symbols:
                if symbol.kind not in ("method", "function"):
                    continue
                text = questions.get(symbol.start_line, "") if extractor.language == "python" else \
                    summary(symbol.docblock) if symbol.kind == "method" or extractor.language != "php" else ""
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
    parser.add_argument("--tune-also", action="append", default=[],
                        help="NAME=DIR[,DIR]: another corpus to tune on (the weights maximise the mean MRR@10)")
    parser.add_argument("--held-out", action="append",
                        help="NAME=DIR[,DIR]: a corpus never used for tuning, where the figures are reported")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "forgebot-embed-cache.db")
    args = parser.parse_args()
    tune_roots = args.corpus or [Path(p) for p in DEFAULT_CORPUS]
    held_out = dict(item.split("=", 1) for item in args.held_out) if args.held_out else HELD_OUT
    embedder = CachedEmbedder(MiniLMEmbedder(), args.cache)
    sys.stdout.write(f"load average {os.getloadavg()[0]:.1f}\n")
    with tempfile.TemporaryDirectory(prefix="forgebot-quality-") as tmp:
        tuning = [Corpus(Path(tmp) / "tune.db", tune_roots, embedder, args.queries)]
        for name, dirs in (item.split("=", 1) for item in args.tune_also):
            tuning.append(Corpus(Path(tmp) / f"tune-{name}.db", [Path(d) for d in dirs.split(",")], embedder,
                                 args.queries))
        best = tune(tuning)
        for corpus in tuning:
            report(corpus, "tuning corpus", best)
            names(corpus, embedder)
        for name, dirs in held_out.items():
            corpus = Corpus(Path(tmp) / f"{name}.db", [Path(d) for d in dirs.split(",")], embedder, args.queries)
            report(corpus, f"held-out corpus {name} (never tuned on)", best)
            names(corpus, embedder)
            batch(corpus, embedder)
    return 0


# Other code bases than the tuning corpus, each with its own authors and docblock style: Monolog
# (logging) and Ramsey's UUID and collection libraries, about 750 chunks each.
HELD_OUT = {"monolog": "/usr/share/php/Monolog", "ramsey": "/usr/share/php/Ramsey"}


def names(corpus: Corpus, embedder: CachedEmbedder) -> None:
    """MRR@10 of queries that are a method's name, as an agent types them: the identifier (`getDefaultDriver`),
    its class and it (`CacheManager getDefaultDriver`), and its words (`get default driver`); up to 200
    methods whose name has two words or more and is unique in the corpus."""
    rows = corpus.conn.execute("SELECT name, symbol, path, start_line FROM chunks WHERE kind = 'method'").fetchall()
    count: dict[str, int] = {}
    for row in rows:
        count[str(row[0]).lower()] = count.get(str(row[0]).lower(), 0) + 1
    methods = [row for row in rows if count[str(row[0]).lower()] == 1 and len(words(str(row[0])).split()) > 1]
    random.Random(0).shuffle(methods)
    styles = {"identifier": lambda row: str(row[0]), "class and identifier": lambda row: f"{owner_name(str(row[1]))} "
              f"{row[0]}", "words": lambda row: words(str(row[0])).lower()}
    asked = {style: [(ask(row), (row[2], row[3])) for row in methods[:200]] for style, ask in styles.items()}
    vectors = _QueryVectors(embedder, sorted({q for pairs in asked.values() for q, _ in pairs}))
    for with_vectors in (True, False):
        figures = []
        for style, pairs in asked.items():
            mrr, _ = evaluate(corpus.conn, dict(pairs), vectors if with_vectors else None, Weights())
            figures.append(f"{style} {mrr:.3f}")
        sys.stdout.write(f"names ({len(methods[:200])} methods, {'hybrid' if with_vectors else 'no embedder'}): "
                         f"MRR@10 {', '.join(figures)}\n")


def batch(corpus: Corpus, embedder: CachedEmbedder) -> None:
    """Seconds for the corpus's questions as one batch: query embedding (the model, not the cache, with
    one thread as `forgebot search` runs it by default), every leg and the fusion, on the index with its
    vectors (warm: the pages were read before)."""
    queries = list(corpus.queries)
    model = MiniLMEmbedder(threads=1)
    started = time.perf_counter()
    cpu = time.process_time()
    vectors = model.embed(queries)
    embedded = time.perf_counter() - started
    rows = dict(zip(queries, vectors, strict=True))
    live = _Rows(embedder.model_id, embedder.dimension, rows)
    for query in queries:
        search(corpus.conn, query, embedder=live, limit=10)
    took = time.perf_counter() - started
    sys.stdout.write(f"batch of {len(queries)} questions: {took:.1f} s ({embedded:.1f} s embedding them; "
                     f"{time.process_time() - cpu:.1f} CPU-s), load average {os.getloadavg()[0]:.1f}\n")


class _Rows:
    def __init__(self, model_id: str, dimension: int, rows: dict[str, np.ndarray]) -> None:
        self.model_id, self.dimension, self._rows = model_id, dimension, rows

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._rows[t] for t in texts])


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


# The score fusion's settings (with vectors; the rank fusion without them keeps its own, tuned before).
GRID = {"vector": (0.6, 0.7, 0.8, 0.9), "vector_graph": (0.0, 0.05, 0.1, 0.2),
        "vector_name": (0.0, 0.03, 0.06, 0.1, 0.2), "vector_owner": (0.0, 0.03), "cosine_depth": (30, 50, 100)}


def tune(corpora: Sequence[Corpus]) -> Weights:
    """The weights with the best mean MRR@10 over `corpora`: from the defaults, each
    setting in turn takes its best value of `GRID` with the others held, until a whole round changes
    nothing. The single pass it replaced (the fusion's settings, then the reranking's) ended below the
    defaults it never tried once the vector leg grew stronger: 0.733 against 0.735 (docs/search.md)."""
    def mean(weights: Weights) -> float:
        return sum(corpus.score(weights)[0] for corpus in corpora) / len(corpora)

    best, best_mrr = Weights(), mean(Weights())
    for _ in range(4):
        improved = False
        for key, values in GRID.items():
            for value in values:
                weights = dataclasses.replace(best, **{key: value})
                mrr = mean(weights)
                if mrr > best_mrr + 1e-9:
                    best, best_mrr, improved = weights, mrr, True
        if not improved:
            break
    roots = ", ".join(str(root) for corpus in corpora for root in corpus.roots)
    sys.stdout.write(f"tuned on {roots}: {_weights(best)} (mean MRR@10 {best_mrr:.3f}); "
                     f"defaults: {_weights(Weights())}\n")
    return best


def _weights(weights: Weights) -> str:
    return ", ".join(f"{key} {getattr(weights, key)}" for key in GRID)


def report(corpus: Corpus, title: str, tuned: Weights) -> None:
    sys.stdout.write(
        f"\n{title}: {', '.join(map(str, corpus.roots))}: {corpus.chunks} chunks, {len(corpus.queries)} queries\n"
    )
    rows = {
        "lexical leg alone": (Weights(vector=0, graph=0, name=0, owner=0), True),
        "lexical+graph, no embedder (rank fusion)": (Weights(), False),
        "vector leg alone": (
            Weights(lexical=0, graph=0, vector=1, vector_graph=0, vector_name=0, vector_identifier=0), True),
        "graph leg alone": (Weights(lexical=0, vector=0, graph=1, name=0, owner=0), True),
        "hybrid, tuned, without the name bonus": (dataclasses.replace(tuned, vector_name=0, vector_owner=0), True),
        "hybrid, default weights (tasks now)": (Weights(), True),
        "hybrid, tuned weights": (tuned, True),
    }
    for name, (weights, with_vectors) in rows.items():
        mrr, recall = corpus.score(weights, embedder=with_vectors)
        sys.stdout.write(f"{name:44s} MRR@10 {mrr:.3f}  recall@10 {recall:.3f}\n")


if __name__ == "__main__":
    sys.exit(main())
