"""Hybrid search: FTS5 (BM25), sqlite-vec and symbol-name legs, merged by score or by rank.

Each leg finds candidates on its own. With the model's vectors, every candidate is scored by its
cosine to the question and its BM25, each scaled by the best of this question's candidates
(`Weights`); without them, the lexical and symbol legs are merged by weighted reciprocal rank. The
symbol leg ("graph") matches query identifiers against the definitions the code graph produced; it
and the lexical leg need no model, so with no embedder the answer says the vector leg was off
instead of pretending. Every answer carries the index's freshness.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from project.index.chunks import owner_name, words
from project.index.db import Connection
from project.index.embed import Embedder
from project.index.search_store import read_meta
from project.index.store import left_out_files

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_STOPWORDS = frozenset(
    "a an and any are as at be by can could do does each for from given has have if in into is it its "
    "may might must no not of on or should that the their them there these they this those to was "
    "were when where whether which who will with".split()
)


# BM25 weight of the name (symbol and owner words), path and body columns; tuned on the quality bench.
BM25_COLUMNS = (4.0, 1.5, 1.0)


@dataclass(frozen=True)
class Weights:
    """How the legs are merged: by score when the model's vectors are there, by rank when they are not.

    With vectors, every candidate of any leg is scored `vector * cosine / best cosine + (1 - vector) *
    BM25 / best BM25` (scores of this question's candidates), plus small bonuses from the symbol leg's
    rank and from the words of its name. Rank fusion gave the lexical leg a vote equal to the model's
    whatever their scores said, and once the model was trained on code (a stronger leg than BM25 on
    all thirteen corpora measured) the hybrid fell below the vector leg alone on eight of them
    (docs/search.md). Without vectors, the lexical and symbol legs are merged by weighted RRF, as
    their scores are not comparable and neither leg is much the stronger. A weight of 0 turns a leg off.
    """

    # Score fusion, when the vector leg runs (docs/search.md: chosen on six corpora, checked on seven
    # more, reported on two never used). `vector` is the cosine's share, BM25 has the rest.
    vector: float = 0.8
    vector_graph: float = 0.05  # times 1 / (k + rank) in the symbol leg
    vector_name: float = 0.1  # times the share of the symbol's name words the question uses
    vector_owner: float = 0.0  # the same for its class's name
    # A definition a query made of names means (`findById`, `UserRepository findById`, "get default
    # driver"; `names_meant`): more than any difference of cosine and BM25 can make.
    vector_identifier: float = 0.5
    # Rank fusion without vectors: sum over legs of weight / (k + rank). Tuned on three Laravel
    # components alone, reported on code bases never tuned on (docs/search.md).
    lexical: float = 1.0
    graph: float = 0.6
    k: int = 3  # small k favours the top of each list
    # Reranking of the fused top `rerank_depth` by what the code graph knows of each chunk: `name` is
    # added times the share of the symbol's name words the question uses ("the default driver" ->
    # getDefaultDriver; a question's opening verb also counts as the name words it stands for,
    # "Returns the ..." -> get), `owner` the same for its class's name; both in the units of the
    # fused score (a first rank in one leg is worth 1 / (k + 1)).
    name: float = 0.2
    owner: float = 0.06
    rerank_depth: int = 30
    candidates: int = 100  # how deep the lexical and graph legs rank
    # The vector leg ranks less deep: vec0's scan cost grows with its k (at 100k chunks, k = 400 cost
    # ~10x k = 10), while the quality bench scored the same MRR with 20 as with 100.
    vector_candidates: int = 20
    # With vectors, the lexical and symbol legs' top `cosine_depth` join the vector leg's candidates
    # (their cosine read from the float vectors): 100 scored the same mean MRR@10 as 50 on six corpora,
    # 30 a little less (0.715, 0.715, 0.710), and each costs a vector read.
    cosine_depth: int = 50

    def __post_init__(self) -> None:
        if (
            min(self.lexical, self.vector, self.graph, self.k, self.vector_graph, self.vector_name,
                self.vector_owner, self.vector_identifier, self.name, self.owner) < 0
            or self.vector > 1
            or min(self.candidates, self.vector_candidates, self.cosine_depth, self.rerank_depth) < 1
        ):
            raise ValueError("weights must be >= 0 (vector <= 1), k >= 0 and candidates >= 1")


@dataclass(frozen=True)
class Freshness:
    indexed_commit: str = ""
    stale_files: tuple[str, ...] = ()
    degraded: str = ""  # why search may be incomplete (a failed sync), "" when healthy


@dataclass(frozen=True)
class Hit:
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    snippet: str
    score: float
    legs: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "kind": self.kind,
            "score": round(self.score, 6),
            "legs": list(self.legs),
            "snippet": self.snippet,
        }


@dataclass(frozen=True)
class Answer:
    query: str
    hits: tuple[Hit, ...]
    legs: tuple[str, ...]  # the legs that ran
    freshness: Freshness
    notes: tuple[str, ...] = field(default=())


def query_terms(query: str, *, stopwords: bool = False) -> list[str]:
    """Lower-cased terms of a query: identifiers and their parts; stopwords dropped unless asked for."""
    terms: list[str] = []
    for token in _TOKEN.findall(query):
        for part in dict.fromkeys([token, *words(token).split()]):
            low = part.lower()
            if (stopwords or low not in _STOPWORDS) and (len(low) > 1 or low.isdigit()) and low not in terms:
                terms.append(low)
    return terms


def rrf(rankings: dict[str, list[int]], weights: Weights) -> dict[int, tuple[float, tuple[str, ...]]]:
    """Weighted reciprocal rank fusion: chunk id -> (score, legs that ranked it)."""
    fused: dict[int, tuple[float, tuple[str, ...]]] = {}
    for leg, ids in rankings.items():
        weight = float(getattr(weights, leg))
        for rank, chunk_id in enumerate(ids, start=1):
            score, legs = fused.get(chunk_id, (0.0, ()))
            fused[chunk_id] = (score + weight / (weights.k + rank), (*legs, leg))
    return fused


def lexical_ranking(conn: Connection, query: str, limit: int, *, budget: int = 2000, table: str = "chunks_fts",
                    columns: Sequence[float] = BM25_COLUMNS) -> list[int]:
    """BM25 over an FTS5 table (code chunks by default; project memory's too), best first."""
    return [row_id for row_id, _ in lexical_scores(conn, query, limit, budget=budget, table=table, columns=columns)]


def lexical_scores(conn: Connection, query: str, limit: int, *, budget: int = 2000, table: str = "chunks_fts",
                   columns: Sequence[float] = BM25_COLUMNS) -> list[tuple[int, float]]:
    """(row id, BM25 score, higher is better) over an FTS5 table, on the query's rarer terms, best first.

    Ranking costs FTS5 a few microseconds per matching row, so a query word found in most chunks
    ("get", "value") would make latency grow with the index. Terms are taken rarest first while
    their chunks add up to at most `budget` (they carry most of BM25's weight anyway); if even the
    rarest term is that common, all terms must match (AND) instead of any (OR), and only the first
    `budget` matches are ranked.
    """
    terms = query_terms(query)
    if not terms:
        return []
    frequency = {term: _capped_count(conn, term, budget, table) for term in terms}
    rare: list[str] = []
    postings = 0
    for term in sorted(terms, key=lambda t: frequency[t]):
        if frequency[term] >= budget or (rare and postings + frequency[term] > budget):
            break
        rare.append(term)
        postings += frequency[term]
    if rare:
        match = " OR ".join(f'"{t}"' for t in rare)
    else:
        match = " AND ".join(f'"{t}"' for t in terms)
    # The inner LIMIT caps the rows BM25 scores: an AND of common words can still match thousands.
    weights = ", ".join("?" * len(columns))
    rows = conn.execute(
        f"SELECT rowid, score FROM (SELECT rowid, bm25({table}, {weights}) AS score FROM {table} "
        f"WHERE {table} MATCH ? LIMIT ?) ORDER BY score LIMIT ?",
        (*columns, match, budget, limit),
    )
    return [(int(row[0]), -float(row[1])) for row in rows]  # FTS5's bm25() is lower for better


def _capped_count(conn: Connection, term: str, cap: int, table: str) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)",
        (f'"{term}"', cap),
    ).fetchone()
    return int(row[0])


