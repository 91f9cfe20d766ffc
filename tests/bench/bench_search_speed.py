"""Search speed: query latency at scale, embedding throughput and base index build time.

Run from the repository root (takes a few minutes on two cores):

    python tests/bench/bench_search_speed.py                 # everything
    python tests/bench/bench_search_speed.py --only latency  # or: embed, build

latency: real PHP chunks from /usr/share/php, repeated under distinct paths up to 100k (hybrid) and
50k (lexical only), with random unit vectors of 384 dimensions (the scan cost does not depend on
what the vectors mean). Query embedding is excluded: the queries' vectors are computed beforehand.
embed: chunks per second of the offline default model on real chunk texts.
build: time until a task on a 10k-file git repository copied from /usr/share/php starts investigating
(the worker's path: base index, task copy, forge memory, the first search, memory search and lookup),
then when the rest of the base (full-text, memory) arrives in the background and the vectors after it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from foundation.settings import EmbedderSettings
from graph import checkout, forge_memory
from graph.tools.code_search import search_memory, semantic_search
from project.embedding import embedder_for
from project.index import basevectors, queries, search_store, taskindex
from project.index.chunks import Chunk, chunk_file
from project.index.db import connect
from project.index.minilm import MiniLMEmbedder
from project.index.parse import parse_source
from project.index.search import Weights, search

CORPUS = Path("/usr/share/php")
DIM = 384


def real_chunks(limit: int) -> Iterator[tuple[str, list[Chunk], list[str]]]:
    """(path, chunks, docblock summaries) of real files, until `limit` chunks were produced."""
    produced = 0
    for file in sorted(CORPUS.rglob("*.php")):
        rel = str(file.relative_to(CORPUS))
        source = file.read_bytes()
        parsed = parse_source(rel, source)
        chunks = chunk_file(rel, source.decode(errors="replace"), parsed.symbols)
        summaries = [
            s.docblock.splitlines()[1].strip(" *") for s in parsed.symbols if s.docblock.count("\n") > 1
        ]
        yield rel, chunks, [s for s in summaries if len(s.split()) >= 3]
        produced += len(chunks)
        if produced >= limit:
            return


def build_index(db: Path, total: int, vectors: bool) -> list[str]:
    """Fill `db` with `total` chunks (real files repeated under copyN/ prefixes); return query texts."""
    files = list(real_chunks(total))
    conn = connect(db)
    search_store.ensure_schema(conn, _Vectors() if vectors else None)
    rng = np.random.default_rng(6)
    written, copy = 0, 0
    while written < total:
        for rel, chunks, _ in files:
            path = f"copy{copy}/{rel}"
            moved = [Chunk(path, c.start_line, c.end_line, c.symbol, c.kind, c.name, c.text) for c in chunks]
            search_store.replace_file(conn, path, "", moved[: total - written])
            written += min(len(moved), total - written)
            if written >= total:
                break
        copy += 1
    if vectors:
        ids = [row[0] for row in conn.execute("SELECT id FROM chunks")]
        for start in range(0, len(ids), 5000):
            batch = ids[start : start + 5000]
            search_store.store_vectors(conn, batch, _unit(rng.standard_normal((len(batch), DIM))))
    conn.execute("PRAGMA optimize")
    conn.close()
    return [q for _, _, summaries in files for q in summaries]


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = rows.astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


class _Vectors:
    """Precomputed random query vectors: query embedding is not part of the measured latency."""

    model_id, dimension = "bench-random", DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        seed = sum(map(ord, texts[0])) if texts else 0
        return _unit(np.random.default_rng(seed).standard_normal((len(texts), DIM)))


def latency(
    db: Path, queries: list[str], weights: Weights, vectors: bool, kinds: Sequence[str] = ()
) -> list[tuple[float, float, float]]:
    """p50/p95/p99 in ms of a first pass (cold: pages come from disk) and a second (warm) pass."""
    conn = connect(db, readonly=True)
    search_store.tune_reader(conn)
    embedder = _Vectors() if vectors else None
    passes = []
    for _ in range(2):
        times = []
        for query in queries:
            started = time.perf_counter()
            search(conn, query, embedder=embedder, weights=weights, kinds=kinds)
            times.append((time.perf_counter() - started) * 1000)
        p50, p95, p99 = np.percentile(times, [50, 95, 99])
        passes.append((float(p50), float(p95), float(p99)))
    conn.close()
    return passes


def run_latency(work: Path, queries_wanted: int) -> None:
    for total, vectors, weights, name in (
        (100_000, True, Weights(), "hybrid (lexical+vector+graph)"),
        (50_000, False, Weights(vector=0, graph=0), "lexical only"),
    ):
        db = work / f"speed-{total}.db"
        saved = db.with_suffix(".queries.json")
        started = time.perf_counter()
        if not saved.is_file():  # --work keeps filled indexes between runs
            saved.write_text(json.dumps(build_index(db, total, vectors)))
        queries = json.loads(saved.read_text())[:queries_wanted]
        took = time.perf_counter() - started
        for label, (p50, p95, p99) in zip(
            ("cold", "warm"), latency(db, queries, weights, vectors), strict=True
        ):
            sys.stdout.write(
                f"{name:30s} {total:>7,} chunks, {label}: p50 {p50:5.1f} ms  p95 {p95:5.1f} ms  "
                f"p99 {p99:5.1f} ms  "
                f"({len(queries)} queries; index ready in {took:.0f}s)\n"
            )
        if vectors:
            alone = Weights(lexical=0, graph=0, vector=1, vector_graph=0, vector_name=0, vector_identifier=0)
            for label, weights, kinds in (("  vector leg alone", alone, ()),
                                          ("  hybrid, kind filter (4x deeper)", Weights(), ("method",))):
                _, (p50, _, p99) = latency(db, queries, weights, True, kinds)
                sys.stdout.write(f"{label:30s} {total:>7,} chunks, warm: p50 {p50:5.1f} ms  p99 {p99:5.1f} ms\n")


def run_embed(count: int) -> float:
    texts = [c.embed_text for _, chunks, _ in real_chunks(count) for c in chunks][:count]
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:8])
    started, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    per_cpu_second = len(texts) / (time.process_time() - cpu)
    # Other jobs share these two cores; CPU time tells what the model costs, wall time what we got.
    sys.stdout.write(
        f"embedding (MiniLM-L6 int8, onnxruntime, 2 cores): {rate:.1f} chunks/s wall clock, "
        f"{per_cpu_second:.1f} chunks "
        f"per CPU-second (so ~{2 * per_cpu_second:.0f}/s on two idle cores), {len(texts)} real chunks\n"
    )
    return rate


def _children_cpu() -> float:
    """CPU seconds of this process's children and of the children they reaped (the pool's forkserver
    and its parser processes), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid; then utime, stime, cutime, cstime
            total += sum(int(value) for value in fields[11:15]) / tick
    return total


