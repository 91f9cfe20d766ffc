"""Override contract: how control leaves the ancestor implementation of a method.

An override that drops one of the parent's exits (a `null` return, a documented throw, the call to
`parent::`) silently changes behaviour for every caller; the planner and the reviewer state these
exits so the override handles each. The ancestor's body is re-read from the checkout and parsed, but
only when its content still matches the indexed hash; otherwise the answer is marked stale and no
exits are invented.
"""

from __future__ import annotations

import re
from pathlib import Path

import tree_sitter

from project.index.db import Connection
from project.index.extractors import SourceParser, extractor_for
from project.index.hierarchy import overridden, split_member
from project.index.parse import content_hash
from project.index.queries import canonical, find_symbols, index_ready, named_status
from project.index.results import MISSING, ContractResult, Exit, ExitKind, IndexStatus, SymbolHit
from project.index.syntax import ExitSyntax

_THROWS = re.compile(r"@throws\s+([^\s*]+)")


def override_contract(conn: Connection, root: Path, method_fqn: str) -> ContractResult:
    """The exits of the nearest ancestor implementation `method_fqn` overrides (or would)."""
    if not index_ready(conn):
        return ContractResult(method=method_fqn, status=MISSING)
    fqn = _as_member(conn, canonical(conn, method_fqn))
    owner, name = split_member(fqn)
    if not name:
        raise ValueError(f"{method_fqn!r} is not a method (expected Class::method)")
    ancestors = [_one(conn, ancestor) for ancestor, _ in overridden(conn, fqn)]
    declared = [hit for hit in ancestors if hit is not None and not _has_body(conn, hit)]
    implemented = next((hit for hit in ancestors if hit is not None and _has_body(conn, hit)), None)
    if implemented is None:
        note = "no ancestor implementation in the index" if not declared else ""
        # an owner no definition carries has no ancestors to find: said so, not "no ancestor"
        status = named_status(conn, fqn, IndexStatus(state="ok", note=note))
        return ContractResult(method=fqn, status=status, declared_by=declared,
                              documented_throws=_documented(conn, declared))
    source = _indexed_source(conn, root, implemented.path)
    if source is None:
        status = IndexStatus(state="stale", stale_paths=[implemented.path], note="ancestor file changed")
        return ContractResult(method=fqn, status=status, ancestor=implemented, declared_by=declared)
    extractor = extractor_for(implemented.path)
    if extractor is None:
        return ContractResult(method=fqn, status=IndexStatus(state="ok", note="no grammar reads the ancestor's file"),
                              ancestor=implemented, declared_by=declared)
    syntax = extractor.exits
    node = _method_node(source, conn, implemented, extractor.new_parser(), syntax)
    exits = _exits(node, source, name, syntax) if node is not None else []
    return ContractResult(
        method=fqn, status=IndexStatus(state="ok"), ancestor=implemented, declared_by=declared,
        return_type=_return_type(node, source) if node is not None else "", exits=exits,
        documented_throws=_documented(conn, [implemented, *declared]),
    )


def _as_member(conn: Connection, fqn: str) -> str:
    """`pkg.mod.Class.method` as the member `pkg.mod.Class::method` when `pkg.mod.Class` is a class: Python's
    spelling, which `canonical` reads as a member only once the method is defined (an override about to
    be written is not)."""
    head, dot, tail = fqn.rpartition(".")
    if "::" in fqn or not dot or not head:
        return fqn
    owner = canonical(conn, head)
    row = conn.execute("SELECT 1 FROM symbols WHERE fqn = ? AND kind IN ('class', 'interface', 'trait') LIMIT 1",
                       (owner,)).fetchone()
    return f"{owner}::{tail}" if row is not None else fqn


def _one(conn: Connection, fqn: str) -> SymbolHit | None:
    hits = [hit for hit in find_symbols(conn, fqn, limit=1) if hit.kind == "method"]
    return hits[0] if hits else None


