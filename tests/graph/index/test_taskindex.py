"""Base index per commit, task copies isolated from it, delta sync after a patch, degraded sync."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from project.index import basevectors, search_store, taskindex
from project.index.db import connect
from project.index.embed import HttpEmbedder
from project.index.search import search
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import commit, make_repo

REPO = "src/User/UserRepository.php"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "checkout")


def _symbols(index: Path) -> set[str]:
    conn = connect(index, readonly=True)
    try:
        return {row[0] for row in conn.execute("SELECT symbol FROM chunks")}
    finally:
        conn.close()


def test_base_index_holds_graph_and_search_for_the_head_commit_and_is_reused(
    tmp_path: Path, repo: Path
) -> None:
    data = tmp_path / "data"
    base = taskindex.build_base(data, "group/demo", repo)
    head = taskindex.head_commit(repo)
    assert base == data / "indexes" / "base" / "group--demo" / f"{head}.db"
    conn = connect(base, readonly=True)
    graph_symbols = {r[0] for r in conn.execute("SELECT fqn FROM symbols")}
    assert "App\\User\\UserRepository::findById" in graph_symbols
    assert "App\\User\\UserRepository::findById" in _symbols(base)
    embedder = HashingEmbedder(dimension=16)
    answer = search(conn, "find by id", embedder=None, limit=1)  # lexical + graph at once, no model
    assert answer.legs == ("lexical", "graph") and answer.hits
    assert answer.freshness.indexed_commit == head and answer.freshness.stale_files == ()
    assert "README.md" not in search_store.indexed_files(conn)
    conn.close()
    stamp = base.stat().st_mtime_ns
    assert taskindex.build_base(data, "group/demo", repo) == base and base.stat().st_mtime_ns == stamp  # reused
    vectors = basevectors.build(base, embedder)  # what the worker's background thread runs
    assert base.stat().st_mtime_ns == stamp  # the base itself is never written again
    conn = connect(vectors, readonly=True)
    assert search(conn, "find by id", embedder=embedder, limit=1).legs == ("lexical", "graph", "vector")
    conn.close()


def test_task_copy_is_isolated_from_the_base_and_sync_applies_a_patch(tmp_path: Path, repo: Path) -> None:
    data = tmp_path / "data"
    embedder = HashingEmbedder(dimension=16)
    base = taskindex.build_base(data, "demo", repo)
    basevectors.build(base, embedder)
    task = taskindex.copy_for_task(base, data, "task-1")
    other = taskindex.copy_for_task(base, data, "task-2")
    (repo / REPO).write_text((repo / REPO).read_text().replace("function save(", "function store("))
    (repo / "src/Cache.php").write_text(
        "<?php\nnamespace App;\n\nclass Cache\n{\n    public function evictExpired(): void\n    {\n    }\n}\n"
    )
    (repo / "src/helpers.php").unlink()
    head = commit(repo, "patch")
    embedder.calls.clear()
    report = taskindex.sync_task(task, repo, embedder=embedder)
    assert set(report.changed) == {REPO, "src/Cache.php"} and report.removed == ("src/helpers.php",)
    # the base's vectors are adopted by chunk hash: only the patch's new chunks are embedded
    assert report.embedded == sum(embedder.calls) and 0 < report.embedded < 8
    assert report.freshness.indexed_commit == head and report.freshness.degraded == ""
    after = _symbols(task)
    assert {"App\\User\\UserRepository::store", "App\\Cache::evictExpired"} <= after
    assert "App\\User\\UserRepository::save" not in after and "App\\format_price" not in after
    for untouched in (base, other):
        assert "App\\User\\UserRepository::save" in _symbols(untouched)
        assert "App\\Cache::evictExpired" not in _symbols(untouched)
    conn = connect(task, readonly=True)
    graph = {r[0] for r in conn.execute("SELECT fqn FROM symbols")}
    assert "App\\User\\UserRepository::store" in graph and "App\\format_price" not in graph
    assert conn.execute("SELECT count(*) FROM chunks WHERE embedded = 0").fetchone()[0] == 0
    conn.close()


def test_sync_of_listed_paths_only_and_live_staleness(tmp_path: Path, repo: Path) -> None:
    data = tmp_path / "data"
    task = taskindex.copy_for_task(taskindex.build_base(data, "demo", repo), data, "t")
    (repo / REPO).write_text((repo / REPO).read_text().replace("save(", "keep("))
    (repo / "src/Http/RetryPolicy.php").write_text("<?php\nfunction retryLater() {}\n")
    conn = connect(task)
    assert taskindex.live_stale_files(conn, repo) == ["src/Http/RetryPolicy.php", REPO]
    conn.close()
    report = taskindex.sync_task(task, repo, embedder=None, changed_paths=[REPO])
    assert report.changed == (REPO,)
    conn = connect(task)
    assert taskindex.live_stale_files(conn, repo) == ["src/Http/RetryPolicy.php"]
    conn.close()
    with pytest.raises(ValueError, match="outside"):
        taskindex.sync_task(task, repo, embedder=None, changed_paths=["../etc/passwd"])


def test_a_file_that_stops_parsing_keeps_its_chunks_and_is_reported_stale(tmp_path: Path, repo: Path) -> None:
    data = tmp_path / "data"
    task = taskindex.copy_for_task(taskindex.build_base(data, "demo", repo), data, "t")
    (repo / REPO).write_text((repo / REPO).read_text().replace("return $this->users[$id]", "return $this->("))
    report = taskindex.sync_task(task, repo, embedder=None)
    assert report.freshness.stale_files == (REPO,)
    assert "App\\User\\UserRepository::findById" in _symbols(task)


def test_a_failed_sync_is_recorded_as_degraded_search_not_raised(tmp_path: Path, repo: Path) -> None:
    data = tmp_path / "data"
    base = taskindex.build_base(data, "demo", repo)
    basevectors.build(base, HashingEmbedder(dimension=3, model_id="down"))  # the same model id: "down/3"
    task = taskindex.copy_for_task(base, data, "t")
    (repo / REPO).write_text((repo / REPO).read_text().replace("save(", "keep("))
    broken = HttpEmbedder(
        "http://embeddings.test",
        "down/3",
        3,
        transport=httpx.MockTransport(lambda request: httpx.Response(503)),
    )
    report = taskindex.sync_task(task, repo, embedder=broken)
    assert report.freshness.degraded.startswith("sync failed: embedding request")
    assert REPO in report.freshness.stale_files
    conn = connect(task, readonly=True)
    answer = search(conn, "keep", limit=3)
    assert any(note.startswith("degraded search: sync failed") for note in answer.notes)
    assert REPO in answer.freshness.stale_files
    conn.close()


def test_names_are_validated() -> None:
    with pytest.raises(ValueError):
        taskindex.base_index_path(Path("/d"), "../x", "a" * 40)
    with pytest.raises(ValueError):
        taskindex.base_index_path(Path("/d"), "demo", "HEAD")
    with pytest.raises(ValueError):
        taskindex.task_index_path(Path("/d"), "../../etc")


def test_live_staleness_sees_commits_made_after_the_indexed_one(tmp_path: Path, repo: Path) -> None:
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo, embedder=None)
    (repo / REPO).write_text((repo / REPO).read_text().replace("save(", "keep("))
    (repo / "notes.txt").write_text("not php")
    commit(repo, "committed edit, clean worktree")
    conn = connect(index)
    assert taskindex.live_stale_files(conn, repo) == [REPO]
    conn.close()
    taskindex.refresh(index, repo, embedder=None)
    conn = connect(index)
    assert taskindex.live_stale_files(conn, repo) == []
    conn.close()


def _search_rows(index: Path) -> tuple[list[tuple[object, ...]], dict[str, list[tuple[object, ...]]]]:
    conn = connect(index, readonly=True)
    try:
        rows = sorted(tuple(r) for r in conn.execute(
            "SELECT path, chunk_hash, symbol, kind, name, signature, start_line, end_line, snippet FROM chunks"))
        hits = {term: sorted(tuple(r) for r in conn.execute(
            "SELECT c.path, c.symbol, c.start_line FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "WHERE chunks_fts MATCH ?", (term,))) for term in ("find", "findById", "user", "repository", "id")}
        return rows, hits
    finally:
        conn.close()


def test_a_first_build_writes_the_search_rows_a_file_by_file_sync_writes(tmp_path: Path, repo: Path) -> None:
    """The base's search rows are cut in the parser processes, beside the parse; they must be the
    ones the per-file path (`sync_task`) writes, or vectors stop matching across commits."""
    from project.index import store

    base = taskindex.build_base(tmp_path / "data", "group/demo", repo)
    by_file = tmp_path / "by-file.db"
    conn = connect(by_file)
    search_store.ensure_schema(conn, None)
    store.build(conn, repo, taskindex.source_files(repo))  # the graph alone
    conn.close()
    taskindex.sync_task(by_file, repo, embedder=None)  # then the search rows, one file at a time
    rows, hits = _search_rows(base)
    assert rows and all(hits.values())
    assert (rows, hits) == _search_rows(by_file)


def test_an_index_by_other_extraction_rules_cuts_its_search_rows_again(tmp_path: Path, repo: Path) -> None:
    """After an upgrade the graph reads every file again (`store.ROWS_VERSION`); the search rows of the
    unchanged files are cut again along the new definitions, not kept as the old rules cut them."""
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo, embedder=None)
    before = _search_rows(index)
    conn = connect(index)
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'graph.rows'")  # as an earlier release left it
        # the old rules cut the file otherwise: here, one of its definitions had no chunk
        conn.execute("DELETE FROM chunks WHERE path = ? AND symbol LIKE '%::save'", (REPO,))
    conn.close()
    report = taskindex.refresh(index, repo, embedder=None)
    assert REPO in report.changed
    assert _search_rows(index) == before


def test_a_base_an_earlier_release_made_is_made_again(tmp_path: Path, repo: Path) -> None:
    """After an upgrade, a task on a commit indexed before it gets a base made by the new extraction
    rules (it was reused as it was until the next commit); a process that opened the old one keeps it."""
    from project.index import store

    data = tmp_path / "data"
    for defer_from in (None, 1):  # the whole base, and a large checkout's graph alone
        base = taskindex.build_base(data, "group/demo", repo, defer_from=defer_from)
        conn = connect(base)
        with conn:
            conn.execute("DELETE FROM meta WHERE key = 'graph.rows'")  # as an earlier release left it
            conn.execute("INSERT INTO relations VALUES (NULL, 'x.php', 'calls', 'old', 'old', 'old', '', 1)")
        conn.close()
        opened = connect(base, readonly=True)
        assert taskindex.build_base(data, "group/demo", repo, defer_from=defer_from) == base
        conn = connect(base, readonly=True)
        assert store.by_these_rules(conn)
        assert conn.execute("SELECT count(*) FROM relations WHERE source_fqn = 'old'").fetchone()[0] == 0
        assert opened.execute("SELECT count(*) FROM relations WHERE source_fqn = 'old'").fetchone()[0] == 1
        conn.close()
        opened.close()
        made = base.stat().st_mtime_ns
        assert taskindex.build_base(data, "group/demo", repo, defer_from=defer_from) == base
        assert base.stat().st_mtime_ns == made  # made by these rules: reused
        base.unlink()
