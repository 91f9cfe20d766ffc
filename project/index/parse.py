"""tree-sitter-php → `ParsedFile`: definitions, imports, inheritance and call sites of one file.

One tree-sitter query (run in C) picks the interesting nodes; a single sweep in source order keeps a
stack of enclosing namespace, class and function so every node knows its context without walking
the whole tree in Python. Call sites are resolved after the sweep, when every property type and
local variable type of their class and function is known (`receivers.py`); so are the callables a
line hands to another function, `[UserController::class, 'show']` (`callables.py`).
"""

from __future__ import annotations

import hashlib
import json
import operator
from dataclasses import dataclass
from functools import lru_cache
from typing import cast

import tree_sitter

from project.index import callables, definitions, php_grammar, treewalk
from project.index.definitions import Context, Extraction
from project.index.model import ParsedFile, Relation, RelationKind, Symbol, SymbolKind
from project.index.names import NameTable
from project.index.receivers import CallSite, RelationRow, resolve_call

# The query's patterns that name a node type and nothing more: node type -> capture name.
_KINDS = {
    "namespace_definition": "namespace",
    "namespace_use_declaration": "import",
    "class_declaration": "class",
    "interface_declaration": "interface",
    "trait_declaration": "trait",
    "enum_declaration": "enum",
    "anonymous_class": "anonymous",
    "method_declaration": "method",
    "function_definition": "function",
    "property_declaration": "property",
    "property_promotion_parameter": "promoted",
    "const_declaration": "const",
    "enum_case": "case",
    "use_declaration": "trait_use",
    "member_call_expression": "call",
    "nullsafe_member_call_expression": "call",
    "scoped_call_expression": "call",
    "function_call_expression": "call",
    "object_creation_expression": "call",
}
_SHAPED = """
(simple_parameter type: (_)) @param
(assignment_expression left: (variable_name) right: (object_creation_expression)) @assign
"""
_QUERY = "".join(f"({kind}) @{name}\n" for kind, name in _KINDS.items()) + _SHAPED + callables.QUERY
# What the C walk collects (`treewalk`), when the build compiled it: the type-only patterns' nodes as
# they are; "?" the nodes of the two shaped patterns, whose children are checked here; "!" the nodes
# where a pattern of `callables.QUERY` may start (`callables.may_match`), on which that query is run.
_WALKED = {
    **_KINDS,
    "simple_parameter": "?param",
    "assignment_expression": "?assign",
    "array_creation_expression": "?array",
    "function_call_expression": "call!",
    "scoped_call_expression": "call!",
    "method_declaration": "method!",
}
# Node types that by tree-sitter-php's grammar hold none of those nodes (names, literals, type names,
# modifiers, comments; `string` is single-quoted, with no interpolation): the walk does not go into them.
_LEAVES = frozenset({
    "name", "variable_name", "namespace_name", "qualified_name", "relative_scope", "comment", "php_tag", "text",
    "string", "string_content", "escape_sequence", "integer", "float", "boolean", "null", "named_type",
    "primitive_type", "optional_type", "union_type", "visibility_modifier", "static_modifier", "final_modifier",
    "abstract_modifier", "readonly_modifier",
})
_HUGE = 1 << 62
_SOURCE_ORDER = operator.itemgetter(0, 1)  # by start, the outer node first: made in C, not a lambda


@lru_cache(maxsize=1)
def _query() -> tree_sitter.Query:
    """The whole query, compiled only where the C walk cannot be used (30 ms, once per process)."""
    return tree_sitter.Query(php_grammar.GRAMMAR, _QUERY)


@lru_cache(maxsize=1)
def _walked() -> tuple[treewalk.Find, tree_sitter.Query] | None:
    """The C walk over `_WALKED` and the callables' query, or None (no compiled walk: the query)."""
    language = php_grammar.GRAMMAR
    collect = treewalk.collector(language, _WALKED, _LEAVES)
    return None if collect is None else (collect, tree_sitter.Query(language, callables.QUERY))


def _captures(root: tree_sitter.Node) -> list[treewalk.Item]:
    """What `_QUERY` captures under `root` but the `_…` captures, in source order (outer node first).

    With the C walk, the same captures come from the walk and from `callables.QUERY` run on the
    nodes where it may match; without it, from the whole query (tests compare the two, file by file).
    """
    walked = _walked()
    if walked is None:
        return [item for item in treewalk.queried(_query(), root) if item[2][0] != "_"]
    items, starts = _sorted_out(walked[0](root))
    if starts:  # as the whole query gives them: each node once per name, no `_…` capture
        items.extend(item for item in treewalk.captured_at(walked[1], starts) if item[2][0] != "_")
        items.sort(key=_SOURCE_ORDER)  # the walk's own order is source order already
    return items


def _sorted_out(walked: list[treewalk.Item]) -> tuple[list[treewalk.Item], list[tree_sitter.Node]]:
    """The walk's nodes as captures (a shaped pattern's when its children fit), and the nodes where a
    pattern of `callables.QUERY` may start."""
    items: list[treewalk.Item] = []
    append = items.append
    starts = []
    for item in walked:
        name = item[2]
        if name[-1] == "!":
            append((item[0], item[1], name[:-1], item[3]))
            if callables.may_match(item[3]):
                starts.append(item[3])
        elif name[0] != "?":
            append(item)
        elif name == "?param":
            if item[3].child_by_field_id(php_grammar.TYPE) is not None:
                append((item[0], item[1], "param", item[3]))
        elif name == "?assign":
            if _new_object(item[3]):
                append((item[0], item[1], "assign", item[3]))
        elif callables.may_match(item[3]):
            starts.append(item[3])
    return items, starts