def _query_vector(embedder: Embedder, query: str) -> np.ndarray:
    return np.asarray(embedder.embed([query])[0], dtype=np.float32)


def cosines(conn: Connection, vector: np.ndarray, ids: Sequence[int]) -> dict[int, float]:
    """Exact cosine of the question to each chunk in `ids` that has a vector (vectors are unit length)."""
    out: dict[int, float] = {}
    query = np.asarray(vector, dtype=np.float32)
    for start in range(0, len(ids), 500):
        batch = list(ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        rows = conn.execute(f"SELECT id, embedding FROM chunk_vectors WHERE id IN ({marks})", batch).fetchall()
        if rows:
            matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
            out.update(zip((int(row[0]) for row in rows), (matrix @ query).tolist(), strict=True))
    return out


def vector_ranking_for(conn: Connection, vector: np.ndarray, limit: int, *, oversample: int = 2) -> list[int]:
    """Coarse Hamming scan of the sign bits in vec0, then exact cosine over those candidates."""
    query = np.asarray(vector, dtype=np.float32)
    coarse = conn.execute(
        "SELECT rowid FROM chunks_vec WHERE embedding MATCH vec_bit(?) AND k = ? ORDER BY distance",
        (np.packbits(query > 0).tobytes(), limit * oversample),
    ).fetchall()
    ids = [row[0] for row in coarse]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT id, embedding FROM chunk_vectors WHERE id IN ({marks})", ids).fetchall()
    matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = matrix @ query
    order = np.argsort(-scores, kind="stable")[:limit]
    return [int(rows[i][0]) for i in order]


def graph_ranking(conn: Connection, query: str, limit: int) -> list[int]:
    """Definitions named by the query: a literal identifier, or a run of adjacent words.

    `findById` in the query, or the words "find by id", reach `findById` (and "content subtype" Python's
    `content_subtype`); longer runs rank first. A
    single plain word ("get", "count") is not taken as a name: in a sentence it is far more often
    just a word, and would pull in every method of that name.
    """
    names = _names_asked(query)
    if not names:
        return []
    marks = ",".join("?" * len(names))
    rows = conn.execute(
        f"SELECT id, lower(name) FROM chunks WHERE name COLLATE NOCASE IN ({marks}) LIMIT ?",
        (*names, limit * 4),
    ).fetchall()
    rows.sort(key=lambda row: -names.get(row[1], 0))
    return [row[0] for row in rows[:limit]]


def literal_names(query: str) -> list[str]:
    """Identifiers the query spells out (`findById`, `content_subtype`), lower-cased."""
    return [token.lower() for token in _TOKEN.findall(query) if len(words(token).split()) > 1 or "_" in token]


def names_meant(query: str) -> list[str]:
    """The names a query made of names means, lower-cased: its identifiers when at least half its words
    are identifiers (`findById`, `UserRepository findById`), or its words spelling one name when it has
    two to four words and no identifier ("get default driver": `getDefaultDriver`, `get_default_driver`).
    None for a sentence: in "Sets the requestOptions of ..." a name is what the answer works on, and
    taking it as the answer cost Guzzle's questions 0.026 MRR@10 (docs/search.md)."""
    tokens = _TOKEN.findall(query)
    literal = literal_names(query)
    if literal:
        return literal if 2 * len(literal) >= len(tokens) else []
    plain = [token.lower() for token in tokens]
    return ["".join(plain), "_".join(plain)] if 2 <= len(plain) <= 4 else []


def _names_asked(query: str) -> dict[str, int]:
    """Lower-cased names the query may mean, each with its weight (a literal identifier first)."""
    names = dict.fromkeys(literal_names(query), 9)  # a literal identifier beats assembled words
    plain = [w.lower() for token in _TOKEN.findall(query) for w in words(token).split()]
    content = [w for w in plain if w not in _STOPWORDS]
    for sequence in (plain, content):
        for size in (4, 3, 2):
            for start in range(len(sequence) - size + 1):
                run = sequence[start : start + size]
                names.setdefault("".join(run), size)  # camelCase, lower-cased: `defaultDriver`
                names.setdefault("_".join(run), size)  # snake_case: Python's `content_subtype`, PHP's `array_wrap`
    return names


def definition_search(
    conn: Connection, query: str, *, limit: int = 10, path_glob: str = "", kinds: Sequence[str] = (), why: str = "",
) -> Answer:
    """The definitions the query names, from the code graph alone: the answer of an index whose
    full-text tables are not built yet (`why`). Single words count here too (weakest), since no
    other leg can find anything."""
    if not query.strip():
        raise ValueError("query is empty")
    names = _names_asked(query)
    for token in _TOKEN.findall(query):
        for word in words(token).split():
            if word.lower() not in _STOPWORDS:
                names.setdefault(word.lower(), 1)
    rows: list[tuple[object, ...]] = []
    if names:
        marks = ",".join("?" * len(names))
        rows = conn.execute(
            f"SELECT path, start_line, end_line, fqn, kind, signature, lower(name) FROM symbols "
            f"WHERE name IN ({marks}) AND kind != 'namespace' LIMIT ?",
            (*names, limit * 40),
        ).fetchall()
    rows.sort(key=lambda r: (-names.get(str(r[6]), 0), str(r[0]), int(str(r[1]))))
    hits: list[Hit] = []
    for path, start, end, fqn, kind, signature, name in rows:
        if (kinds and kind not in kinds) or (path_glob and not fnmatch.fnmatchcase(str(path), path_glob)):
            continue
        score = names.get(str(name), 0) / 10
        hits.append(Hit(str(path), int(str(start)), int(str(end)), str(fqn), str(kind), str(signature), score,
                        ("definitions",)))
        if len(hits) == limit:
            break
    note = (f"full-text and vector legs absent: {why}; definitions named by the question only "
            "(search_code finds any text)")
    return Answer(query, tuple(hits), ("definitions",), read_freshness(conn), (note,))


@functools.lru_cache(maxsize=1 << 14)
def stem(word: str) -> str:
    """A crude English stem, enough for "drivers", "driving" and "drive" to meet a name's "Driver"."""
    low = word.lower()
    if len(low) <= 3:
        return low
    if low.endswith("ies"):
        low = low[:-3] + "y"
    elif low.endswith(("sses", "xes", "zes", "ches", "shes")):
        low = low[:-2]
    elif low.endswith("s") and not low.endswith("ss"):
        low = low[:-1]
    for suffix in ("ing", "ed", "er"):
        if low.endswith(suffix) and len(low) - len(suffix) >= 3:
            low = low[: -len(suffix)]
            break
    return low[:-1] if low.endswith("e") and len(low) > 3 else low


@functools.lru_cache(maxsize=1 << 14)
def _name_stems(name: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words(name).split())


def _coverage(name: str, asked: set[str]) -> float:
    parts = _name_stems(name)
    return sum(part in asked for part in parts) / len(parts) if parts else 0.0


# A summary's opening verb and the words code names the same act with: "Returns the default driver"
# is `getDefaultDriver`, "Determine if the user ..." is `isUser...` or `hasUser...`.
_VERB_NAMES = {
    stem(verb): tuple(stem(name) for name in names.split())
    for verb, names in {
        "return": "get", "retrieve": "get fetch find", "fetch": "get", "find": "find get",
        "determine": "is has can should", "check": "is has can", "tell": "is has",
        "set": "set", "specify": "set", "assign": "set",
        "remove": "remove delete forget unset", "delete": "delete remove forget",
        "add": "add push append", "append": "append add push",
        "create": "create make new", "make": "make create", "build": "build make create",
        "convert": "to", "transform": "to map", "count": "count",
    }.items()
}


def asked_stems(query: str) -> set[str]:
    """The stems of a question's words, with the name words its opening verb stands for.

    Stopwords stay: in a name they carry meaning (`toArray`, `isEmpty`, `findBy`, `createFrom`).
    """
    terms = query_terms(query, stopwords=True)
    asked = {stem(term) for term in terms}
    for word in terms[:1]:
        asked.update(_VERB_NAMES.get(stem(word), ()))
    return asked


def rerank(
    conn: Connection,
    fused: dict[int, tuple[float, tuple[str, ...]]],
    query: str,
    *,
    name: float,
    owner: float,
    depth: int,
) -> dict[int, tuple[float, tuple[str, ...]]]:
    """Add to the fused top's scores how much of each symbol's name (and its class's) the question says.

    A question about code tends to use the words its answer is named with; the legs see them only
    as one term among the body's, the reranker as the name's own.
    """
    asked = asked_stems(query)
    top = sorted(fused, key=lambda chunk_id: -fused[chunk_id][0])[:depth]
    if not top or not asked or not (name or owner):
        return fused
    marks = ",".join("?" * len(top))
    rows = conn.execute(f"SELECT id, name, symbol FROM chunks WHERE id IN ({marks})", top).fetchall()
    out = dict(fused)
    for chunk_id, symbol_name, symbol in rows:
        bonus = name * _coverage(str(symbol_name), asked) + owner * _coverage(owner_name(str(symbol)), asked)
        score, legs = out[chunk_id]
        out[chunk_id] = (score + bonus, legs)
    return out


def score_fusion(
    conn: Connection,
    query: str,
    rankings: dict[str, list[int]],
    bm25: dict[int, float],
    vector: np.ndarray,
    weights: Weights,
    depth: int,
) -> dict[int, tuple[float, tuple[str, ...]]]:
    """Chunk id -> (score, legs that found it): the model's cosine and BM25, each over its best among
    this question's candidates, mixed `weights.vector` to the rest, plus the symbol leg's rank.

    Scaling by the best candidate keeps the mix meaningful whatever the question: BM25 has no upper
    bound and grows with rare words (the best one ran from 8 to 32 over the quality bench's questions,
    5th to 95th percentile), and a right answer's cosine from 0.37 to 0.81.
    A chunk only the lexical or symbol leg found is still judged by the model, and one the model alone
    found by its words (a BM25 of 0 when it shares none). A definition a query made of names means
    (`names_meant`) gains `vector_identifier` on top: whoever types a name alone means it."""
    found: dict[int, tuple[str, ...]] = {}
    for leg, ids in rankings.items():
        for chunk_id in ids if leg == "vector" else ids[:depth]:
            found[chunk_id] = (*found.get(chunk_id, ()), leg)
    similarity = cosines(conn, vector, list(found))
    best_cosine = max(similarity.values(), default=0.0)
    best_bm25 = max(bm25.values(), default=0.0)
    lexical_share = 1.0 - weights.vector if "lexical" in rankings else 0.0
    fused: dict[int, tuple[float, tuple[str, ...]]] = {}
    for chunk_id, legs in found.items():
        score = weights.vector * similarity.get(chunk_id, 0.0) / (best_cosine if best_cosine > 0 else 1.0)
        if best_bm25 > 0:
            score += lexical_share * bm25.get(chunk_id, 0.0) / best_bm25
        fused[chunk_id] = (score, legs)
    graph = rankings.get("graph", [])[:depth]
    for rank, chunk_id in enumerate(graph, start=1):
        score, legs = fused[chunk_id]
        fused[chunk_id] = (score + weights.vector_graph / (weights.k + rank), legs)
    named = names_meant(query)
    if named and graph and weights.vector_identifier:
        marks, names = ",".join("?" * len(graph)), ",".join("?" * len(named))
        rows = conn.execute(f"SELECT id, lower(name), symbol FROM chunks WHERE id IN ({marks}) "
                            f"AND lower(name) IN ({names})", (*graph, *named)).fetchall()
        # `CacheManager getDefaultDriver` names a class and its member: the member is what is asked
        owners = {owner_name(str(symbol)).lower() for _, _, symbol in rows if "::" in str(symbol)}
        for chunk_id, name, symbol in rows:
            if "::" not in str(symbol) and name in owners:
                continue
            score, legs = fused[chunk_id]
            fused[chunk_id] = (score + weights.vector_identifier, legs)
    return fused


def read_freshness(conn: Connection) -> Freshness:
    return _freshness(read_meta(conn))


def _freshness(meta: dict[str, str]) -> Freshness:
    return Freshness(
        indexed_commit=meta.get("indexed_commit", ""),
        stale_files=tuple(json.loads(meta.get("stale_files", "[]"))),
        degraded=meta.get("degraded", ""),
    )


def search(
    conn: Connection,
    query: str,
    *,
    embedder: Embedder | None = None,
    limit: int = 10,
    path_glob: str = "",
    kinds: Sequence[str] = (),
    weights: Weights | None = None,
    absent: str = "no embedder configured",
) -> Answer:
    """Run every available leg, fuse, filter by path glob and symbol kind, return the top `limit`.

    `absent` is why there is no embedder, said in the answer's notes when `embedder` is None.
    """
    if not query.strip():
        raise ValueError("query is empty")
    if limit < 1:
        raise ValueError("limit must be >= 1")
    weights = weights or Weights()
    widen = 4 if path_glob or kinds else 1  # filters apply after fusion: look deeper
    depth = weights.candidates * widen
    rankings: dict[str, list[int]] = {}
    bm25: dict[int, float] = {}
    notes: list[str] = []
    vector: np.ndarray | None = None
    if weights.lexical:
        bm25 = dict(lexical_scores(conn, query, depth))
        rankings["lexical"] = list(bm25)
    scoring = embedder is not None and weights.vector > 0  # score fusion, unless the vectors turn out absent
    if weights.graph or (scoring and (weights.vector_graph or weights.vector_identifier)):
        rankings["graph"] = graph_ranking(conn, query, depth)
    meta = read_meta(conn)
    if embedder is None:
        notes.append(f"vector leg absent: {absent}; lexical and graph legs only")
    elif (meta.get("model_id"), meta.get("dimension")) != (embedder.model_id, str(embedder.dimension)):
        # Vectors of two models are not comparable; a silent mix would rank at random.
        notes.append(
            f"vector leg off: the index holds vectors of {meta.get('model_id') or 'no model'}, "
            f"not {embedder.model_id}; lexical and graph legs only"
        )
    elif weights.vector:
        vector = _query_vector(embedder, query)
        rankings["vector"] = vector_ranking_for(conn, vector, weights.vector_candidates * widen)
    if path_glob or kinds:  # drop what the filters refuse before any vector is read for it
        passing = _passing(conn, {i for ids in rankings.values() for i in ids}, path_glob, set(kinds))
        rankings = {leg: [i for i in ids if i in passing] for leg, ids in rankings.items()}
        bm25 = {i: score for i, score in bm25.items() if i in passing}
    if vector is not None:
        fused = score_fusion(conn, query, rankings, bm25, vector, weights, weights.cosine_depth)
        fused = rerank(conn, fused, query, name=weights.vector_name, owner=weights.vector_owner,
                       depth=weights.rerank_depth)
    else:
        rankings = {leg: ids for leg, ids in rankings.items() if getattr(weights, leg)}
        fused = rrf(rankings, weights)
        fused = rerank(conn, fused, query, name=weights.name, owner=weights.owner, depth=weights.rerank_depth)
    hits = _hits(conn, fused, path_glob, set(kinds), limit)
    freshness = _freshness(meta)
    if freshness.degraded:
        notes.append(f"degraded search: {freshness.degraded}")
    left_out = sorted(left_out_files(conn))
    if left_out:  # a bundle or generated table is not searched here: grep and reading still reach it
        more = f" and {len(left_out) - 5} more" if len(left_out) > 5 else ""
        notes.append(f"not indexed, not hand-written source (minified, generated or over 1 MiB: search_code "
                     f"and read_file_snippet read them) or a link out of the checkout: "
                     f"{', '.join(left_out[:5])}{more}")
    return Answer(query, tuple(hits), tuple(rankings), freshness, tuple(notes))


def _passing(conn: Connection, ids: set[int], path_glob: str, kinds: set[str]) -> set[int]:
    """The chunks among `ids` in a path the glob matches and of a kind asked for."""
    found: set[int] = set()
    listed = list(ids)
    for start in range(0, len(listed), 500):
        batch = listed[start : start + 500]
        marks = ",".join("?" * len(batch))
        for chunk_id, path, kind in conn.execute(f"SELECT id, path, kind FROM chunks WHERE id IN ({marks})", batch):
            if (not kinds or kind in kinds) and (not path_glob or fnmatch.fnmatchcase(path, path_glob)):
                found.add(int(chunk_id))
    return found


def _hits(
    conn: Connection,
    fused: dict[int, tuple[float, tuple[str, ...]]],
    path_glob: str,
    kinds: set[str],
    limit: int,
) -> list[Hit]:
    order = sorted(fused, key=lambda chunk_id: (-fused[chunk_id][0], chunk_id))
    hits: list[Hit] = []
    # Without filters the first `limit` ids are the answer: reading 200 snippets per question was a
    # tenth of a batch's search time.
    first = limit if not (path_glob or kinds) else 200
    for start, end in [(0, first), *((n, n + 200) for n in range(first, len(order), 200))]:
        ids = order[start:end]
        if not ids:
            break
        marks = ",".join("?" * len(ids))
        rows = {
            row[0]: row
            for row in conn.execute(
                "SELECT id, path, start_line, end_line, symbol, kind, snippet FROM chunks "
                f"WHERE id IN ({marks})",
                ids,
            )
        }
        for chunk_id in ids:
            row = rows.get(chunk_id)
            if row is None or (kinds and row[5] not in kinds):
                continue
            if path_glob and not fnmatch.fnmatchcase(row[1], path_glob):
                continue
            score, legs = fused[chunk_id]
            hits.append(Hit(row[1], row[2], row[3], row[4], row[5], row[6], score, legs))
            if len(hits) == limit:
                return hits
    return hits
