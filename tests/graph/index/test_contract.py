"""Override contracts: the exits of the ancestor implementation, from the indexed body only."""

from __future__ import annotations

from pathlib import Path

import pytest

from project.index.contract import override_contract
from project.index.db import Connection, connect
from project.index.store import sync_files

MODEL = "Acme\\Geometry\\Model"

_SUBCLASSES = """<?php

namespace Acme\\Geometry\\Model;

class Ring extends Base
{
    public function scale(float $factor)
    {
        return parent::scale($factor);
    }

    protected function resize(float $factor): void
    {
    }

    public function area(): float { return 0.0; }

    public function describe(string $prefix): string { return $prefix; }
}

class Thin extends Ring
{
    public function scale(float $factor)
    {
        return $this;
    }

    public function rename(string $label): void
    {
    }
}
"""


def test_contract_lists_value_and_bare_returns_and_throws(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    result = override_contract(conn, repo, f"{MODEL}\\Circle::scale")
    assert result.status.state == "ok"
    assert result.ancestor is not None and result.ancestor.fqn == f"{MODEL}\\Base::scale"
    exits = [(e.kind, e.line) for e in result.exits]
    # the closure's `return 42;` (line 27) is not an exit of scale()
    assert exits == [("throw", 18), ("return_value", 21), ("return_void", 24), ("return_value", 30)]
    assert result.exits[0].text == "throw new BadArgument('negative factor')"
    assert result.documented_throws == ["BadArgument"]
    assert [d.fqn for d in result.declared_by] == []


def test_interface_and_abstract_declarations_have_no_exits_but_keep_documented_throws(
    indexed: tuple[Connection, Path],
) -> None:
    conn, repo = indexed
    describe = override_contract(conn, repo, f"{MODEL}\\Circle::describe")
    assert describe.ancestor is None and describe.exits == []
    assert [d.fqn for d in describe.declared_by] == ["Acme\\Geometry\\Contracts\\Shape::describe"]
    assert describe.documented_throws == ["\\DomainException"]
    resize = override_contract(conn, repo, f"{MODEL}\\Circle::resize")
    assert [d.fqn for d in resize.declared_by] == [f"{MODEL}\\Base::resize"]


def test_parent_delegation_and_falling_off_the_end(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    (repo / "src/Model/Ring.php").write_text(_SUBCLASSES)
    assert sync_files(conn, repo, ["src/Model/Ring.php"]).parsed == ["src/Model/Ring.php"]
    scale = override_contract(conn, repo, f"{MODEL}\\Thin::scale")
    assert scale.ancestor is not None and scale.ancestor.fqn == f"{MODEL}\\Ring::scale"
    assert [(e.kind, e.line) for e in scale.exits] == [("return_value", 9), ("parent_call", 9)]
    rename = override_contract(conn, repo, f"{MODEL}\\Thin::rename")
    assert rename.ancestor is not None and rename.ancestor.fqn == f"{MODEL}\\Base::rename"
    assert [e.kind for e in rename.exits] == ["implicit_return"]
    assert rename.return_type == "void"


def test_method_without_ancestor(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    result = override_contract(conn, repo, f"{MODEL}\\Base::rename")
    assert result.status.state == "ok" and result.ancestor is None and result.declared_by == []
    assert "no ancestor" in result.status.note


def test_changed_ancestor_file_gives_stale_and_no_invented_exits(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    base = repo / "src/Model/Base.php"
    base.write_text(base.read_text().replace("return null;", "return false;"))
    result = override_contract(conn, repo, f"{MODEL}\\Circle::scale")
    assert result.status.state == "stale" and result.status.stale_paths == ["src/Model/Base.php"]
    assert result.exits == []


def test_missing_index_and_bad_input(repo: Path, tmp_path: Path, indexed: tuple[Connection, Path]) -> None:
    empty = connect(tmp_path / "none.db")
    assert override_contract(empty, repo, f"{MODEL}\\Circle::scale").status.state == "missing"
    conn, _ = indexed
    with pytest.raises(ValueError, match="not a method"):
        override_contract(conn, repo, f"{MODEL}\\Circle")
