"""The vector leg of a base index: built in the background, adopted by task indexes mid-run, reused
across commits by chunk hash, failures said instead of raised."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from graph.tools.code import search_tools
from project.index import basevectors, taskindex
from project.index.db import connect
from project.index.embed import Matrix
from project.index.search_store import _row_chunk
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import commit, make_repo

REPO = "src/User/UserRepository.php"


class GatedEmbedder(HashingEmbedder):
    """Holds every embed call until the test opens the gate: a build that is 'still running'."""

    def __init__(self) -> None:
        super().__init__(dimension=16)
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        assert self.gate.wait(30), "the test never opened the gate"
        return super().embed(texts)


class FailingEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> Matrix:
        raise RuntimeError("endpoint down")


def _semantic(root: Path, index: Path, embedder: HashingEmbedder | None, query: str) -> str:
    conn = connect(index, readonly=True)  # as the roles open it
    try:
        return str(search_tools(root, conn, embedder)["semantic_search"].invoke({"query": query, "k": 3}))
    finally:
        conn.close()


def test_a_task_starts_on_lexical_and_graph_legs_and_picks_vectors_up_when_the_build_ends(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    data = tmp_path / "data"
    base = taskindex.build_base(data, "demo", root)
    embedder = GatedEmbedder()
    done = basevectors.start(base, embedder)
    assert basevectors.start(base, embedder) is done  # one build per base and model in a process
    task = taskindex.copy_for_task(base, data, "t1")
    early = _semantic(root, task, embedder, "find a user by id")
    assert early.startswith("legs: lexical, graph") and "findById" in early
    assert "vector leg absent: the repository's vectors are still being built in the background" in early
    embedder.gate.set()
    assert done.wait(30)
    late = _semantic(root, task, embedder, "find a user by id")
    assert late.startswith("legs: lexical, graph, vector") and "vector leg absent" not in late
    assert "+vector" in late  # hits say which legs found them
    conn = connect(task, readonly=True)
    assert conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0] == 0
    conn.close()
    assert basevectors.ready_path(base, embedder) == basevectors.vectors_path(base, embedder)
    assert basevectors.ready_path(base, None) == base


def test_chunks_unchanged_since_an_earlier_commit_keep_their_vectors(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    data = tmp_path / "data"
    embedder = HashingEmbedder(dimension=16)
    first = taskindex.build_base(data, "demo", root)
    basevectors.build(first, embedder)
    everything = sum(embedder.calls)
    (root / REPO).write_text((root / REPO).read_text().replace("function save(", "function store("))
    commit(root, "rename save")
    second = taskindex.build_base(data, "demo", root)
    assert second != first
    embedder.calls.clear()
    vectors = basevectors.build(second, embedder)
    assert 0 < sum(embedder.calls) < everything // 2  # only the changed chunks were embedded
    conn = connect(vectors, readonly=True)
    kept = conn.execute("SELECT count(*) FROM chunks WHERE embedded = 1").fetchone()[0]
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    conn.close()
    assert kept == total
    # a vector copied by hash is the vector the model gives that text: nothing stale was reused
    reader = connect(vectors, readonly=True)
    chunk_id, blob = reader.execute(
        "SELECT c.id, v.embedding FROM chunks c JOIN chunk_vectors v ON v.id = c.id WHERE c.name = 'findById'"
    ).fetchone()
    row = reader.execute(
        "SELECT path, symbol, kind, name, signature, start_line, end_line, snippet FROM chunks WHERE id = ?",
        (chunk_id,),
    ).fetchone()
    reader.close()
    fresh = embedder.embed([_row_chunk(tuple(row)).embed_text])[0]
    assert np.allclose(np.frombuffer(blob, dtype=np.float32), fresh)


def test_a_failed_build_is_said_by_every_search_and_never_raised(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    data = tmp_path / "data"
    base = taskindex.build_base(data, "demo", root)
    embedder = FailingEmbedder(dimension=16)
    assert basevectors.start(base, embedder).wait(30)
    task = taskindex.copy_for_task(base, data, "t1")
    answer = _semantic(root, task, embedder, "retry")
    assert "vector leg absent: building the vectors failed (RuntimeError: endpoint down)" in answer
    assert not basevectors.vectors_path(base, embedder).exists()


def test_without_an_embedder_the_tool_says_the_leg_is_off(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    data = tmp_path / "data"
    task = taskindex.copy_for_task(taskindex.build_base(data, "demo", root), data, "t1")
    answer = _semantic(root, task, None, "retry")
    assert answer.startswith("legs: lexical, graph") and "vector leg absent: no embedder configured" in answer


def test_a_build_running_at_process_exit_stops_cleanly(tmp_path: Path) -> None:
    """The worker exits mid-build: the build stops between batches (no abort, no half file, no
    failure note), and the next worker builds it again."""
    import subprocess
    import sys

    root = make_repo(tmp_path / "checkout")
    script = f"""
