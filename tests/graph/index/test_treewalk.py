"""The C walk (project/index/treewalk.c) against the tree-sitter queries it stands in for.

The walk must find exactly what the query finds: files of real code bases in PHP, Python, TypeScript
and JavaScript, whole and broken, are read both ways and compared capture by capture; `forgebot index`
builds the same graph with the walk and without it; memcheck sees the C code read nothing it does not
own. Without the compiled module these tests skip (fail in CI, which must build it).
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import random
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tree_sitter

from project.index import parse, php_grammar, python_graph, script_graph, treewalk
from project.index.db import connect
from tests.tools import need

PHP = Path("/usr/share/php")  # Debian's php-symfony, php-laravel-framework, php-monolog (.ci/run installs them)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ROOT = Path(__file__).resolve().parents[3]


def _need_walk() -> None:
    need(treewalk.compiled() != "", f"the C walk (project.index._treewalk): {treewalk.described()}")


Row = tuple[int, int, str, int]


def _reference(query: tree_sitter.Query, root: tree_sitter.Node, *, private: bool = True) -> list[Row]:
    """What the query captures under `root` in source order, nodes by id (`private=False`: no `_…`)."""
    captures = tree_sitter.QueryCursor(query).captures(root)
    items = [(n.start_byte, -n.end_byte, name, n.id) for name, nodes in captures.items()
             if private or name[0] != "_" for n in nodes]
    items.sort(key=lambda item: (item[0], item[1]))
    return items


def _ids(items: list[treewalk.Item]) -> list[Row]:
    return [(start, end, name, node.id) for start, end, name, node in items]


def _query_items(root: tree_sitter.Node) -> list[Row]:
    return _reference(parse._query(), root, private=False)


def test_the_walk_is_compiled_for_the_installed_tree_sitter() -> None:
    _need_walk()
    assert treewalk.compiled() == tree_sitter.__version__ == metadata.version("tree-sitter")
    assert treewalk.described() == f"node walk: C (tree-sitter {tree_sitter.__version__})"


# about 8,000 files of Debian's PHP libraries (not PHPUnit's nor PHP-Parser's, kept for acceptance)
@pytest.mark.parametrize("directory", [
    "Symfony/Component", "Symfony/Bridge", "Symfony/Bundle", "Symfony/Contracts", "Illuminate", "Carbon",
    "Composer", "League", "Monolog", "Twig", "Ramsey", "Swift", "voku", "Doctrine",
])
def test_php_captures_are_the_query_captures_file_by_file(directory: str) -> None:
    _need_walk()
    need((PHP / directory).is_dir(), f"{PHP / directory} (Debian's PHP libraries)")
    parser = parse.new_parser()
    paths = sorted((PHP / directory).rglob("*.php")) + sorted(FIXTURES.rglob("*.php"))
    assert len(paths) > 30
    differing = []
    for path in paths:
        root = parser.parse(path.read_bytes()).root_node
        walked = _ids(parse._captures(root))
        if walked != _query_items(root):
            differing.append(path)
    assert differing == []


def test_rows_are_the_same_without_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    _need_walk()
    paths = sorted(FIXTURES.rglob("*.php"))
    if (PHP / "Illuminate/Routing").is_dir():  # route callables: [Controller::class, 'action']
        paths += sorted((PHP / "Illuminate/Routing").rglob("*.php"))
    parser = parse.new_parser()
    sources = [(str(path), path.read_bytes()) for path in paths]
    walked = [parse.tree_rows(name, source, parser.parse(source)) for name, source in sources]
    monkeypatch.setattr(parse, "_walked", lambda: None)
    queried = [parse.tree_rows(name, source, parser.parse(source)) for name, source in sources]
    assert sum(len(rows.relations) for rows in walked) > 100
    assert walked == queried


def test_an_other_installed_release_turns_the_walk_off(monkeypatch: pytest.MonkeyPatch) -> None:
    _need_walk()
    monkeypatch.setattr(tree_sitter, "__version__", "0.0.1")
    treewalk.status.cache_clear()
    try:
        assert treewalk.compiled() == ""
        assert "0.0.1 is installed" in treewalk.described()
        assert treewalk.collector(php_grammar.GRAMMAR, {"class_declaration": "class"}) is None
    finally:
        monkeypatch.undo()
        treewalk.status.cache_clear()
    assert treewalk.compiled() != ""


def test_the_switch_turns_the_walk_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGEBOT_NO_TREEWALK", "1")
    treewalk.status.cache_clear()
    try:
        assert treewalk.compiled() == "" and "FORGEBOT_NO_TREEWALK" in treewalk.described()
    finally:
        monkeypatch.delenv("FORGEBOT_NO_TREEWALK")
        treewalk.status.cache_clear()


SOURCE = b"""<?php
top()->first();
class A {
    public function run() { $this->inner(); helper(); }
}
"""


def test_nodes_hold_their_tree_and_leaves_are_not_entered() -> None:
    _need_walk()
    calls = {"member_call_expression": "call", "function_call_expression": "call"}
    collect = treewalk.collector(php_grammar.GRAMMAR, calls)
    assert collect is not None
    tree = parse.new_parser().parse(SOURCE)
    found = collect(tree.root_node)
    del tree
    gc.collect()
    assert [(node.text, name) for _, _, name, node in found] == [
        (b"top()->first()", "call"), (b"top()", "call"), (b"$this->inner()", "call"), (b"helper()", "call"),
    ]
    assert [(start, end) for start, end, _, node in found] == [(n.start_byte, -n.end_byte) for *_, n in found]
    assert found[2][3].parent is not None and found[2][3].parent.type == "expression_statement"
    body = treewalk.collector(php_grammar.GRAMMAR, calls, leaves={"compound_statement"})
    assert body is not None
    assert [node.text for *_, node in body(parse.new_parser().parse(SOURCE).root_node)] == [
        b"top()->first()", b"top()",
    ]


def test_bad_arguments_raise_instead_of_crashing() -> None:
    _need_walk()
    from project.index import _treewalk

    root = parse.new_parser().parse(SOURCE).root_node
    with pytest.raises(TypeError):
        _treewalk.collect("not a node", b"", ())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _treewalk.collect(root, "not bytes", ())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        _treewalk.collect(root, bytes([3]), ("one",))  # an entry past the names
    with pytest.raises(TypeError):
        _treewalk.collect(root)  # type: ignore[call-arg]


def _graph(data: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    conn = connect(next(data.rglob("index.db")), readonly=True)
    try:
        symbols = conn.execute("SELECT * FROM symbols ORDER BY path, start_byte, kind, fqn").fetchall()
        relations = conn.execute("SELECT * FROM relations ORDER BY path, line, kind, source_fqn, target_name, "
                                 "target_fqn, fallback_fqn").fetchall()
    finally:
        conn.close()
    return [tuple(row)[1:] for row in symbols], [tuple(row)[1:] for row in relations]


def test_forgebot_index_walks_in_c_and_builds_the_graph_the_query_builds(tmp_path: Path) -> None:
    """The command as a user runs it: `--timings` says which walk found the nodes, and the index built
    with the C walk holds the same symbols and relations as one built with the switch turned off."""
    _need_walk()
    need((PHP / "Monolog").is_dir(), "Debian's php-monolog")
    checkout = tmp_path / "monolog"
    shutil.copytree(PHP / "Monolog", checkout)
    printed = {}
    for name, switch in (("walked", {}), ("queried", {"FORGEBOT_NO_TREEWALK": "1"})):
        env = {**os.environ, "FORGEBOT_DATA_DIR": str(tmp_path / name), **switch}
        done = subprocess.run([sys.executable, "-m", "bot.cli.main", "index", str(checkout), "--no-embeddings",
                               "--workers", "1", "--timings"], env=env, capture_output=True, text=True, cwd=ROOT,
                              timeout=300, check=True)
        printed[name] = done.stdout
    assert f"node walk: C (tree-sitter {treewalk.compiled()})" in printed["walked"]
    assert "node walk: tree-sitter queries; the C walk is turned off" in printed["queried"]
    walked, queried = _graph(tmp_path / "walked"), _graph(tmp_path / "queried")
    assert len(walked[0]) > 500 and len(walked[1]) > 500
    assert walked == queried


@functools.cache
def _python_query(source: str) -> tree_sitter.Query:
    return tree_sitter.Query(python_graph._language()[0], source)


def _python_reference(root: tree_sitter.Node, source: str) -> list[Row]:
    return _reference(_python_query(source), root)


def _python_trees(module: str) -> list[tuple[Path, tree_sitter.Tree]]:
    file = importlib.import_module(module).__file__
    assert file is not None, f"{module} is a namespace package"
    directory = Path(file).parent
    parser = python_graph.new_parser()
    return [(path, parser.parse(path.read_bytes())) for path in sorted(directory.rglob("*.py"))]


# the standard library's and the dev environment's packages (`.[dev]`): about 1,000 files
@pytest.mark.parametrize("module", ["asyncio", "email", "unittest", "importlib", "json", "jinja2", "httpx", "starlette",
                                    "pydantic", "langchain_core", "yaml"])
def test_python_captures_are_the_query_captures_file_by_file(module: str) -> None:
    """The Python extractor's query is all of forms the walk does: the walk stands in for all of it."""
    _need_walk()
    source = python_graph._QUERY + python_graph._CALLS
    find = treewalk.finder(python_graph._language()[0], source)
    trees = _python_trees(module)
    assert len(trees) > 4
    differing = [path for path, tree in trees
                 if _ids(find(tree.root_node))
                 != _python_reference(tree.root_node, source)]
    assert differing == []


