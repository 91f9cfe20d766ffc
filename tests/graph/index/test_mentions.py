"""Document entry points on identifier boundaries: only code-like tokens name symbols, by whole names, and
a document's unchanged sections keep what they were resolved to."""

from __future__ import annotations

from pathlib import Path

import pytest

from project.index import memory, memory_sources, taskindex
from project.index.db import Connection, connect
from project.index.mentions import SymbolIndex, candidates
from tests.graph.index.test_memory_history import Repo, php_class

SCORE = """<?php
namespace App\\Ranking;

class Scorer
{
    private int $score = 0;

    public function getMetadataFor(string $key): array
    {
        return [];
    }

    public function timeoutSeconds(): int
    {
        return 30;
    }
}
"""


@pytest.fixture
def graph(tmp_path: Path) -> tuple[Repo, Connection]:
    repo = Repo(tmp_path / "app")
    repo.write("src/Ranking/Scorer.php", SCORE)
    repo.write("src/Support/Str.php", php_class("App\\Support", "Str", {"ucsplit": "        return [];"}))
    repo.write("src/Helpers.php", "<?php\nnamespace App;\n\nfunction array_wrap($v) { return [$v]; }\n")
    repo.commit("Scorer, Str, helpers")
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    return repo, connect(index)


def test_plain_words_name_nothing_and_code_names_resolve_whole(graph: tuple[Repo, Connection]) -> None:
    repo, conn = graph
    index = SymbolIndex.of(conn)
    # "core" and "for" are words: no suffix of `$score` or `getMetadataFor` is a name
    assert index.resolve("Core team changes for the [core](https://github.com/acme/core) score board") == ()
    assert index.resolve("Added `Str::ucsplit()` and fixed Scorer::timeoutSeconds") == (
        "App\\Support\\Str::ucsplit", "App\\Ranking\\Scorer::timeoutSeconds")
    assert index.resolve("the `App\\Ranking\\Scorer` class, `Support\\Str` and array_wrap(...)") == (
        "App\\Ranking\\Scorer", "App\\Support\\Str", "App\\array_wrap")
    assert index.resolve("getMetadataFor now returns an array; Scorer::$score starts at 0") == (
        "App\\Ranking\\Scorer::getMetadataFor", "App\\Ranking\\Scorer::$score")
    assert index.resolve("Ranking\\Scorer by @Scorer, scorer@example.com") == ("App\\Ranking\\Scorer",)
    assert index.resolve("Tanking\\Scorer is not Ranking\\Scorer's namespace") == ("App\\Ranking\\Scorer",)
    assert [form for form, _ in candidates("see `timeoutSeconds` and LockManager")] == ["camel", "camel"]


def test_bare_names_examples_and_keys_name_only_what_is_certain(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "orm")
    repo.write("src/EntityManager.php", php_class("Orm", "EntityManager", {"persist": "", "flush": ""}))
    repo.write("src/UnitOfWork.php", php_class("Orm", "UnitOfWork", {"persist": "", "__serialize": ""}))
    repo.write("src/Mapping/Entity.php", php_class("Orm\\Mapping", "Entity", {"mappedBy": ""}))
    repo.write("tests/Models/Article.php", php_class("Tests\\Models", "Article", {"addComment": ""}))
    repo.write("src/GitHub.php", php_class("Orm", "GitHub", {"api": ""}))
    repo.commit("An ORM")
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    names = SymbolIndex.of(connect(index))
    assert names.resolve("$em->persist($user); $em->flush(); $user->addComment($c);") == ("Orm\\EntityManager::flush",)
    assert names.resolve("$entityManager->persist($user)") == ("Orm\\EntityManager::persist",)  # named for its class
    assert names.resolve("$article->addComment($c)") == ()  # a test model's name on a variable names no test
    assert names.resolve("Article::addComment() keeps the order") == ()  # nor a test model's name as an owner
    asked = SymbolIndex.live(connect(index), question=True)  # but a question about the tests names them
    assert asked.resolve("why does Article::addComment() keep the order") == ("Tests\\Models\\Article::addComment",)
    assert names.resolve("the `mappedBy` attribute, the 'mappedBy' option") == ()  # a mapping option, not the method
    assert names.resolve("then call `mappedBy`") == ("Orm\\Mapping\\Entity::mappedBy",)
    assert names.resolve("call ``EntityManager#persist($entity)`` then flush()") == (
        "Orm\\EntityManager::persist", "Orm\\EntityManager::flush")
    assert names.resolve("public function persist($x) {} and function flush()") == ()  # an example declares them
    assert names.resolve("#[ManyToMany(mappedBy: 'users')] and __serialize()") == ()  # a named argument, magic
    assert names.resolve("use Orm\\Mapping as ORM;\n#[ORM\\Entity]") == ("Orm\\Mapping\\Entity",)
    # an example that imports another library's class of the same short name names none of this one's
    assert names.resolve("use Vendor\\Work\\UnitOfWork;\n$uow = new UnitOfWork(); UnitOfWork::persist($x);") == ()
    assert names.resolve("use Orm\\UnitOfWork;\n$uow = new UnitOfWork(); UnitOfWork::persist($x);") == (
        "Orm\\UnitOfWork", "Orm\\UnitOfWork::persist")
    assert names.resolve("``mappedBy`` in Entity::mappedBy") == ("Orm\\Mapping\\Entity::mappedBy",)
    assert names.resolve("Fixed GitHub token prompts; see `GitHub`") == ("Orm\\GitHub",)  # the product, the class
    assert names.resolve("@throws \\UnitOfWork, but new UnitOfWork() and \\Orm\\UnitOfWork") == (
        "Orm\\UnitOfWork",)  # a global name is written whole; `new X(` is the class


