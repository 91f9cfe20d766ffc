"""The agent's search tools and the `forgebot search` command, on a real git checkout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from graph.tools.code import HIT_LINES, search_tools
from graph.tools.code_search import CodeMatch, read_file_snippet, search_code, semantic_search
from project.index import search_cli, taskindex
from project.index.db import connect
from project.index.search_cli import register
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import make_repo

REPO = "src/User/UserRepository.php"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "checkout")


def test_semantic_search_reports_edits_made_since_the_last_sync_as_stale(tmp_path: Path, repo: Path) -> None:
    embedder = HashingEmbedder(dimension=16)
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo, embedder=embedder)
    conn = connect(index)
    answer = semantic_search(conn, repo, "user repository find by id", embedder=embedder, k=2)
    assert answer.hits[0].symbol == "App\\User\\UserRepository::findById"
    assert answer.freshness.stale_files == ()
    (repo / REPO).write_text((repo / REPO).read_text() + "\n// edited\n")
    (repo / "src/New.php").write_text("<?php\nclass Fresh {}\n")
    answer = semantic_search(conn, repo, "find by id", embedder=embedder, k=1)
    assert answer.freshness.stale_files == ("src/New.php", REPO)
    with pytest.raises(ValueError, match="relative"):
        semantic_search(conn, repo, "x", path_glob="../*")
    conn.close()


def test_search_code_exact_and_regex_over_the_worktree(repo: Path) -> None:
    (repo / "src/Untracked.php").write_text("<?php\n// 2 ** $attempt also here\n")
    exact = search_code(repo, "2 ** $attempt")
    assert [(m.path, m.line) for m in exact] == [("src/Http/RetryPolicy.php", 20), ("src/Untracked.php", 2)]
    regex = search_code(repo, r"function (save|findById)\(", regex=True, path_glob="src/User/*")
    assert [m.line for m in regex] == [8, 13] and all(m.path == REPO for m in regex)
    assert search_code(repo, "FINDBYID", ignore_case=True, max_hits=1)[0].path == REPO
    assert search_code(repo, "no such text anywhere") == []
    with pytest.raises(ValueError, match="regular expression"):
        search_code(repo, "(unclosed", regex=True)
    with pytest.raises(ValueError, match="relative"):
        search_code(repo, "x", path_glob="/etc/*")
    # one glob language in both search tools: `*` crosses directories, as semantic_search's filter reads
    # it (git's `:(glob)` did not: `*.php` matched only top-level files, and the answer was "no matches")
    assert {m.path for m in search_code(repo, "findById", path_glob="*.php")} == {REPO}
    assert {m.path for m in search_code(repo, "findById", path_glob="src/**")} == {REPO}
    with pytest.raises(ValueError, match="braces"):
        search_code(repo, "x", path_glob="src/{User,Http}/*")  # said so, not "must be relative"


def test_read_file_snippet_numbers_lines_and_stays_inside_the_root(repo: Path, tmp_path: Path) -> None:
    snippet = read_file_snippet(repo, REPO, 8, 11)
    assert snippet.text.splitlines()[0] == "     8      public function findById(int $id): ?User"
    assert (snippet.start_line, snippet.end_line, snippet.total_lines) == (8, 11, 17)
    assert read_file_snippet(repo, REPO, 15, 999).end_line == 17
    (tmp_path / "secret.txt").write_text("token")
    (repo / "link.txt").symlink_to(tmp_path / "secret.txt")
    for bad in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        with pytest.raises(ValueError, match="outside"):
            read_file_snippet(repo, bad)
    with pytest.raises(FileNotFoundError):
        read_file_snippet(repo, "src/missing.php")
    with pytest.raises(ValueError, match="line range"):
        read_file_snippet(repo, REPO, 5, 2)


def _cli(data_dir: Path, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["search", *argv])
    args.data_dir = data_dir
    return int(args.handler(args))


def test_cli_json_single_query(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(tmp_path / "data", str(repo), "shouldRetry", "--json", "-k", "2", "--no-embeddings") == 0
    record = json.loads(capsys.readouterr().out)
    assert record["query"] == "shouldRetry" and len(record["hits"]) <= 2
    top = record["hits"][0]
    assert top["symbol"] == "App\\Http\\RetryPolicy::shouldRetry"
    assert {"path", "start_line", "end_line", "symbol", "score"} <= set(top)
    assert record["indexed_commit"] == taskindex.head_commit(repo)
    assert record["notes"] == ["vector leg absent: no embedder configured; lexical and graph legs only"]
    assert not list(repo.rglob("*.db"))  # the index lives under the data directory


def test_cli_batch_prints_one_object_per_query(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    batch = tmp_path / "queries.txt"
    batch.write_text("format price\n\nfind user by id\n")
    assert _cli(tmp_path / "data", str(repo), "--batch", str(batch), "--json", "--no-embeddings") == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["query"] for r in records] == ["format price", "find user by id"]
    assert records[0]["hits"][0]["symbol"] == "App\\format_price"
    assert set(records[1]) == {"query", "hits"}


def test_cli_text_output_and_bad_input(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(tmp_path / "data", str(repo), "save user", "--no-embeddings") == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{REPO}:13-16  App\\User\\UserRepository::save  ")
    assert _cli(tmp_path / "data", str(repo), "--no-embeddings") == 2
    assert _cli(tmp_path / "data", str(tmp_path), "x", "--no-embeddings") == 2
    assert "forgebot search:" in capsys.readouterr().err


def test_search_code_reads_paths_with_colons(repo: Path) -> None:
    (repo / "src/odd:name.php").write_text("<?php\n\n$x = 'needle:42';\n")
    assert search_code(repo, "needle:42") == [CodeMatch("src/odd:name.php", 3, "$x = 'needle:42';")]


def test_cli_answers_at_once_while_the_index_has_no_vectors_and_says_so(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedding a repository takes minutes: neither a query nor a batch waits for it unless asked."""
    embedder = HashingEmbedder(dimension=16)
    monkeypatch.setattr(search_cli, "configured_embedder", lambda args: embedder)
    batch = tmp_path / "queries.txt"
    batch.write_text("format price\nfind user by id\n")
    assert _cli(tmp_path / "data", str(repo), "--batch", str(batch), "--json") == 0
    out = capsys.readouterr()
    assert embedder.calls == []  # nothing embedded, not even the queries
    assert [json.loads(line)["hits"][0]["symbol"] for line in out.out.splitlines()] == [
        "App\\format_price", "App\\User\\UserRepository::findById"]
    assert "no vectors of hashing-v1/16 yet" in out.err and "--embed" in out.err
    assert _cli(tmp_path / "data", str(repo), "find user by id", "--json") == 0
    record = json.loads(capsys.readouterr().out)
    assert record["legs"] == ["lexical", "graph"] and embedder.calls == []
    assert "vector leg absent: the index holds no vectors of hashing-v1/16 yet" in record["notes"][0]
    # asked for: the vectors are built, and from then on every search has the vector leg
    assert _cli(tmp_path / "data", str(repo), "find user by id", "--json", "--embed") == 0
    assert sum(embedder.calls) > 5
    record = json.loads(capsys.readouterr().out)
    assert record["legs"] == ["lexical", "graph", "vector"] and record["notes"] == []
    embedder.calls.clear()  # a batch on the warm index: its questions go to the model in one call
    assert _cli(tmp_path / "data", str(repo), "--batch", str(batch), "--json") == 0
    assert embedder.calls == [2] and len(capsys.readouterr().out.splitlines()) == 2


