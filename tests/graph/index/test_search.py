"""Hybrid search over a real SQLite index: each leg, score and rank fusion arithmetic, filters and metadata."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from project.index import search_store
from project.index.db import Connection, connect
from project.index.search import (
    Weights,
    asked_stems,
    graph_ranking,
    lexical_ranking,
    lexical_scores,
    names_meant,
    query_terms,
    rrf,
    search,
    vector_ranking_for,
)
from tests.fakes.embedder import HashingEmbedder
from tests.graph.index.searchrepo import FILES, index_files


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Connection]:
    connection = connect(tmp_path / "index.db")
    index_files(connection, FILES, HashingEmbedder(dimension=64))
    yield connection
    connection.close()


def _symbols(conn: Connection, ids: list[int]) -> list[str]:
    names = {row[0]: row[1] for row in conn.execute("SELECT id, symbol FROM chunks")}
    return [names[i] for i in ids]


def test_query_terms_split_identifiers_and_drop_stopwords() -> None:
    assert query_terms("Where is the findById of the UserRepository?") == [
        "findbyid",
        "find",
        "id",
        "userrepository",
        "user",
        "repository",
    ]
    assert query_terms("where is it", stopwords=True) == ["where", "is", "it"]


def test_lexical_leg_matches_camel_case_parts_with_stemming(conn: Connection) -> None:
    found = _symbols(conn, lexical_ranking(conn, "delays between retries", 10))
    assert found[0] in {"App\\Http\\RetryPolicy::backoffDelay", "App\\Http\\RetryPolicy"}
    assert "App\\Http\\RetryPolicy::backoffDelay" in found
    assert lexical_ranking(conn, "the of and", 10) == []


def test_lexical_leg_is_safe_against_fts_syntax(conn: Connection) -> None:
    assert lexical_ranking(conn, 'save" OR NEAR(( *', 10)  # no fts5 syntax error; "save" still matches


def test_vector_leg_ranks_by_cosine(conn: Connection) -> None:
    embedder = HashingEmbedder(dimension=64)
    question = np.asarray(embedder.embed(["function format price cents currency"])[0], dtype=np.float32)
    found = _symbols(conn, vector_ranking_for(conn, question, 3))
    assert found[0] == "App\\format_price"


def test_graph_leg_finds_definitions_by_identifier_or_by_adjacent_words(conn: Connection) -> None:
    assert _symbols(conn, graph_ranking(conn, "who calls findById?", 5)) == [
        "App\\User\\UserRepository::findById"
    ]
    assert _symbols(conn, graph_ranking(conn, "should retry", 5)) == ["App\\Http\\RetryPolicy::shouldRetry"]
    assert graph_ranking(conn, "nothing here matches", 5) == []


def test_weighted_rrf_arithmetic() -> None:
    fused = rrf({"lexical": [7, 8], "graph": [8, 9]}, Weights(lexical=2.0, graph=1.0, k=10))
    assert fused[7][0] == pytest.approx(2.0 / 11) and fused[7][1] == ("lexical",)
    assert fused[8][0] == pytest.approx(2.0 / 12 + 1.0 / 11)
    assert fused[8][1] == ("lexical", "graph")
    assert fused[9][0] == pytest.approx(1.0 / 12)
    with pytest.raises(ValueError):
        Weights(lexical=-1)
    with pytest.raises(ValueError):
        Weights(vector=1.5)  # the cosine's share of a score: BM25 has the rest


def test_hybrid_hits_carry_location_symbol_snippet_and_legs(conn: Connection) -> None:
    answer = search(conn, "findById user", embedder=HashingEmbedder(dimension=64), limit=3)
    top = answer.hits[0]
    assert top.symbol == "App\\User\\UserRepository::findById"
    assert (top.path, top.start_line, top.end_line) == ("src/User/UserRepository.php", 8, 11)
    assert "public function findById" in top.snippet
    assert set(top.legs) == {"lexical", "vector", "graph"}
    assert answer.legs == ("lexical", "graph", "vector") and answer.notes == ()
    assert [h.score for h in answer.hits] == sorted((h.score for h in answer.hits), reverse=True)


def test_filters_by_path_glob_and_kind(conn: Connection) -> None:
    embedder = HashingEmbedder(dimension=64)
    in_http = search(conn, "user id", embedder=embedder, path_glob="src/Http/*", limit=10)
    assert in_http.hits and all(h.path.startswith("src/Http/") for h in in_http.hits)
    classes = search(conn, "retry policy user repository", embedder=embedder, kinds=["class"], limit=10)
    assert {h.symbol for h in classes.hits} == {"App\\Http\\RetryPolicy", "App\\User\\UserRepository"}
    # with filters, what they refuse is dropped before scoring: the best cosine and BM25 are the passing ones'
    plain = Weights(vector_graph=0, vector_name=0, vector_identifier=0)
    scored = search(conn, "retry policy user repository", embedder=embedder, kinds=["class"], limit=10, weights=plain)
    vectors = {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in conn.execute(
        "SELECT c.symbol, v.embedding FROM chunks c JOIN chunk_vectors v ON v.id = c.id")}
    symbol_of = dict(conn.execute("SELECT id, symbol FROM chunks").fetchall())
    query = embedder.embed(["retry policy user repository"])[0]
    cosine = {h.symbol: float(vectors[h.symbol] @ query) for h in scored.hits}
    bm25 = {symbol_of[i]: b for i, b in lexical_scores(conn, "retry policy user repository", 400)
            if symbol_of[i] in cosine}
    for hit in scored.hits:
        assert hit.score == pytest.approx(0.8 * cosine[hit.symbol] / max(cosine.values())
                                          + 0.2 * bm25.get(hit.symbol, 0.0) / max(bm25.values()), abs=1e-6)


def test_without_embedder_search_is_lexical_and_graph_and_says_so(conn: Connection) -> None:
    answer = search(conn, "shouldRetry status code", limit=3)
    assert answer.legs == ("lexical", "graph")
    assert answer.notes == ("vector leg absent: no embedder configured; lexical and graph legs only",)
    assert answer.hits[0].symbol == "App\\Http\\RetryPolicy::shouldRetry"


def test_every_answer_reports_freshness_and_degradation(conn: Connection) -> None:
    search_store.set_freshness(conn, commit="a" * 40, stale=["src/helpers.php"], degraded="sync failed: boom")
    answer = search(conn, "price", limit=1)
    assert answer.freshness.indexed_commit == "a" * 40
    assert answer.freshness.stale_files == ("src/helpers.php",)
    assert "degraded search: sync failed: boom" in answer.notes


def test_bad_queries_are_refused(conn: Connection) -> None:
    with pytest.raises(ValueError, match="empty"):
        search(conn, "   ")
    with pytest.raises(ValueError, match="limit"):
        search(conn, "x", limit=0)


def test_vector_leg_rescoring_is_exact_cosine_over_the_coarse_candidates(conn: Connection) -> None:
    embedder = HashingEmbedder(dimension=64)
    query = embedder.embed(["user repository save users"])[0]
    rows = conn.execute("SELECT id, embedding FROM chunk_vectors").fetchall()
    exact = sorted(rows, key=lambda r: -float(np.frombuffer(r[1], dtype=np.float32) @ query))
    # With fewer chunks than the coarse scan's depth, every chunk is rescored: the order is exact.
    assert vector_ranking_for(conn, query, 5, oversample=100) == [r[0] for r in exact[:5]]


def test_common_terms_are_dropped_while_rare_ones_exist(conn: Connection) -> None:
    # "function" is in most chunks; with a budget of 3 it is left out and "save" alone decides.
    common = lexical_ranking(conn, "function", 50, budget=3)
    assert len(common) == 3  # every term common: all must match, and only `budget` matches are ranked
    assert len(lexical_ranking(conn, "function", 50)) > 3
    assert _symbols(conn, lexical_ranking(conn, "function save", 50, budget=3)) == [
        "App\\User\\UserRepository::save",
        "App\\User\\UserRepository",
    ]


def test_an_embedder_of_another_model_turns_the_vector_leg_off_and_says_so(conn: Connection) -> None:
    answer = search(conn, "find by id", embedder=HashingEmbedder(dimension=32), limit=3)
    assert answer.legs == ("lexical", "graph")
    assert answer.notes == (
        "vector leg off: the index holds vectors of hashing-v1/64, not hashing-v1/32; "
        "lexical and graph legs only",
    )
    assert answer.hits[0].symbol == "App\\User\\UserRepository::findById"


def test_a_questions_opening_verb_counts_as_the_name_words_code_uses() -> None:
    assert {"get"} <= asked_stems("Returns the default driver")
    assert {"is", "has"} <= asked_stems("Determine if the user is verified")
    # only the opening word is a summary's verb; later in the sentence it is just a word
    assert "get" not in asked_stems("The value this returns")
    assert {"to", "array"} <= asked_stems("Convert the items to an array")  # `toArray`


def test_reranker_prefers_the_name_the_opening_verb_implies(tmp_path: Path) -> None:
    source = """<?php