def _has_body(conn: Connection, hit: SymbolHit) -> bool:
    """Abstract and interface methods (PHP, TypeScript signatures) end in `;`: their signature is the whole
    declaration."""
    row = conn.execute(
        "SELECT signature FROM symbols WHERE fqn = ? AND kind = 'method'", (hit.fqn,)
    ).fetchone()
    return row is not None and not str(row[0]).rstrip().endswith(";")


def _documented(conn: Connection, hits: list[SymbolHit]) -> list[str]:
    found: list[str] = []
    for hit in hits:
        row = conn.execute(
            "SELECT docblock FROM symbols WHERE fqn = ? AND kind = 'method'", (hit.fqn,)
        ).fetchone()
        if row is not None:
            found.extend(t for t in _THROWS.findall(str(row[0])) if t not in found)
    return found


def _indexed_source(conn: Connection, root: Path, path: str) -> bytes | None:
    row = conn.execute("SELECT content_hash, stale FROM files WHERE path = ?", (path,)).fetchone()
    full = root / path
    if row is None or row[1] or not full.is_file():
        return None
    source = full.read_bytes()
    return source if content_hash(source) == row[0] else None


def _method_node(source: bytes, conn: Connection, hit: SymbolHit, parser: SourceParser,
                 syntax: ExitSyntax) -> tree_sitter.Node | None:
    row = conn.execute(
        "SELECT start_byte, end_byte FROM symbols WHERE fqn = ? AND kind = 'method'", (hit.fqn,)
    ).fetchone()
    tree = parser.parse(source)
    node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(int(row[0]), int(row[1]))
    while node is not None and node.type not in syntax.methods:
        node = node.parent
    if node is not None and node.child_by_field_name("body") is None:
        value = node.child_by_field_name("value")  # a class field holding an arrow function
        return value if value is not None and value.child_by_field_name("body") is not None else node
    return node


def _return_type(node: tree_sitter.Node, source: bytes) -> str:
    found = node.child_by_field_name("return_type")
    return source[found.start_byte : found.end_byte].decode("utf-8", "replace") if found else ""


def _exits(method: tree_sitter.Node, source: bytes, name: str, syntax: ExitSyntax) -> list[Exit]:
    body = method.child_by_field_name("body")
    if body is None:
        return []
    exits: list[Exit] = []
    stack = list(reversed(body.named_children))
    while stack:
        node = stack.pop()
        if node.type in syntax.opaque:
            continue
        found = _exit(node, source, name, syntax)
        if found is not None:
            exits.append(found)
        stack.extend(reversed(node.named_children))
    if body.type in ("statement_block", "block", "compound_statement") and _falls_through(body, syntax):
        end = body.end_point[0] + 1
        exits.append(Exit(kind="implicit_return", line=end, text="end of body may be reached"))
    return exits


def _falls_through(body: tree_sitter.Node, syntax: ExitSyntax) -> bool:
    """Whether the last statement lets control reach the end of the body (then the method returns null)."""
    statements = [c for c in body.named_children if c.type != "comment"]
    if not statements:
        return True
    last = statements[-1]
    if last.type in syntax.returns or last.type in syntax.throws:
        return False
    return not (last.type == "expression_statement" and last.named_children[:1]
                and last.named_children[0].type in syntax.throws)


def _exit(node: tree_sitter.Node, source: bytes, name: str, syntax: ExitSyntax) -> Exit | None:
    kind = node.type
    found: ExitKind
    if kind in syntax.returns:
        found = "return_value" if [c for c in node.named_children if c.type != "comment"] else "return_void"
    elif kind in syntax.throws:
        found = "throw"
    elif kind in syntax.yields:
        found = "yield"
    elif syntax.parent_call(node, name):
        found = "parent_call"
    else:
        return None
    text = " ".join(source[node.start_byte : node.end_byte].decode("utf-8", "replace").split())[:200]
    return Exit(kind=found, line=node.start_point[0] + 1, text=text)