def test_cli_vector_leg_with_a_few_changed_chunks_and_without_most(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = HashingEmbedder(dimension=16)
    monkeypatch.setattr(search_cli, "configured_embedder", lambda args: embedder)
    assert _cli(tmp_path / "data", str(repo), "x", "--embed") == 0
    capsys.readouterr()
    index = next((tmp_path / "data").rglob("index.db"))
    conn = connect(index)
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    with conn:  # as a concurrent `forgebot index` leaves it mid-way: most chunks not embedded yet
        conn.execute("UPDATE chunks SET embedded = 0 WHERE id > 2")
    conn.close()
    assert _cli(tmp_path / "data", str(repo), "find user by id", "--json") == 0
    record = json.loads(capsys.readouterr().out)
    assert record["legs"] == ["lexical", "graph"]
    assert f"2 of {total} chunks embedded" in record["notes"][0]


def test_a_long_hit_shows_its_first_lines_and_where_the_rest_is(tmp_path: Path, repo: Path) -> None:
    """A hit on a 2,000-line table of data would otherwise put all of it in the model's context (eight
    such hits fill a small model's window): the agent's tool shows its first lines and the range to read."""
    rows = "".join(f"    'key{i}' => 'a value for key number {i}',\n" for i in range(2_000))
    table = f"<?php\nnamespace App;\n\nfunction countryTable(): array\n{{\n    return [\n{rows}    ];\n}}\n"
    (repo / "src/Table.php").write_text(table)
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo, embedder=None)
    conn = connect(index)
    tool = search_tools(repo, conn)["semantic_search"]
    answer = str(tool.invoke({"query": "country table", "k": 3}))
    short = str(tool.invoke({"query": "find by id", "k": 1}))
    conn.close()
    header = next(line for line in answer.splitlines() if line.startswith("src/Table.php:4-2008 App\\countryTable"))
    block = answer[answer.index(header):].split("\n\n")[0]
    assert len(block.splitlines()) == 1 + HIT_LINES + 1 and "'key56' =>" in block and "'key57'" not in block
    assert block.endswith('[cut: read_file_snippet("src/Table.php", 4, 2008) reads all 2005 lines]')
    assert "findById" in short and "[cut:" not in short  # a short hit is shown whole
