"""Handlers that turn captured declaration nodes into `Symbol` and structural `Relation` records.

Each handler receives the node and its enclosing context and returns the context that holds inside
the node (a namespace, class-like or function opens one) or None. The sweep in `parse.py` decides
which handler runs; the handlers never walk beyond the node they were given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from graph.index.model import Relation, RelationKind, Symbol, SymbolKind
from graph.index.names import ImportKind, NameTable, join, strip_leading
from graph.index.receivers import CallSite, ClassScope, FunctionScope, resolve_type


@dataclass
class Context:
    """What encloses a node: namespace imports, class-like and function (either may be None)."""

    names: NameTable
    cls: ClassScope | None = None
    func: FunctionScope | None = None


@dataclass
class Extraction:
    """The records of one file as they accumulate during the sweep."""

    path: str
    source: bytes
    symbols: list[Symbol] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    tables: list[NameTable] = field(default_factory=list)

    def text(self, node: tree_sitter.Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")


Handler = Callable[[Extraction, tree_sitter.Node, Context], "Context | None"]


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _short(name: str) -> str:
    return name.rsplit("\\", 1)[-1]


def _relate(ex: Extraction, kind: RelationKind, source: str, target: str, node: tree_sitter.Node) -> None:
    ex.relations.append(Relation(kind, source, _short(target), target, ex.path, _line(node)))


def _docblock(ex: Extraction, node: tree_sitter.Node) -> str:
    """The `/** */` comment right before a declaration (or after its attributes, inside it)."""
    candidates = [node.prev_named_sibling]
    if node.child_by_field_name("attributes") is not None:
        candidates.extend(child for child in node.named_children if child.type == "comment")
    for candidate in candidates:
        if candidate is not None and candidate.type == "comment":
            text = ex.text(candidate)
            if text.startswith("/**"):
                return text
    return ""


def _attributes(ex: Extraction, node: tree_sitter.Node, names: NameTable) -> tuple[str, ...]:
    found: list[str] = []
    for child in node.named_children:
        if child.type != "attribute_list":
            continue
        for group in child.named_children:
            for attribute in group.named_children:
                head = attribute.named_children[0] if attribute.named_children else None
                if head is not None and head.type in ("name", "qualified_name"):
                    found.append(names.resolve_class(ex.text(head)))
    return tuple(found)


def _signature(ex: Extraction, node: tree_sitter.Node) -> str:
    """The declaration's head without attributes, docblock and body, on one line."""
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    start = node.start_byte
    for child in node.children:
        if child.type not in ("attribute_list", "comment"):
            start = child.start_byte
            break
    return " ".join(ex.source[start:end].decode("utf-8", "replace").split())[:400]


def _symbol(
    ex: Extraction,
    kind: SymbolKind,
    fqn: str,
    node: tree_sitter.Node,
    parent: str = "",
    declaration: tree_sitter.Node | None = None,
    names: NameTable | None = None,
) -> None:
    """Append a symbol; with `declaration` and `names` also its signature, docblock and attributes."""
    ex.symbols.append(
        Symbol(
            kind=kind,
            fqn=fqn,
            name=_short(fqn.rsplit("::", 1)[-1]),
            path=ex.path,
            start_line=node.start_point[0] + 1,
            end_line=node.end_point[0] + 1,
            start_byte=node.start_byte,
            end_byte=node.end_byte,
            signature=_signature(ex, declaration) if declaration is not None else "",
            docblock=_docblock(ex, declaration) if declaration is not None else "",
            attributes=() if declaration is None or names is None else _attributes(ex, declaration, names),
            parent_fqn=parent,
        )
    )