def test_a_question_resolves_through_the_graphs_name_index(graph: tuple[Repo, Connection]) -> None:
    _, conn = graph
    text = "why does Scorer::timeoutSeconds return 30 and what calls getMetadataFor()"
    assert SymbolIndex.live(conn).resolve(text) == SymbolIndex.of(conn).resolve(text)
    plan = " ".join(str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN SELECT fqn, kind FROM symbols WHERE name = ?",
                                                     ("x",)))
    assert "USING INDEX symbols_name" in plan  # one indexed lookup per candidate, never a scan


def test_unchanged_sections_keep_their_resolution(graph: tuple[Repo, Connection]) -> None:
    repo, conn = graph
    repo.write("docs/scoring.md", "# Scoring\n\n## Timeouts\n\nScorer::timeoutSeconds is 30.\n\n"
                                  "## Ranking\n\nRanks come from getMetadataFor.\n")
    repo.commit("Scoring notes")
    memory_sources.refresh(conn, repo.root, embedder=None)
    repo.write("src/Ranking/Ranker.php", php_class("App\\Ranking", "Ranker", {"timeoutSeconds": "        return 5;"}))
    repo.write("docs/scoring.md", "# Scoring\n\n## Timeouts\n\nScorer::timeoutSeconds is 30.\n\n"
                                  "## Ranking\n\nRanks come from getMetadataFor and Ranker::timeoutSeconds.\n")
    repo.commit("Ranker, and ranking notes")
    taskindex.refresh(Path(conn.execute("PRAGMA database_list").fetchone()[2]), repo.root, embedder=None)
    report = memory_sources.refresh(conn, repo.root, embedder=None)
    assert report.sections_added == 1  # only the edited section is new
    by_anchor = {h.anchor: h.symbols for h in memory.search(conn, "timeouts ranking scoring", embedder=None)[0]
                 if h.kind == "document"}
    assert by_anchor["Timeouts"] == ("App\\Ranking\\Scorer::timeoutSeconds",)  # as stored, not resolved again
    assert by_anchor["Ranking"] == ("App\\Ranking\\Scorer::getMetadataFor", "App\\Ranking\\Ranker::timeoutSeconds")


def test_python_and_typescript_name_code_with_dots(tmp_path: Path) -> None:
    """`Ledger.close` is how Python's and TypeScript's documents, discussions and questions name a method
    (before, it named nothing unless called); a dotted module path names its class or function whole; a
    file name or "e.g." names nothing, and what the parts named before still does."""
    repo = Repo(tmp_path / "shop")
    repo.write("billing/refunds.py", "class Ledger:\n    def close(self):\n        return 1\n\n\n"
                                     "def settle(ledger):\n    return ledger\n")
    repo.write("web/cart.ts", "export class CartView {\n  total(): number { return 1; }\n}\n")
    repo.write("billing/drawer.py", "class Drawer:\n    def close(self):\n        return 1\n")
    repo.commit("A shop")
    index = tmp_path / "index.db"
    taskindex.refresh(index, repo.root, embedder=None)
    names = SymbolIndex.of(connect(index))
    assert names.resolve("Ledger.close leaks a handle; see CartView.total") == (
        "billing.refunds.Ledger::close", "web/cart:CartView::total")
    assert names.resolve("`billing.refunds.Ledger` and refunds.settle") == (
        "billing.refunds.Ledger", "billing.refunds.settle")
    assert names.resolve("see setup.py, README.md and e.g. docs.python.org") == ()
    assert names.resolve("self.close() is called twice") == ()  # two classes have `close`: neither is meant
    assert names.resolve("CartView.totals() is gone") == ("web/cart:CartView",)  # the class, as before