def test_the_plan_takes_the_forms_the_walk_does_and_no_other() -> None:
    _need_walk()
    language = python_graph._language()[0]

    def planned(source: str) -> str | None:
        """None: the whole query runs; else the patterns run as a query on the roots the walk found."""
        plan = treewalk._plan(language, tree_sitter.Query(language, source), source)
        return None if plan is None else plan[3]

    assert planned("(call) @c\n(call function: (identifier) @f)\n(argument_list [(identifier) @a (string) @b])") == ""
    assert planned("(for_statement left: (_) @target)") == ""
    # a grandchild, a capture of the parent: queried at the roots that have the first child
    assert planned("(call (argument_list (identifier) @a))") == "(call (argument_list (identifier) @a))"
    assert planned("(call function: (identifier)) @c") == "(call function: (identifier)) @c"
    assert planned('((identifier) @x (#eq? @x "self"))') is None  # a pattern that is not a parent's
    assert planned("(argument_list . (identifier) @first)") is None  # an anchor before the first child
    assert planned("(call (argument_list)? @a)") is None  # a first child that may be absent
    assert planned("(call (_ (identifier) @x))") is None  # a first child of any kind: every call a root
    assert planned("(call) @a\n(call) @b") is None  # one kind under two names
    assert planned("(return_statement (expression) @x)") is None  # a supertype: the kinds under it
    assert planned("(expression) @x") is None