def run_build(work: Path, files: int, vector_seconds: float) -> None:
    repo = work / "repo"
    sources = sorted(CORPUS.rglob("*.php"))
    for n in range(files):
        source = sources[n % len(sources)]
        target = repo / f"r{n // len(sources)}" / source.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    # What a task on this repository waits for before its analyzer's first call, as the worker runs it
    # (`checkout.index_with_memory` without the forge's network read): the product's own
    # `index_checkout` (a large repository: the code graph, the task copy, the rest of the base and
    # the vectors started in the background), the forge discussions taken into the task index, then
    # the analyzer's first investigation step (a search, a memory search and a definition lookup).
    settings = EmbedderSettings()
    children = _children_cpu()
    started, cpu = time.perf_counter(), time.process_time()
    indexed = checkout.index_checkout(work / "data", "bench", repo, "t1", settings)
    took_index = time.perf_counter() - started
    forge_memory.remember(work / "data" / "forge-memory.db", Path(indexed["index"]), forge_memory.Fetched())
    took_memory = time.perf_counter() - started - took_index
    first = time.perf_counter()
    conn = connect(indexed["index"])
    answer = semantic_search(conn, repo, "cache expired items eviction", k=8)
    _, memory_notes = search_memory(conn, "why is the cache evicted", k=8, root=repo)
    definitions = queries.find_symbols(conn, "CacheInterface")
    conn.close()
    took_first = time.perf_counter() - first
    took, took_cpu = time.perf_counter() - started, time.process_time() - cpu
    parsers = _children_cpu() - children
    base = taskindex.base_index_path(work / "data", "bench", taskindex.head_commit(repo))
    graph = taskindex.graph_base_path(base)
    size = (graph if graph.exists() else base).stat().st_size / 1e6
    sys.stdout.write(
        f"task start on {files:,} files: {took:.0f}s until the first investigation step has answered "
        f"(index {took_index:.1f}s, forge memory {took_memory:.1f}s, first step {took_first:.1f}s: search legs "
        f"{'+'.join(answer.legs)}, {len(answer.hits)} hits, {len(definitions)} definitions; memory: "
        f"{'; '.join(memory_notes) or 'ready'}); {took_cpu:.1f} CPU-seconds in this process and "
        f"{parsers:.1f} in its parser processes, so ~{(took_cpu + parsers) / 2:.0f}s on two idle cores "
        f"(load average {os.getloadavg()[0]:.1f}; the base the task started on: "
        f"{'code graph alone' if graph.exists() else 'whole'}, {size:.0f} MB; waited at most "
        f"{settings.wait_seconds:g}s for the rest)\n"
    )
    began = time.perf_counter()
    while not base.exists() and time.perf_counter() - began < 900:
        time.sleep(1)
    if base.exists():
        conn = connect(base, readonly=True)
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        conn.close()
        adopt = time.perf_counter()
        conn = connect(indexed["index"])
        answer = semantic_search(conn, repo, "cache expired items eviction", k=8)
        conn.close()
        sys.stdout.write(
            f"the whole base (full-text + memory, {chunks:,} chunks, {base.stat().st_size / 1e6:.0f} MB) was there "
            f"{time.perf_counter() - started:.0f}s after the task started; the task took it in with its next search "
            f"in {time.perf_counter() - adopt:.1f}s (legs {'+'.join(answer.legs)}; load average "
            f"{os.getloadavg()[0]:.1f})\n"
        )
    else:
        sys.stdout.write("the whole base was not there after 900 s\n")
        return
    embedder = embedder_for(settings)
    assert embedder is not None
    building = basevectors.vectors_path(base, embedder).with_suffix(".building")
    began = time.perf_counter()
    while time.perf_counter() - began < vector_seconds and not basevectors.vectors_path(base, embedder).exists():
        time.sleep(5)
    elapsed = time.perf_counter() - began + took
    if basevectors.vectors_path(base, embedder).exists():
        sys.stdout.write(f"vectors ready {elapsed:.0f}s after the task started\n")
        return
    if not building.exists():
        sys.stdout.write(f"vectors not started {elapsed:.0f}s after the task started\n")
        return
    conn = connect(building, readonly=True)
    done = conn.execute("SELECT count(*) FROM chunks WHERE embedded = 1").fetchone()[0]
    conn.close()
    rate = done / max(elapsed, 1e-9)
    sys.stdout.write(
        f"vectors after {elapsed:.0f}s: {done:,} of {chunks:,} chunks ({rate:.1f}/s in the background); "
        f"all at that rate in ~{chunks / max(rate, 1e-9) / 60:.0f} min\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["latency", "embed", "build"])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--work", type=Path, help="keep the filled indexes here and reuse them")
    parser.add_argument("--vector-seconds", type=float, default=600,
                        help="how long to follow the background vector build after the task started")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forgebot-speed-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.only in (None, "latency"):
            run_latency(work, args.queries)
        if args.only in (None, "embed"):
            run_embed(256)
        if args.only in (None, "build"):
            run_build(work, args.files, args.vector_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
