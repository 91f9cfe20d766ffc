"""Queries over a real index of the fixtures: answers, certainty, and missing or stale indexes."""

from __future__ import annotations

import json
from pathlib import Path

from graph.tools.code import OUTLINE_SYMBOLS, graph_tools
from project.index.db import Connection, connect
from project.index.queries import callees, callers, definition, explore, impact, outline
from project.index.store import sync_files
from tests.graph.index.conftest import index_files

CIRCLE = "Acme\\Geometry\\Model\\Circle"
CLOCK = "Acme\\Geometry\\Support\\Clock"
COLOR = "Acme\\Geometry\\Model\\Color"
SUPPORT = "Acme\\Geometry\\Support"


def test_definition_by_fqn_short_name_and_owner(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    exact = definition(conn, repo, f"\\{CIRCLE}::describe")
    assert exact.status.state == "ok"
    assert [(h.fqn, h.path, h.start_line) for h in exact.symbols] == [
        (f"{CIRCLE}::describe", "src/Model/Circle.php", 36)
    ]
    assert exact.symbols[0].global_id == f"acme::src/Model/Circle.php::{CIRCLE}::describe"
    by_name = {h.fqn for h in definition(conn, repo, "area").symbols}
    assert by_name == {f"{CIRCLE}::area", f"{COLOR}::area", "Acme\\Geometry\\Contracts\\Measurable::area"}
    assert [h.fqn for h in definition(conn, repo, "Color::area").symbols] == [f"{COLOR}::area"]
    lowered = definition(conn, repo, "acme\\geometry\\model\\circle")
    assert lowered.symbols[0].fqn == CIRCLE  # PHP ignores case


def test_callers_resolved_and_by_name(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    result = callers(conn, repo, f"{CLOCK}::tick")
    resolved = {(s.caller, s.line) for s in result.sites if s.certainty == "resolved"}
    assert resolved == {
        (f"{CIRCLE}::describe", 39),
        (f"{CIRCLE}::withClock", 62),
        ("Acme\\Geometry\\Support\\format_area", 29),
    }
    write = callers(conn, repo, "Whatever::write").sites
    assert [(s.caller, s.certainty) for s in write] == [(f"{CIRCLE}::log", "by_name")]


def test_callers_of_a_class_are_its_instantiations(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    sites = callers(conn, repo, CLOCK).sites
    assert {(s.caller, s.target_fqn) for s in sites} == {
        (f"{CLOCK}::system", f"{CLOCK}::__construct"),  # new static()
        (f"{SUPPORT}\\format_area", f"{CLOCK}::__construct"),
    }


def test_callers_of_inherited_methods_include_calls_via_subclasses(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    sites = callers(conn, repo, "Acme\\Geometry\\Model\\Base::touch").sites
    assert {(s.caller, s.target_fqn) for s in sites} == {
        ("Acme\\Geometry\\Model\\Base::rename", "Acme\\Geometry\\Model\\Base::touch"),
        (f"{CIRCLE}::resize", f"{CIRCLE}::touch"),
    }
    greet = callers(conn, repo, "Acme\\Geometry\\Traits\\Greets::greet").sites
    assert [(s.caller, s.line) for s in greet] == [(f"{CIRCLE}::describe", 46)]


def test_function_callers_use_the_global_fallback_only_when_no_namespaced_function_exists(
    indexed: tuple[Connection, Path],
) -> None:
    conn, repo = indexed
    number_format = callers(conn, repo, "number_format").sites
    assert [(s.caller, s.certainty) for s in number_format] == [(f"{SUPPORT}\\format_area", "resolved")]
    format_area = {s.caller for s in callers(conn, repo, "Acme\\Geometry\\Support\\format_area").sites}
    assert format_area == {f"{CIRCLE}::describe", f"{CLOCK}::tick", "Acme\\Geometry\\Support\\legacy"}


def test_callees(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    sites = callees(conn, repo, f"{CIRCLE}::unit").sites
    assert [(s.target_fqn, s.certainty) for s in sites] == [
        (f"{CIRCLE}::withClock", "resolved"),
        (f"{CIRCLE}::__construct", "resolved"),
        (f"{CLOCK}::system", "resolved"),
    ]


def test_impact_walks_callers_and_subtypes_up_to_depth(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    one = impact(conn, repo, f"{CLOCK}::tick", depth=1)
    expected = {f"{CIRCLE}::describe", f"{CIRCLE}::withClock", f"{SUPPORT}\\format_area"}
    assert {n.fqn for n in one.nodes} == expected
    two = {(n.fqn, n.distance) for n in impact(conn, repo, f"{CLOCK}::tick").nodes}
    assert (f"{CIRCLE}::unit", 2) in two  # unit() calls withClock()
    assert ("Acme\\Geometry\\Support\\legacy", 2) in two  # legacy() calls format_area()
    subtypes = impact(conn, repo, "Acme\\Geometry\\Contracts\\Measurable", depth=1).nodes
    assert {(n.fqn, n.relation) for n in subtypes} >= {
        ("Acme\\Geometry\\Contracts\\Shape", "extends"),
        (CIRCLE, "implements"),
        ("Acme\\Geometry\\Model\\Color", "implements"),
    }


def test_impact_of_a_method_includes_its_overrides(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    nodes = impact(conn, repo, "Acme\\Geometry\\Contracts\\Measurable::area", depth=1).nodes
    overrides = {(n.fqn, n.path) for n in nodes if n.relation == "overrides"}
    assert overrides == {
        (f"{CIRCLE}::area", "src/Model/Circle.php"),
        (f"{COLOR}::area", "src/Model/Color.php"),
    }


def test_outline_lists_a_file_in_source_order(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    result = outline(conn, repo, "src/Model/Color.php")
    assert [(h.kind, h.fqn.rsplit("\\", 1)[-1]) for h in result.symbols] == [
        ("namespace", "Model"), ("enum", "Color"), ("enum_case", "Color::Red"), ("enum_case", "Color::Green"),
        ("constant", "Color::DEFAULT"), ("method", "Color::area"), ("method", "Color::fallback"),
    ]
    assert result.symbols[1].signature == "enum Color: string implements Measurable" and result.more == 0


def test_the_agents_outline_of_a_huge_file_lists_its_first_definitions_and_counts_the_rest(
    indexed: tuple[Connection, Path],
) -> None:
    """A file of 2,000 functions (hand-written by its shape) would be 300 kB of JSON in one answer."""
    conn, repo = indexed
    many = "".join(f"function f{i}() {{ return {i}; }}\n" for i in range(2_000))
    (repo / "src/Many.php").write_text(f"<?php\n{many}")
    sync_files(conn, repo, ["src/Many.php"])
    answer = json.loads(str(graph_tools(repo, conn)["get_file_outline"].invoke({"path": "src/Many.php"})))
    assert len(answer["symbols"]) == OUTLINE_SYMBOLS and answer["more"] == 2_000 - OUTLINE_SYMBOLS
    assert answer["symbols"][0]["fqn"] == "f0" and answer["symbols"][-1]["fqn"] == f"f{OUTLINE_SYMBOLS - 1}"
    assert len(outline(conn, repo, "src/Many.php").symbols) == 2_000  # `forgebot outline` prints them all


def test_explore_batches_several_symbols(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    result = explore(conn, repo, [f"{CLOCK}::now", "format_area", "nothing_like_this"])
    assert result.status.state == "ok"
    now, fmt, nothing = result.items
    assert {s.caller for s in now.callers} == {f"{CIRCLE}::describe", f"{CIRCLE}::scale"}
    targets = [c.target_fqn for c in fmt.callees]
    assert targets == [f"{CLOCK}::__construct", f"{CLOCK}::tick", f"{SUPPORT}\\number_format"]
    assert nothing.definitions == [] and nothing.callers == []


def test_missing_index_says_the_check_was_not_performed(repo: Path, tmp_path: Path) -> None:
    conn = connect(tmp_path / "empty.db")
    for result in (
        definition(conn, repo, CIRCLE), callers(conn, repo, CIRCLE), callees(conn, repo, CIRCLE),
        impact(conn, repo, CIRCLE), outline(conn, repo, "src/multi.php"), explore(conn, repo, [CIRCLE]),
    ):
        assert result.status.state == "missing" and not result.status.performed
        assert "not performed" in result.status.note


def test_answers_resting_on_changed_files_are_stale(indexed: tuple[Connection, Path]) -> None:
    conn, repo = indexed
    path = repo / "src/Support/helpers.php"
    path.write_text(path.read_text() + "\n// edited after indexing\n")
    result = callers(conn, repo, f"{CLOCK}::tick")
    assert result.status.state == "stale"
    assert result.status.stale_paths == ["src/Support/helpers.php"]
    assert definition(conn, repo, CIRCLE).status.state == "ok"  # answers from untouched files stay ok


def test_every_graph_query_reads_by_an_index(indexed: tuple[Connection, Path]) -> None:
    """No statement of a graph query scans the relations or symbols table, and a call left by name is
    found by its name: a callers query whose OR SQLite could not index scanned the whole relations table
    (130 ms a query on sympy, 3 s for an impact on netbox), and the by-name sites were looked up by the
    empty target every unresolved call shares. The plan, not the time, is asserted: it does not depend
    on the machine."""
    conn, root = indexed
    statements: dict[str, str] = {}
    conn.set_trace_callback(lambda sql: statements.setdefault(sql, sql))
    for name in (f"{CLOCK}::tick", CLOCK, "Acme\\Geometry\\Model\\Base::touch", "Whatever::write", "nowhere"):
        callers(conn, root, name)
        callees(conn, root, name)
        impact(conn, root, name)
        explore(conn, root, [name])
    conn.set_trace_callback(None)
    plans = {sql: [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")] for sql in statements
             if sql.lstrip().upper().startswith("SELECT") and "sqlite_master" not in sql}
    assert any("target_name IN" in sql for sql in plans)  # the by-name lookup ran
    for sql, plan in plans.items():
        assert not [step for step in plan if step.startswith(("SCAN relations", "SCAN symbols"))], (sql, plan)
        if "target_name IN" in sql:
            assert any("relations_target_name" in step for step in plan), (sql, plan)


def test_no_callers_says_where_the_calls_the_graph_cannot_see_come_from(indexed: tuple[Connection, Path]) -> None:
    """An empty answer was silent, and a model read "no callers" as "unused": the note names the interface
    method whose callers reach the implementation, or the ways code reaches a method no line names."""
    conn, repo = indexed
    implementation = callers(conn, repo, f"{COLOR}::area")
    assert implementation.sites == []
    assert implementation.status.note == (
        f"no call site names {COLOR}::area; it overrides or implements Acme\\Geometry\\Contracts\\Measurable::area:"
        " calls made through that type reach it, ask for their callers")
    unnamed = callers(conn, repo, "Acme\\Geometry\\Model\\Base::rename").status.note
    assert unnamed.startswith("no call site names Acme\\Geometry\\Model\\Base::rename in the code the graph reads")
    assert "search the code for 'rename' before treating it as unused" in unnamed
    assert callers(conn, repo, f"{CLOCK}::tick").status.note == ""  # it has callers: nothing to say


ELOQUENT = {
    "app/Models/Post.php": "<?php\nnamespace App\\Models;\n\nclass Post extends Model\n{\n"
                           "    public function scopePublished($query) { return $query; }\n"
                           "    public function scopeDraft($query) { return $query; }\n"
                           "    public function draft(): bool { return true; }\n}\n",
    "app/Models/News.php": "<?php\nnamespace App\\Models;\n\nclass News extends Post {}\n",
    "app/Http/Feed.php": "<?php\nnamespace App\\Http;\n\nuse App\\Models\\News;\nuse App\\Models\\Post;\n\n"
                         "class Feed\n{\n    public function index($query)\n    {\n        Post::published()->get();\n"
                         "        News::published()->first();\n        $query->published();\n"
                         "        Post::draft();\n    }\n}\n",
}


def test_an_eloquent_local_scope_is_called_by_its_name(tmp_path: Path) -> None:
    """Laravel calls `scopePublished` for `Post::published()` (and a subclass's) and for a query's
    `->published()` (by name: the query's class is not known). Before, a scope had no callers. A class
    that defines the short name itself (`draft()`) has its calls for that method, not for the scope."""
    conn, root = index_files(tmp_path, ELOQUENT)
    sites = callers(conn, root, "App\\Models\\Post::scopePublished").sites
    assert [(s.path, s.line, s.certainty) for s in sites] == [
        ("app/Http/Feed.php", 11, "resolved"), ("app/Http/Feed.php", 12, "resolved"),
        ("app/Http/Feed.php", 13, "by_name")]
    assert callers(conn, root, "App\\Models\\Post::scopeDraft").sites == []


def test_no_callers_of_an_override_of_a_class_outside_the_repository_names_that_class(tmp_path: Path) -> None:
    """Django calls a command's `handle`, Angular a component's `ngOnInit`: their base class or interface
    is not in the repository, and an empty answer says so (before: the generic note)."""
    files = {"app/management/commands/sync.py": "from django.core.management.base import BaseCommand\n\n\n"
                                                "class Command(BaseCommand):\n    def handle(self, *args):\n"
                                                "        pass\n",
             "web/list.component.ts": 'import { OnInit } from "@angular/core";\n\n'
                                      "export class ListComponent implements OnInit {\n  ngOnInit() {}\n}\n",
             "src/Bag.php": "<?php\nnamespace App;\n\nclass Bag implements \\Countable\n{\n"
                            "    public function count(): int { return 0; }\n    public function label(): string "
                            "{ return ''; }\n}\n"}
    conn, root = index_files(tmp_path, files)
    note = callers(conn, root, "app.management.commands.sync.Command::handle").status.note
    assert "its class extends or implements django.core.management.base.BaseCommand, outside the repository" in note
    note = callers(conn, root, "web/list.component:ListComponent::ngOnInit").status.note
    assert "its class extends or implements @angular/core:OnInit, outside the repository" in note
    assert note.endswith("else search the code for 'ngOnInit' before treating it as unused")
    # PHP's own interfaces have known methods: `count()` is Countable's, `label()` is no method of it
    assert "its class extends or implements Countable, outside" in callers(conn, root, "App\\Bag::count").status.note
    assert callers(conn, root, "App\\Bag::label").status.note.startswith(
        "no call site names App\\Bag::label in the code the graph reads")