import logging, threading, time
logging.basicConfig(level=logging.INFO)
from pathlib import Path
from project.index import basevectors, taskindex
from tests.fakes.embedder import HashingEmbedder

class Slow(HashingEmbedder):
    def embed(self, texts):
        time.sleep(0.5)
        return super().embed(texts)

base = taskindex.build_base(Path({str(tmp_path / "data")!r}), "demo", Path({str(root)!r}))
basevectors.start(base, Slow(dimension=16))
time.sleep(0.2)
print(base)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    assert "stopped: the worker is exiting" in done.stderr  # stopped by the exit hook, not killed
    base = Path(done.stdout.strip())
    embedder = HashingEmbedder(dimension=16)
    assert not basevectors.vectors_path(base, embedder).exists()
    assert not basevectors.vectors_path(base, embedder).with_suffix(".failed").exists()
    kept = _kept(base, embedder)
    assert kept > 0  # the batches embedded before the exit
    vectors = basevectors.build(base, embedder)  # the next worker builds it, from what was kept
    items, _ = _memory_rows(vectors)  # the project memory's items are embedded after the chunks
    assert vectors.is_file() and sum(embedder.calls) == _chunks(vectors) - kept + items
    assert _kept(base, embedder) == 0  # a complete build holds them now


def _count(index: Path, query: str) -> int:
    conn = connect(index, readonly=True)
    try:
        return int(conn.execute(query).fetchone()[0])
    finally:
        conn.close()


def _kept(base: Path, embedder: HashingEmbedder) -> int:
    return _count(basevectors.kept_path(base, embedder), "SELECT count(*) FROM kept")


def _chunks(index: Path) -> int:
    return _count(index, "SELECT count(DISTINCT chunk_hash) FROM chunks")


class CountedEmbedder(HashingEmbedder):
    """Embeds a batch only when the test allows one more (`allow`), and counts the texts it embedded."""

    def __init__(self) -> None:
        super().__init__(dimension=16)
        self.allowed = threading.Semaphore(0)
        self.texts: list[str] = []
        self.asked = 0

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.asked += 1
        assert self.allowed.acquire(timeout=30), "the test allowed no more batches"
        self.texts.extend(texts)
        return super().embed(texts)


