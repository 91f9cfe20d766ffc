"""Chunks cut along parsed PHP symbols: bodies, class headers, leftovers, hashes and identifier text."""

from __future__ import annotations

import re

from project.index.chunks import (
    Chunk,
    chunk_file,
    lexical_terms,
    name_words,
    owner_name,
    split_identifiers,
    strip_docblocks,
    words,
)
from project.index.parse import parse_source
from tests.graph.index.searchrepo import FILES


def _chunks(path: str, docblocks: bool = True) -> dict[str, Chunk]:
    source = FILES[path]
    parsed = parse_source(path, source.encode())
    return {
        c.symbol or f"file:{c.start_line}": c
        for c in chunk_file(path, source, parsed.symbols, docblocks=docblocks)
    }


def test_method_chunks_carry_their_exact_line_range_and_body() -> None:
    chunks = _chunks("src/Http/RetryPolicy.php")
    backoff = chunks["App\\Http\\RetryPolicy::backoffDelay"]
    lines = FILES["src/Http/RetryPolicy.php"].splitlines()
    assert lines[backoff.start_line - 1].strip().startswith("public function backoffDelay")
    assert lines[backoff.end_line - 1].strip() == "}"
    assert "2 ** $attempt" in backoff.text
    assert backoff.kind == "method" and backoff.name == "backoffDelay"


def test_class_header_keeps_constants_properties_and_signatures_but_not_bodies() -> None:
    header = _chunks("src/Http/RetryPolicy.php")["App\\Http\\RetryPolicy"]
    text = header.text
    assert "MAX_ATTEMPTS = 5" in text and "$baseDelayMs = 100" in text
    assert "public function shouldRetry(int $statusCode, int $attempt): bool" in text
    assert "2 ** $attempt" not in text and ">= 500" not in text


def test_top_level_code_outside_symbols_becomes_a_file_chunk_and_boilerplate_does_not() -> None:
    chunks = _chunks("src/helpers.php")
    leftovers = [c for c in chunks.values() if c.kind == "file"]
    assert len(leftovers) == 1
    text = leftovers[0].text
    assert "DEFAULT_LOCALE" in text and "register_shutdown_function" in text
    assert "namespace" not in text and "<?php" not in text
    assert "App\\format_price" in chunks


def test_docblocks_are_included_by_default_and_can_be_stripped() -> None:
    with_docs = _chunks("src/Http/RetryPolicy.php")["App\\Http\\RetryPolicy::backoffDelay"]
    without = _chunks("src/Http/RetryPolicy.php", docblocks=False)["App\\Http\\RetryPolicy::backoffDelay"]
    assert "Exponential backoff" in with_docs.text
    assert "Exponential backoff" not in without.text
    assert with_docs.start_line == without.start_line


def test_content_hash_follows_the_text_not_the_position() -> None:
    path = "src/User/UserRepository.php"
    source = FILES[path]
    moved = source.replace("class UserRepository\n{", "class UserRepository\n{\n\n")
    changed = source.replace("?? null", "?? throw new \\RuntimeException()")

    def hashes(text: str) -> dict[str, str]:
        symbols = parse_source(path, text.encode()).symbols
        return {c.symbol: c.content_hash for c in chunk_file(path, text, symbols)}

    base, after_move, after_change = hashes(source), hashes(moved), hashes(changed)
    assert after_move["App\\User\\UserRepository::findById"] == base["App\\User\\UserRepository::findById"]
    assert after_change["App\\User\\UserRepository::findById"] != base["App\\User\\UserRepository::findById"]
    assert after_change["App\\User\\UserRepository::save"] == base["App\\User\\UserRepository::save"]


def test_identifier_text_for_each_leg() -> None:
    assert words("getHTTPResponse_code") == "get HTTP Response code"
    assert split_identifiers("$this->findById($userId)") == "$this->find By Id($user Id)"
    # each identifier whole, then its parts as often as it occurs: full-text ranking counts terms
    terms = lexical_terms("findById(x) + findById(y) + save_all")
    assert sorted(re.findall(r"[A-Za-z]+", terms)) == sorted(
        "findById x findById y save all find By Id find By Id save all".split()
    )
    assert lexical_terms("save") == "save"


def test_strip_docblocks_keeps_line_numbers() -> None:
    source = "<?php\n/**\n * Doc.\n */\nfunction f() {}\n"
    stripped = strip_docblocks(source)
    assert stripped.count("\n") == source.count("\n") and "Doc." not in stripped


def test_a_members_class_is_its_own_short_name_in_every_language() -> None:
    assert owner_name("App\\Http\\Kernel::handle") == "Kernel"
    assert owner_name("App\\Model\\User::$name") == "User"
    assert owner_name("billing.refunds.Ledger::close") == "Ledger"  # not "billing refunds Ledger"
    assert owner_name("src/api/client:Client::get") == "Client"
    assert owner_name("src/x:outer.Inner::m") == "Inner"
    assert owner_name("billing.refunds.settle") == owner_name("src/util:formatDate") == ""


def test_special_methods_carry_what_they_do_and_the_embedded_header_names_the_class() -> None:
    assert "initialize" in name_words("__init__") and "length" in name_words("__len__")
    assert "constructor" in name_words("constructor") and name_words("__construct").startswith("construct")
    chunk = Chunk("billing/refunds.py", 2, 3, "billing.refunds.Pool::__init__", "method", "__init__", "x = 1", "")
    header = chunk.embed_text.splitlines()[0]
    assert header == "method init initialize construct constructor create new instance of Pool"
