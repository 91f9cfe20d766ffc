"""Search tables: model and dimension recorded, rebuild on change, re-embedding only changed chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from project.index import search_store
from project.index.chunks import chunk_file
from project.index.db import Connection, connect
from project.index.parse import parse_source
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import FILES, index_files

REPO = "src/User/UserRepository.php"


def _vector_count(conn: Connection) -> int:
    bits = int(conn.execute("SELECT count(*) FROM chunks_vec").fetchone()[0])
    floats = int(conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])
    assert bits == floats  # the coarse and the exact copy never drift apart
    return bits


def _replace(conn: Connection, path: str, text: str) -> int:
    parsed = parse_source(path, text.encode())
    return search_store.replace_file(conn, path, parsed.content_hash, chunk_file(path, text, parsed.symbols))


def test_model_and_dimension_are_recorded_and_a_change_of_either_re_embeds_everything(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db")
    first = HashingEmbedder(dimension=16)
    index_files(conn, FILES, first)
    chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    assert search_store.read_meta(conn)["model_id"] == "hashing-v1/16"
    assert _vector_count(conn) == chunks and sum(first.calls) == chunks

    same = HashingEmbedder(dimension=16)
    assert search_store.ensure_schema(conn, same) is False
    assert search_store.embed_pending(conn, same) == 0

    wider = HashingEmbedder(dimension=32)
    assert search_store.ensure_schema(conn, wider) is True
    assert search_store.embed_pending(conn, wider) == chunks
    assert search_store.read_meta(conn)["dimension"] == "32"

    other_model = HashingEmbedder(dimension=32, model_id="other")
    assert search_store.ensure_schema(conn, other_model) is True
    assert search_store.embed_pending(conn, other_model) == chunks
    assert _vector_count(conn) == chunks


def test_only_changed_chunks_are_re_embedded_and_removed_ones_leave_no_rows(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db")
    embedder = HashingEmbedder(dimension=16)
    index_files(conn, FILES, embedder)
    before = {r[0]: r[1] for r in conn.execute("SELECT symbol, id FROM chunks WHERE path = ?", (REPO,))}
    edited = (
        FILES[REPO]
        .replace("?? null", "?? null; // cached")
        .replace(
            "    public function save",
            "    public function count(): int\n    {\n        return 1;\n    }\n\n"
            "    public function persist",
        )
    )
    new = _replace(conn, REPO, edited)
    embedder.calls.clear()
    assert search_store.embed_pending(conn, embedder) == new
    after = {r[0]: r[1] for r in conn.execute("SELECT symbol, id FROM chunks WHERE path = ?", (REPO,))}
    # findById changed, count and persist are new, the class header changed (new signature lines)
    assert new == 4 and embedder.calls == [4]
    assert "App\\User\\UserRepository::save" not in after
    assert _vector_count(conn) == int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    fts_rows = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'save'").fetchone()[0]
    assert (
        fts_rows == 0
        and before["App\\User\\UserRepository::findById"] != after["App\\User\\UserRepository::findById"]
    )


def test_moved_but_unchanged_chunks_keep_their_vectors_and_get_new_lines(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db")
    embedder = HashingEmbedder(dimension=16)
    index_files(conn, FILES, embedder)
    shifted = FILES[REPO].replace("<?php\n", "<?php\n\n\n")
    assert _replace(conn, REPO, shifted) == 0
    line = conn.execute("SELECT start_line FROM chunks WHERE name = 'findById'").fetchone()[0]
    assert line == 10


def test_removing_a_file_drops_its_chunks_terms_and_vectors(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db")
    index_files(conn, FILES, HashingEmbedder(dimension=16))
    search_store.remove_file(conn, REPO)
    assert conn.execute("SELECT count(*) FROM chunks WHERE path = ?", (REPO,)).fetchone()[0] == 0
    assert REPO not in search_store.indexed_files(conn)
    assert (
        conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'findById'").fetchone()[0] == 0
    )
    assert _vector_count(conn) == int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def test_an_index_from_another_schema_version_is_refused(tmp_path: Path) -> None:
    conn = connect(tmp_path / "i.db")
    search_store.ensure_schema(conn, None)
    search_store.write_meta(conn, schema_version="0")
    with pytest.raises(RuntimeError, match="schema"):
        search_store.ensure_schema(conn, None)