def test_a_newer_commits_build_takes_over_from_the_older_one_without_embedding_anything_twice(tmp_path: Path) -> None:
    """Each new commit (each merge request's head under review) has a base of its own. Its vectors build
    stops the older commit's build of the same repository, which would embed the same chunks beside
    it, and starts from what that one kept; a task on the older base goes on without vectors."""
    methods = "".join(f"    public function measure{m}(int $x): int\n    {{\n        return $x * {m};\n    }}\n\n"
                      for m in range(6))
    files = {f"src/Shop/Part{n}.php": f"<?php\nnamespace Shop;\n\nclass Part{n}\n{{\n{methods}}}\n" for n in range(12)}
    root = make_repo(tmp_path / "checkout", files)
    data = tmp_path / "data"
    embedder = CountedEmbedder()
    first = taskindex.build_base(data, "shop", root)
    older = basevectors.start(first, embedder)
    for _ in range(2):
        embedder.allowed.release()  # two batches of 32
    deadline = time.monotonic() + 30
    while embedder.asked < 3:  # the third batch asked: the first two are stored
        assert time.monotonic() < deadline
        time.sleep(0.02)
    (root / "src/Shop/Part0.php").write_text(files["src/Shop/Part0.php"].replace("$x * 1;", "$x * 100;"))
    commit(root, "measure1 scales by a hundred")
    second = taskindex.build_base(data, "shop", root)
    newer = basevectors.start(second, embedder)
    for _ in range(40):
        embedder.allowed.release()
    assert older.wait(30) and newer.wait(30)
    assert not basevectors.vectors_path(first, embedder).exists()  # stopped: it took no more batches
    vectors = basevectors.vectors_path(second, embedder)
    assert vectors.is_file() and _unembedded(vectors) == 0
    repeated = len(embedder.texts) - len(set(embedder.texts))
    assert repeated <= 32  # at most the older build's batch in flight when the newer one took over


def _unembedded(index: Path) -> int:
    return _count(index, "SELECT count(*) FROM chunks WHERE embedded = 0")


def _memory(root: Path, index: Path, embedder: HashingEmbedder | None, query: str) -> str:
    conn = connect(index, readonly=True)
    try:
        return str(search_tools(root, conn, embedder)["search_memory"].invoke({"query": query, "k": 3}))
    finally:
        conn.close()


def _memory_rows(index: Path) -> tuple[int, int]:
    conn = connect(index, readonly=True)
    try:
        items = conn.execute("SELECT count(*) FROM memory_items").fetchone()[0]
        return items, conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
    finally:
        conn.close()


def test_project_memory_gets_its_vector_leg_from_the_same_background_build(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    (root / "docs").mkdir()
    (root / "docs" / "adr-001-user-cache.md").write_text(
        "# ADR 1: users are cached\n\nLookups by id dominate the traffic, so the repository keeps users in a cache.\n"
    )
    commit(root, "ADR: users are cached")
    data = tmp_path / "data"
    base = taskindex.build_base(data, "demo", root)
    embedder = GatedEmbedder()
    done = basevectors.start(base, embedder)
    task = taskindex.copy_for_task(base, data, "t1")
    early = _memory(root, task, embedder, "why are users kept in a cache")
    assert "adr-001-user-cache.md" in early
    assert "vector leg absent: the repository's vectors are still being built in the background" in early
    embedder.gate.set()
    assert done.wait(30)
    items, vectors = _memory_rows(basevectors.vectors_path(base, embedder))
    assert items > 0 and vectors == items  # the base's whole memory embedded beside its code
    late = _memory(root, task, embedder, "why are users kept in a cache")
    assert "vector leg absent" not in late and "vector)" in late  # hits name the legs that found them
    assert _memory_rows(task) == (items, items)  # the task took the base's memory vectors


def test_memory_items_unchanged_since_an_earlier_commit_keep_their_vectors(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "checkout")
    data = tmp_path / "data"
    embedder = HashingEmbedder(dimension=16)
    first = taskindex.build_base(data, "demo", root)
    basevectors.build(first, embedder)
    items_before, _ = _memory_rows(first)
    (root / "NOTES.md").write_text("# Notes\n\nOne new section.\n")
    commit(root, "add notes")
    second = taskindex.build_base(data, "demo", root)
    embedder.calls.clear()
    basevectors.build(second, embedder)
    items, vectors = _memory_rows(basevectors.vectors_path(second, embedder))
    assert items > items_before and vectors == items
    chunks_new = 0  # the commit touched no PHP file: no code chunk is new
    assert sum(embedder.calls) == chunks_new + (items - items_before)