def test_rules_capture_children_by_field_and_by_kind() -> None:
    _need_walk()
    source = "(for_statement left: (_) @target)\n(argument_list [(identifier) @name (attribute) @member])"
    find = treewalk.finder(python_graph._language()[0], source)
    code = b"for a, b in pairs(x, y.z, 1, key=k):\n    print(a)\n"
    tree = python_graph.new_parser().parse(code)
    assert [(name, node.text) for _, _, name, node in find(tree.root_node)] == [
        ("target", b"a, b"), ("name", b"x"), ("member", b"y.z"), ("name", b"a"),
    ]
    assert _ids(find(tree.root_node)) == _python_reference(
        tree.root_node, source)


def _script_dialect(path: Path) -> str:
    typescript = {".tsx": "tsx", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript"}
    return typescript.get(path.suffix, "javascript")


@functools.cache
def _script_query(dialect: str) -> tree_sitter.Query:
    return tree_sitter.Query(script_graph._language(dialect)[0], script_graph.query_sources(dialect)[0])


def _script_reference(dialect: str, root: tree_sitter.Node) -> list[Row]:
    return _reference(_script_query(dialect), root)


def _script_walked(dialect: str, root: tree_sitter.Node) -> list[Row]:
    return _ids(script_graph._language(dialect)[1](root))


SCRIPT = b"""
;(save)
;(this.save)
const Button = () => <Card title={name} onClick={this.open} size="2">{label}</Card>
Cart.prototype = { total: function () { return 1 }, size: () => 2, name: "cart" }
"""


def test_script_captures_are_the_query_captures_file_by_file() -> None:
    """TypeScript's and JavaScript's queries have patterns of other forms (`;(save)`, a JSX attribute's
    expression, a prototype's function): the walk finds their roots and the query runs on those alone."""
    _need_walk()
    npm = next((path for path in (Path("/usr/lib/node_modules/npm"), Path("/usr/share/nodejs/npm")) if path.is_dir()),
               None)
    need(npm is not None, "npm's own JavaScript (Debian's npm)")
    assert npm is not None
    paths = [path for path in sorted(FIXTURES.rglob("*")) + sorted(npm.rglob("*.js"))
             if path.suffix in (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs") and path.is_file()]
    assert len(paths) > 300
    differing = []
    for path in paths:
        dialect = _script_dialect(path)
        root = tree_sitter.Parser(script_graph._language(dialect)[0]).parse(path.read_bytes()).root_node
        if _script_walked(dialect, root) != _script_reference(dialect, root):
            differing.append(path)
    assert differing == []
    for dialect in ("tsx", "javascript"):
        root = tree_sitter.Parser(script_graph._language(dialect)[0]).parse(SCRIPT).root_node
        walked = _script_walked(dialect, root)
        assert walked == _script_reference(dialect, root)
        captured = {(name, SCRIPT[s:-e].decode()) for s, e, name, _ in walked}
        assert {("ref.name", "save"), ("ref.member", "this.save")} <= captured  # `;(save)`, a root queried
        assert {("ref.name", "name"), ("ref.member", "this.open")} <= captured  # a JSX attribute's expression
    javascript = {(name, SCRIPT[s:-e].decode()) for s, e, name, _ in _script_walked(
        "javascript", tree_sitter.Parser(script_graph._language("javascript")[0]).parse(SCRIPT).root_node)}
    assert ("pair", "size: () => 2") in javascript and ("pair", 'name: "cart"') not in javascript


def _broken(source: bytes, seed: int) -> list[bytes]:
    """Versions of a file with syntax errors: a hole, a cut end, garbage put in (ERROR and MISSING nodes)."""
    rng = random.Random(seed)
    versions = []
    for _ in range(3):
        at = rng.randrange(len(source)) if source else 0
        end = min(len(source), at + rng.randrange(1, 40))
        versions += [source[:at] + source[end:], source[:at], source[:at] + b"(){[;" + source[at:]]
    return versions


def test_the_walk_equals_the_query_on_sources_with_syntax_errors() -> None:
    """Code under review is often broken: an ERROR node (symbol 65535, past every table) or a MISSING one
    must change nothing between the walk and the query, in each language."""
    _need_walk()
    need((PHP / "Monolog").is_dir(), "Debian's php-monolog")
    php = parse.new_parser()
    differing = 0
    for number, path in enumerate(sorted((PHP / "Monolog").rglob("*.php"))[:60]):
        for source in _broken(path.read_bytes(), number):
            root = php.parse(source).root_node
            differing += _ids(parse._captures(root)) != _query_items(root)
    python_source = python_graph._QUERY + python_graph._CALLS
    find = treewalk.finder(python_graph._language()[0], python_source)
    for number, (_, tree) in enumerate(_python_trees("email")[:40]):
        for source in _broken(tree.root_node.text or b"", number):
            root = python_graph.new_parser().parse(source).root_node
            differing += _ids(find(root)) != _python_reference(
                root, python_source)
    for number, path in enumerate(sorted(FIXTURES.rglob("*.ts")) + sorted(FIXTURES.rglob("*.js"))):
        dialect = _script_dialect(path)
        for source in _broken(path.read_bytes(), number):
            root = tree_sitter.Parser(script_graph._language(dialect)[0]).parse(source).root_node
            differing += _script_walked(dialect, root) != _script_reference(dialect, root)
    assert differing == 0


_UNDER_VALGRIND = """
import random, sys
from pathlib import Path
import tree_sitter
from project.index import parse, python_graph, script_graph
rng = random.Random(1)
def broken(source):
    at = rng.randrange(len(source))
    return [source[:at] + b"(){[;" + source[at:], source[:at]]
found = 0
for path in sys.argv[1:]:
    source = Path(path).read_bytes()
    for text in broken(source):
        if path.endswith(".php"):
            found += len(parse._captures(parse.new_parser().parse(text).root_node))
        elif path.endswith(".py"):
            found += len(python_graph._language()[1](python_graph.new_parser().parse(text).root_node))
        else:
            language, find, _ = script_graph._language("typescript")
            found += len(find(tree_sitter.Parser(language).parse(text).root_node))
print("found", found)
"""


@pytest.mark.slow
def test_the_walk_reads_no_memory_it_does_not_own_on_broken_sources() -> None:
    """valgrind's memcheck over the walk on sources with syntax errors in each language: no invalid read
    or write in the C code (an ERROR node's symbol, 65535, once indexed past a table)."""
    _need_walk()
    need(shutil.which("valgrind") is not None, "valgrind")
    paths = [*sorted(FIXTURES.rglob("*.php"))[:6], *sorted(FIXTURES.rglob("*.py"))[:6],
             *sorted(FIXTURES.rglob("*.ts"))[:6]]
    done = subprocess.run(["valgrind", "-q", sys.executable, "-c", _UNDER_VALGRIND, *map(str, paths)],
                          env={**os.environ, "PYTHONMALLOC": "malloc"}, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "found" in done.stdout, done.stderr[-2000:]
    assert "_treewalk" not in done.stderr, done.stderr[-4000:]


def test_field_ids_find_what_the_names_find(caplog: pytest.LogCaptureFixture) -> None:
    """Each extractor's field ids give the child its field's name gives, in each grammar it reads (the three
    script grammars number their fields apart); a field a grammar lacks gives no child, as by name, and is
    said in the log unless optional. The installed grammars have every field the extractors read."""
    source = b"import d from './m';\nclass A extends B { f(x: T) { return this.g(x); } }\n"
    grammars = [(script_graph._grammar(d), script_graph._fields(d)) for d in ("typescript", "tsx", "javascript")]
    for language, fields in grammars:
        root = tree_sitter.Parser(language).parse(source).root_node
        pending, compared = [root], 0
        while pending:
            node = pending.pop()
            pending.extend(node.children)
            for name in fields.__slots__:
                by_id = node.child_by_field_id(getattr(fields, name))
                assert by_id == node.child_by_field_name(name), (language.name, node.type, name)
                compared += by_id is not None
        assert compared >= 8, language.name  # the fields found, not only the absent ones
    for dialect in ("typescript", "tsx", "javascript"):  # the installed grammars have every field but these
        absent = {"module", "type"} if dialect == "javascript" else set()
        ids = {name: getattr(script_graph._fields(dialect), name) for name in script_graph._Fields.__slots__}
        assert {name for name, id_ in ids.items() if id_ == 0} == absent, dialect
    javascript = script_graph._grammar("javascript")
    assert treewalk.field_ids(javascript, "name", "type") == (javascript.field_id_for_name("name"), 0)
    assert "the installed grammar javascript has no field type" in caplog.text
    python = python_graph._language()[0]
    assert treewalk.field_ids(python, "name", "body") == (
        python.field_id_for_name("name"), python.field_id_for_name("body"))
    assert (php_grammar.NAME, php_grammar.SCOPE) == (
        php_grammar.GRAMMAR.field_id_for_name("name"), php_grammar.GRAMMAR.field_id_for_name("scope"))
    php_ids = [value for name, value in vars(php_grammar).items() if name.isupper() and isinstance(value, int)]
    assert len(php_ids) == 11 and 0 not in php_ids  # made at import, before the log was watched
    g = python_graph
    assert 0 not in (g._ALIAS, g._ARGUMENTS, g._ATTRIBUTE, g._BODY, g._DEFINITION, g._FUNCTION, g._LEFT,
                     g._MODULE_NAME, g._NAME, g._OBJECT, g._PARAMETERS, g._RIGHT, g._SUPERCLASSES, g._TYPE, g._VALUE)
