"""A large repository's task starts on the code graph alone; the rest of its base follows and is taken in.

Real git checkouts and real SQLite files throughout; `defer_from=1` makes the small demo project
"large" so that every step of the deferred path runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graph.tools.code_search import search_memory, semantic_search
from project.index import basecomplete, basevectors, memory, search_store, taskindex
from project.index.db import connect
from project.index.search import search
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import commit, make_repo

REPO = "src/User/UserRepository.php"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "checkout")
    (root / "docs").mkdir()
    (root / "docs" / "retries.md").write_text("# Retries\n\nWe retry a failed request with backoffDelay, "
                                               "at most five times, because the upstream throttles.\n")
    commit(root, "a design note")
    return root


def _hits(index: Path, root: Path, query: str) -> list[tuple[str, str, tuple[str, ...]]]:
    conn = connect(index)
    try:
        answer = semantic_search(conn, root, query, k=5)
    finally:
        conn.close()
    return [(h.path, h.symbol, h.legs) for h in answer.hits]


def test_a_task_starts_on_the_graph_then_takes_in_full_text_and_memory_with_its_own_edits(
    tmp_path: Path, repo: Path
) -> None:
    data = tmp_path / "data"
    graph = taskindex.build_base(data, "demo", repo, defer_from=1)
    assert basecomplete.is_graph_only(graph) and not basecomplete.whole_path(graph).exists()
    task = taskindex.copy_for_task(graph, data, "t1")
    conn = connect(task)
    try:
        assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] > 0
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
        early = semantic_search(conn, repo, "user repository find by id", k=3)
        assert early.legs == ("definitions",) and "being built in the background" in early.notes[0]
        assert early.hits[0].symbol == "App\\User\\UserRepository::findById"
        assert early.freshness.stale_files == ()  # not every file listed as stale while waiting
        hits, notes = search_memory(conn, "why do we retry", root=repo)
        assert hits == [] and "being built in the background" in notes[0]
    finally:
        conn.close()
    # the task edits a file and syncs before the rest of the base is there
    (repo / REPO).write_text((repo / REPO).read_text().replace("function save(", "function persistUser("))
    taskindex.sync_task(task, repo, embedder=None, changed_paths=[REPO])
    whole = basecomplete.complete(graph, repo)
    assert whole == data / "indexes" / "base" / "demo" / f"{taskindex.head_commit(repo)}.db"
    assert _hits(task, repo, "persist user")[0][:2] == (REPO, "App\\User\\UserRepository::persistUser")
    conn = connect(task, readonly=True)
    try:
        assert not search_store.lexical_pending(conn)
        assert search_store.read_meta(conn)[basevectors.BASE_KEY] == str(whole)
        symbols = {r[0] for r in conn.execute("SELECT symbol FROM chunks")}
        assert "App\\User\\UserRepository::persistUser" in symbols and "App\\User\\UserRepository::save" not in symbols
        answer = search(conn, "backoff delay", limit=1)
        assert answer.legs == ("lexical", "graph") and answer.hits[0].symbol.endswith("::backoffDelay")
        assert answer.freshness.stale_files == ()
        hits, notes = search_memory(conn, "why do we retry a failed request", root=repo)
        assert any(h.source == "docs/retries.md" for h in hits) and not any("not yet" in n for n in notes)
    finally:
        conn.close()
    base = connect(whole, readonly=True)
    try:  # the worktree held the task's edit, not the commit's file: the base leaves that file out
        assert not {r[0] for r in base.execute("SELECT symbol FROM chunks")} & {
            "App\\User\\UserRepository::save", "App\\User\\UserRepository::persistUser"}
        assert taskindex.index_stale_files(base) == [REPO]
    finally:
        base.close()


def test_the_whole_base_answers_as_a_base_built_in_one_pass(tmp_path: Path, repo: Path) -> None:
    graph = taskindex.build_base(tmp_path / "deferred", "demo", repo, defer_from=1)
    whole = basecomplete.complete(graph, repo)
    task = taskindex.copy_for_task(graph, tmp_path / "deferred", "t")
    one_pass = taskindex.build_base(tmp_path / "direct", "demo", repo)
    for query in ("find by id", "format price currency", "retry status code", "save user"):
        expected = _hits(one_pass, repo, query)
        assert expected and _hits(whole, repo, query) == expected and _hits(task, repo, query) == expected
    for index in (whole, one_pass):
        conn = connect(index, readonly=True)
        try:
            assert memory.present(conn)
            assert conn.execute("SELECT count(*) FROM memory_items WHERE kind = 'document'").fetchone()[0] >= 1
        finally:
            conn.close()


def test_a_file_changed_under_the_background_build_is_left_out_not_misread(tmp_path: Path, repo: Path) -> None:
    data = tmp_path / "data"
    graph = taskindex.build_base(data, "demo", repo, defer_from=1)
    (repo / REPO).write_text("<?php\nclass Injected { public function planted(): void {} }\n")
    whole = basecomplete.complete(graph, repo)
    conn = connect(whole, readonly=True)
    try:  # the graph read the commit's file; its search rows must not come from other bytes
        assert "Injected" not in {r[0] for r in conn.execute("SELECT name FROM chunks")}
        assert taskindex.index_stale_files(conn) == [REPO]
    finally:
        conn.close()


def test_the_service_path_defers_only_large_checkouts_and_waits_for_vectors_after_the_rest(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundation.settings import EmbedderSettings
    from graph.checkout import index_checkout

    settings = EmbedderSettings(kind="off", wait_seconds=60)
    small = index_checkout(tmp_path / "small", "demo", repo, "t1", settings)
    assert not any(p.name.endswith(".graph.db") for p in (tmp_path / "small").rglob("*.db"))
    conn = connect(small["index"], readonly=True)
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    conn.close()
    monkeypatch.setattr(basecomplete, "DEFER_FROM_FILES", 1)
    large = index_checkout(tmp_path / "large", "demo", repo, "t2", settings)
    assert any(p.name.endswith(".graph.db") for p in (tmp_path / "large").rglob("*.db"))
    conn = connect(large["index"], readonly=True)  # waited, then took the rest in at once
    try:
        assert not search_store.lexical_pending(conn) and conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    finally:
        conn.close()
    embedder = HashingEmbedder(dimension=16)
    vectors = basevectors.build(basecomplete.whole_path(next((tmp_path / "large").rglob("*.graph.db"))), embedder)
    conn = connect(vectors, readonly=True)
    try:
        assert search(conn, "find by id", embedder=embedder, limit=1).legs == ("lexical", "graph", "vector")
    finally:
        conn.close()


def test_a_long_history_is_remembered_after_the_first_task_and_review_start(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small checkout with a long history: its first base deferred the way a large checkout's is (the
    history read in the background), so neither the first task nor the first review waits for it (sympy:
    ten minutes for 20,000 commits, before anything started); the next commit's base starts from that
    one's memory and is built whole at once."""
    from foundation.settings import EmbedderSettings
    from graph.checkout import index_checkout, review_index

    for i in range(4):  # the repository's history: 2 commits of the fixture, then 4
        (repo / "docs" / "retries.md").write_text(f"# Retries\n\nAt most {i + 5} times.\n")
        commit(repo, f"retries {i}")
    monkeypatch.setattr(basecomplete, "DEFER_FROM_COMMITS", 5)
    settings = EmbedderSettings(kind="off", wait_seconds=0)
    task = index_checkout(tmp_path / "data", "demo", repo, "t1", settings)
    graph = next((tmp_path / "data").rglob("*.graph.db"))
    conn = connect(task["index"], readonly=True)
    try:
        assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] > 0  # the graph at once
    finally:
        conn.close()
    assert review_index(tmp_path / "data", "demo", repo, settings) in (str(graph), str(basecomplete.whole_path(graph)))
    assert basecomplete.start(graph, repo).wait(60)
    whole = basecomplete.whole_path(graph)
    assert review_index(tmp_path / "data", "demo", repo, settings) == str(whole)  # its memory now in
    conn = connect(whole, readonly=True)
    try:
        assert memory.count(conn).get("commit") == 6
    finally:
        conn.close()
    (repo / "docs" / "retries.md").write_text("# Retries\n\nAt most 9 times.\n")
    commit(repo, "retries again")
    later = taskindex.build_base(tmp_path / "data", "demo", repo, defer_from=basecomplete.DEFER_FROM_FILES,
                                 defer_commits=basecomplete.DEFER_FROM_COMMITS)
    assert not basecomplete.is_graph_only(later)  # one new commit to read: the whole base at once
    small = taskindex.build_base(tmp_path / "other", "demo", repo, defer_from=basecomplete.DEFER_FROM_FILES,
                                 defer_commits=50)
    assert not basecomplete.is_graph_only(small)  # 7 commits: under the bound, whole at once