def _new_object(node: tree_sitter.Node) -> bool:
    """`$x = new Foo(...)`: the pattern `(assignment_expression left: (variable_name) right:
    (object_creation_expression))`."""
    left, right = node.child_by_field_id(php_grammar.LEFT), node.child_by_field_id(php_grammar.RIGHT)
    return left is not None and right is not None and left.type == "variable_name" and (
        right.type == "object_creation_expression")


def new_parser() -> tree_sitter.Parser:
    """A parser for PHP files (`<?php` tags and inline HTML)."""
    return tree_sitter.Parser(php_grammar.GRAMMAR)


def content_hash(source: bytes) -> str:
    """Git's blob id of the content: the key git itself gives the file."""
    return hashlib.sha1(b"blob %d\0" % len(source) + source, usedforsecurity=False).hexdigest()


@dataclass(frozen=True)
class FileRows:
    """One file's extraction as table rows: what the store writes and a worker process sends back."""

    path: str
    content_hash: str
    language: str
    has_errors: bool
    symbols: list[StoredSymbolRow]
    relations: list[RelationRow]
    # what a build's `prepare` made of the file in the parser process (a base index: its search rows)
    prepared: object = None
    # why the extractor could not read the file ("" when it did): its rows are then empty
    failure: str = ""
    # why the file is not indexed at all (`generated.left_out`: minified, generated, too large)
    left_out: str = ""


# A symbol row with its attributes as a JSON array, the form the `symbols` table stores.
StoredSymbolRow = tuple[str, str, str, str, str, int, int, int, int, str, str, str]


def extract(path: str, source: bytes, parser: tree_sitter.Parser | None = None) -> tuple[Extraction, bool]:
    """Parse and sweep one file; return the extraction and whether the file has syntax errors."""
    return extract_tree(path, source, (parser or new_parser()).parse(source))


def extract_tree(path: str, source: bytes, tree: tree_sitter.Tree) -> tuple[Extraction, bool]:
    """Sweep the captured nodes of a parsed file (`tree` is `source` parsed)."""
    items = _captures(tree.root_node)
    ex = Extraction(path, source)
    _sweep(ex, items)
    text = ex.text
    callable_types = callables.NODE_TYPES
    for site in ex.calls:
        if site.node.type in callable_types:
            relation = callables.resolve_callable(site, text)
        else:
            relation = resolve_call(site, text)
        if relation is not None:
            ex.relations.append(relation)
    if ex.subscribed:
        methods = {row[2].lower() for row in ex.symbols if row[1] == "method"}
        for site in ex.subscribed:
            ex.relations.extend(callables.subscribed(site, text, methods))
    for site in ex.resources:
        ex.relations.extend(callables.resource_actions(site, text))
    return ex, tree.root_node.has_error


def tree_rows(path: str, source: bytes, tree: tree_sitter.Tree, digest: str = "") -> FileRows:
    """The table rows of a parsed file; `digest` is its `content_hash` when the caller has it."""
    ex, has_errors = extract_tree(path, source, tree)
    symbols = [(*row[:11], json.dumps(row[11]) if row[11] else "[]") for row in ex.symbols]
    return FileRows(path, digest or content_hash(source), "php", has_errors, symbols, ex.relations)


def parse_source(path: str, source: bytes, parser: tree_sitter.Parser | None = None) -> ParsedFile:
    """Extract everything the graph needs from one PHP file's bytes; `path` is repo-relative."""
    ex, has_errors = extract(path, source, parser)
    symbols = tuple(
        Symbol(kind=cast(SymbolKind, kind), fqn=fqn, name=name, path=p, start_line=sl, end_line=el,
               start_byte=sb, end_byte=eb, signature=sig, docblock=doc, attributes=attrs, parent_fqn=parent)
        for p, kind, fqn, name, parent, sl, el, sb, eb, sig, doc, attrs in ex.symbols
    )
    relations = tuple(
        Relation(cast(RelationKind, kind), source_fqn, name, target, p, line, fallback_fqn=fallback)
        for p, kind, source_fqn, name, target, fallback, line in ex.relations
    )
    imports: dict[str, str] = {}
    for table in ex.tables:
        imports.update(table.imports())
    return ParsedFile(
        path=path,
        content_hash=content_hash(source),
        language="php",
        symbols=symbols,
        relations=relations,
        has_errors=has_errors,
        namespace=next((t.namespace for t in ex.tables if t.namespace), ""),
        imports=imports,
    )


def _sweep(ex: Extraction, items: list[tuple[int, int, str, tree_sitter.Node]]) -> None:
    """Visit captured nodes in source order with a stack of (end byte, context)."""
    root = NameTable()
    ex.tables.append(root)
    stack: list[tuple[int, Context]] = [(_HUGE, Context(root))]
    handlers = definitions.HANDLERS
    for start, _, capture, node in items:
        while stack[-1][0] <= start:
            stack.pop()
        ctx = stack[-1][1]
        if capture == "subscribed" or capture == "resource":
            (ex.subscribed if capture == "subscribed" else ex.resources).append(
                CallSite(node, ctx.names, ctx.cls, ctx.func, ex.path))
            continue
        if capture == "call" or capture == "callable":
            if capture == "callable" and ex.calls and ex.calls[-1].node == node:
                continue  # a string two patterns name ('App\\Cart::total' given to array_map)
            ex.calls.append(CallSite(node, ctx.names, ctx.cls, ctx.func, ex.path))
            continue
        inner = handlers[capture](ex, node, ctx)
        if inner is None:
            continue
        if capture == "namespace" and node.child_by_field_id(php_grammar.BODY) is None:
            stack[:] = [(_HUGE, inner)]  # `namespace X;` lasts until the next namespace statement
        else:
            stack.append((node.end_byte, inner))