namespace App;

class Profile
{
    private string $name = '';

    public function nameLength(): int
    {
        return strlen($this->name);
    }

    public function getName(): string
    {
        $trimmed = trim($this->name, " \\t\\n");
        $collapsed = preg_replace('/\\s+/', ' ', $trimmed);
        $visible = mb_substr($collapsed ?? '', 0, 80);
        return $visible;
    }
}
"""
    connection = connect(tmp_path / "verbs.db")
    index_files(connection, {"src/Profile.php": source}, HashingEmbedder(dimension=64))
    only_lexical = Weights(vector=0, graph=0, name=0, owner=0)
    plain = search(connection, "Returns the name", limit=2, kinds=["method"], weights=only_lexical)
    assert plain.hits[0].symbol == "App\\Profile::nameLength"  # the premise: the words alone favour it
    reranked = search(
        connection, "Returns the name", limit=2, kinds=["method"], weights=dataclasses.replace(only_lexical, name=0.2)
    )
    assert reranked.hits[0].symbol == "App\\Profile::getName"
    connection.close()


def test_with_vectors_every_candidate_is_scored_by_its_cosine_and_bm25_each_over_the_best(conn: Connection) -> None:
    embedder = HashingEmbedder(dimension=64)
    question = "user repository save"
    plain = Weights(vector_graph=0, vector_name=0, vector_owner=0, vector_candidates=2)
    answer = search(conn, question, embedder=embedder, limit=100, weights=plain)
    vectors = {
        row[0]: np.frombuffer(row[1], dtype=np.float32)
        for row in conn.execute("SELECT c.symbol, v.embedding FROM chunks c JOIN chunk_vectors v ON v.id = c.id")
    }
    symbol_of = dict(conn.execute("SELECT id, symbol FROM chunks").fetchall())
    query = embedder.embed([question])[0]
    bm25 = {symbol_of[i]: score for i, score in lexical_scores(conn, question, 100)}
    cosine = {hit.symbol: float(vectors[hit.symbol] @ query) for hit in answer.hits}
    best_cosine, best_bm25 = max(cosine.values()), max(bm25.values())
    assert answer.legs == ("lexical", "graph", "vector")
    assert any("vector" not in hit.legs for hit in answer.hits)  # found by words alone, judged by the model too
    for hit in answer.hits:
        expected = 0.8 * cosine[hit.symbol] / best_cosine + 0.2 * bm25.get(hit.symbol, 0.0) / best_bm25
        assert hit.score == pytest.approx(expected, abs=1e-6)
    # the model alone: the vector leg's own order, by exact cosine
    alone = search(conn, question, embedder=embedder, limit=5,
                   weights=Weights(lexical=0, graph=0, vector=1, vector_graph=0, vector_name=0, vector_identifier=0))
    assert alone.legs == ("vector",)
    assert [h.symbol for h in alone.hits] == [symbol_of[i] for i in vector_ranking_for(conn, query, 5)]
    # only the lexical leg's top `cosine_depth` join the vector leg's candidates
    shallow = search(conn, question, embedder=embedder, limit=50, weights=dataclasses.replace(plain, cosine_depth=1))
    assert sum("vector" not in hit.legs for hit in shallow.hits) <= 1


def test_a_query_of_names_means_the_definitions_it_names_a_sentence_does_not(conn: Connection) -> None:
    embedder = HashingEmbedder(dimension=64)
    off = Weights(vector_identifier=0)

    def scores(query: str, weights: Weights) -> dict[str, float]:
        return {h.symbol: h.score for h in search(conn, query, embedder=embedder, limit=50, weights=weights).hits}

    named, plain = scores("findById user", Weights()), scores("findById user", off)
    assert named["App\\User\\UserRepository::findById"] == pytest.approx(
        plain["App\\User\\UserRepository::findById"] + 0.5)
    assert max(named, key=lambda s: named[s]) == "App\\User\\UserRepository::findById"
    assert all(named[s] == pytest.approx(plain[s]) for s in named if not s.endswith("::findById"))
    # in a sentence the name is what the answer works on, not the answer itself
    sentence = "return the user that findById looks up from the repository"
    assert scores(sentence, Weights()) == pytest.approx(scores(sentence, off))
    # words that spell a name mean it; a class and its member named together mean the member
    spelled, unspelled = scores("should retry", Weights()), scores("should retry", off)
    assert spelled["App\\Http\\RetryPolicy::shouldRetry"] == pytest.approx(
        unspelled["App\\Http\\RetryPolicy::shouldRetry"] + 0.5)
    both, neither = scores("UserRepository findById", Weights()), scores("UserRepository findById", off)
    assert max(both, key=lambda s: both[s]) == "App\\User\\UserRepository::findById"
    assert both["App\\User\\UserRepository"] == pytest.approx(neither["App\\User\\UserRepository"])
    assert names_meant("get default driver") == ["getdefaultdriver", "get_default_driver"]
    assert names_meant("where are the retries of a failed job scheduled") == []