def namespace(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context:
    name_node = node.child_by_field_name("name")
    name = strip_leading(ex.text(name_node)) if name_node is not None else ""
    table = NameTable(name)
    ex.tables.append(table)
    if name:
        _symbol(ex, "namespace", name, node)
    return Context(table)


def imports(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    """`use A\\B [as C], ...;`, `use function ...`, `use const ...` and grouped `use A\\{B, C}`."""
    kind = ""  # tree-sitter attaches `function`/`const` of `use function A, B;` to the first clause
    prefix = ""
    for child in node.named_children:
        if child.type == "namespace_name":
            prefix = strip_leading(ex.text(child)) + "\\"
        elif child.type == "namespace_use_clause":
            kind = kind or _use_kind(child)
            _import_clause(ex, child, ctx, kind, prefix)
        elif child.type == "namespace_use_group":
            for clause in child.named_children:
                if clause.type == "namespace_use_clause":
                    _import_clause(ex, clause, ctx, _use_kind(clause) or kind, prefix)


_IMPORT_KINDS: dict[str, ImportKind] = {"function": "function", "const": "const"}


def _use_kind(node: tree_sitter.Node) -> str:
    for child in node.children:
        if child.type in ("function", "const"):
            return child.type
    return "class"


def _import_clause(ex: Extraction, clause: tree_sitter.Node, ctx: Context, kind: str, prefix: str) -> None:
    alias_node = clause.child_by_field_name("alias")
    target = next(
        (c for c in clause.named_children if c.type in ("name", "qualified_name") and c != alias_node), None
    )
    if target is None:
        return
    fqn = strip_leading(prefix + strip_leading(ex.text(target)))
    alias = ex.text(alias_node) if alias_node is not None else ""
    short = ctx.names.add(_IMPORT_KINDS.get(kind, "class"), fqn, alias)
    ex.relations.append(Relation("imports", "", short, fqn, ex.path, _line(clause)))


def _class_like(ex: Extraction, node: tree_sitter.Node, ctx: Context, kind: SymbolKind) -> Context:
    name_node = node.child_by_field_name("name")
    fqn = join(ctx.names.namespace, ex.text(name_node) if name_node is not None else "?")
    parent = ""
    for child in node.named_children:
        if child.type == "base_clause":
            for base in child.named_children:
                target = ctx.names.resolve_class(ex.text(base))
                parent = parent or target
                _relate(ex, "extends", fqn, target, base)
        elif child.type == "class_interface_clause":
            for iface in child.named_children:
                target = ctx.names.resolve_class(ex.text(iface))
                _relate(ex, "implements", fqn, target, iface)
    _symbol(ex, kind, fqn, node, "", node, ctx.names)
    return Context(ctx.names, ClassScope(fqn, parent if kind == "class" else ""))


def anonymous_class(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context:
    """Members of `new class {...}` have no name to index; their calls count for the enclosing code."""
    parent = ""
    for child in node.named_children:
        if child.type == "base_clause" and child.named_children:
            parent = ctx.names.resolve_class(ex.text(child.named_children[0]))
    owner = ctx.func.fqn if ctx.func is not None else ""
    return Context(ctx.names, ClassScope("", parent, anonymous=True), FunctionScope(owner))


def method(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context | None:
    name_node = node.child_by_field_name("name")
    if ctx.cls is None or name_node is None:
        return None
    if ctx.cls.anonymous:
        return Context(ctx.names, ctx.cls, FunctionScope(ctx.func.fqn if ctx.func else ""))
    fqn = f"{ctx.cls.fqn}::{ex.text(name_node)}"
    _symbol(ex, "method", fqn, node, ctx.cls.fqn, node, ctx.names)
    return Context(ctx.names, ctx.cls, FunctionScope(fqn))


def function(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context | None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return None
    fqn = join(ctx.names.namespace, ex.text(name_node))
    _symbol(ex, "function", fqn, node, "", node, ctx.names)
    return Context(ctx.names, ctx.cls, FunctionScope(fqn))


def properties(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    if ctx.cls is None:
        return
    type_node = node.child_by_field_name("type")
    declared = resolve_type(type_node, ex.text, ctx.names, ctx.cls) if type_node is not None else ""
    for element in node.named_children:
        if element.type != "property_element":
            continue
        var = element.child_by_field_name("name")
        if var is None:
            continue
        name = ex.text(var).lstrip("$")
        ctx.cls.props[name] = declared
        if not ctx.cls.anonymous:
            _symbol(ex, "property", f"{ctx.cls.fqn}::${name}", element, ctx.cls.fqn, node, ctx.names)


def promoted(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    """A constructor parameter with visibility is also a property of the class."""
    var = node.child_by_field_name("name")
    if ctx.cls is None or var is None:
        return
    type_node = node.child_by_field_name("type")
    declared = resolve_type(type_node, ex.text, ctx.names, ctx.cls) if type_node is not None else ""
    name = ex.text(var).lstrip("$")
    ctx.cls.props[name] = declared
    if ctx.func is not None:
        ctx.func.assign(name, declared)
    if not ctx.cls.anonymous:
        _symbol(ex, "property", f"{ctx.cls.fqn}::${name}", node, ctx.cls.fqn, node, ctx.names)


def constants(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    if ctx.cls is not None and ctx.cls.anonymous:
        return
    for element in node.named_children:
        if element.type != "const_element" or not element.named_children:
            continue
        name = ex.text(element.named_children[0])
        if ctx.cls is not None:
            _symbol(ex, "constant", f"{ctx.cls.fqn}::{name}", element, ctx.cls.fqn)
        else:
            _symbol(ex, "constant", join(ctx.names.namespace, name), element)


def enum_case(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    name_node = node.child_by_field_name("name")
    if ctx.cls is not None and name_node is not None:
        _symbol(ex, "enum_case", f"{ctx.cls.fqn}::{ex.text(name_node)}", node, ctx.cls.fqn)


def trait_use(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    if ctx.cls is None or ctx.cls.anonymous:
        return
    for child in node.named_children:
        if child.type in ("name", "qualified_name"):
            target = ctx.names.resolve_class(ex.text(child))
            _relate(ex, "uses_trait", ctx.cls.fqn, target, child)


def parameter(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    var = node.child_by_field_name("name")
    type_node = node.child_by_field_name("type")
    if ctx.func is not None and var is not None and type_node is not None:
        ctx.func.assign(ex.text(var).lstrip("$"), resolve_type(type_node, ex.text, ctx.names, ctx.cls))


def assignment(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    """`$x = new Foo(...)` types `$x` as Foo for the rest of the function (flow-insensitive)."""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if ctx.func is None or left is None or right is None or not right.named_children:
        return
    created = right.named_children[0]
    if created.type in ("name", "qualified_name", "relative_name"):
        ctx.func.assign(ex.text(left).lstrip("$"), resolve_type(created, ex.text, ctx.names, ctx.cls))


HANDLERS: dict[str, Handler] = {
    "namespace": namespace,
    "import": imports,
    "class": lambda ex, node, ctx: _class_like(ex, node, ctx, "class"),
    "interface": lambda ex, node, ctx: _class_like(ex, node, ctx, "interface"),
    "trait": lambda ex, node, ctx: _class_like(ex, node, ctx, "trait"),
    "enum": lambda ex, node, ctx: _class_like(ex, node, ctx, "enum"),
    "anonymous": anonymous_class,
    "method": method,
    "function": function,
    "property": properties,
    "promoted": promoted,
    "const": constants,
    "case": enum_case,
    "trait_use": trait_use,
    "param": parameter,
    "assign": assignment,
}
