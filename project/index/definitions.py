"""Handlers that turn captured declaration nodes into symbol rows and structural relation rows.

Each handler receives the node and its enclosing context and returns the context that holds inside
the node (a namespace, class-like or function opens one) or None. The sweep in `parse.py` decides
which handler runs; the handlers never walk beyond the node they were given. Rows are plain tuples
in table-column order (a full build creates hundreds of thousands); `parse.parse_source` turns them
into `Symbol` and `Relation` records for other consumers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from project.index import php_grammar
from project.index.model import RelationKind, SymbolKind
from project.index.names import ImportKind, NameTable, join, strip_leading
from project.index.receivers import CallSite, ClassScope, FunctionScope, RelationRow, documented, resolve_type

# path, kind, fqn, name, parent_fqn, start_line, end_line, start_byte, end_byte, signature, docblock,
# attributes: the `symbols` table's columns, in order
SymbolRow = tuple[str, str, str, str, str, int, int, int, int, str, str, tuple[str, ...]]


@dataclass(slots=True)
class Context:
    """What encloses a node: namespace imports, class-like and function (either may be None)."""

    names: NameTable
    cls: ClassScope | None = None
    func: FunctionScope | None = None


@dataclass(slots=True)
class Extraction:
    """The records of one file as they accumulate during the sweep."""

    path: str
    source: bytes
    symbols: list[SymbolRow] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    subscribed: list[CallSite] = field(default_factory=list)  # what a getSubscribedEvents() returns
    resources: list[CallSite] = field(default_factory=list)  # Laravel's Route::resource(...) calls
    tables: list[NameTable] = field(default_factory=list)
    # the source as text when it is ASCII (a byte offset is then a character offset): one decode for the
    # file instead of one per name read (as `scopes.Rows` does for the other languages)
    ascii: str | None = None

    def __post_init__(self) -> None:
        if self.source.isascii():
            self.ascii = self.source.decode("ascii")

    def text(self, node: tree_sitter.Node) -> str:
        if self.ascii is not None:
            return self.ascii[node.start_byte : node.end_byte]
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")


Handler = Callable[[Extraction, tree_sitter.Node, Context], "Context | None"]


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _short(name: str) -> str:
    return name.rsplit("\\", 1)[-1]


def _relate(ex: Extraction, kind: RelationKind, source: str, target: str, node: tree_sitter.Node) -> None:
    ex.relations.append((ex.path, kind, source, _short(target), target, "", _line(node)))


_BODIES = frozenset({"compound_statement", "declaration_list", "enum_declaration_list"})
Annotation = tuple[str, str, tuple[str, ...]]  # signature, docblock, attributes
_NO_ANNOTATION: Annotation = ("", "", ())


def _annotation(ex: Extraction, node: tree_sitter.Node, names: NameTable) -> Annotation:
    """Signature (head without attributes, docblock and body), docblock and attribute names, in one pass.

    The docblock is the `/** */` comment right before the declaration or, when attributes come
    first, the one tree-sitter places inside the declaration after them.
    """
    docblock = ""
    attributes: list[str] = []
    start, end = -1, node.end_byte
    for child in node.children:
        kind = child.type
        if kind == "attribute_list":
            attributes.extend(_attribute_names(ex, child, names))
        elif kind == "comment":
            docblock = docblock or _doc_comment(ex, child)
        elif kind in _BODIES:
            end = child.start_byte
            break
        elif start < 0:
            start = child.start_byte
    if not docblock:
        docblock = _doc_comment(ex, node.prev_named_sibling)
    head = ex.source[max(start, node.start_byte) : end].decode("utf-8", "replace")
    return " ".join(head.split())[:400], docblock, tuple(attributes)


def _doc_comment(ex: Extraction, node: tree_sitter.Node | None) -> str:
    if node is None or node.type != "comment":
        return ""
    text = ex.text(node)
    return text if text.startswith("/**") else ""


def _attribute_names(ex: Extraction, attribute_list: tree_sitter.Node, names: NameTable) -> list[str]:
    found: list[str] = []
    for group in attribute_list.named_children:
        for attribute in group.named_children:
            head = attribute.named_children[0] if attribute.named_children else None
            if head is not None and head.type in ("name", "qualified_name"):
                found.append(names.resolve_class(ex.text(head)))
    return found


def _symbol(
    ex: Extraction,
    kind: SymbolKind,
    fqn: str,
    node: tree_sitter.Node,
    parent: str = "",
    annotation: Annotation = _NO_ANNOTATION,
) -> None:
    """Append a symbol row (see `SymbolRow`): rows, not objects, keep a full build cheap."""
    start, end = node.start_point, node.end_point
    signature, docblock, attributes = annotation
    ex.symbols.append(
        (ex.path, kind, fqn, _short(fqn.rsplit("::", 1)[-1]), parent, start[0] + 1, end[0] + 1,
         node.start_byte, node.end_byte, signature, docblock, attributes)
    )


def namespace(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context:
    name_node = node.child_by_field_id(php_grammar.NAME)
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
    alias_node = clause.child_by_field_id(php_grammar.ALIAS)
    target = next(
        (c for c in clause.named_children if c.type in ("name", "qualified_name") and c != alias_node), None
    )
    if target is None:
        return
    fqn = strip_leading(prefix + strip_leading(ex.text(target)))
    alias = ex.text(alias_node) if alias_node is not None else ""
    short = ctx.names.add(_IMPORT_KINDS.get(kind, "class"), fqn, alias)
    ex.relations.append((ex.path, "imports", "", short, fqn, "", _line(clause)))


def _class_like(ex: Extraction, node: tree_sitter.Node, ctx: Context, kind: SymbolKind) -> Context:
    name_node = node.child_by_field_id(php_grammar.NAME)
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
    _symbol(ex, kind, fqn, node, "", _annotation(ex, node, ctx.names))
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
    name_node = node.child_by_field_id(php_grammar.NAME)
    if ctx.cls is None or name_node is None:
        return None
    if ctx.cls.anonymous:
        return Context(ctx.names, ctx.cls, FunctionScope(ctx.func.fqn if ctx.func else ""))
    fqn = f"{ctx.cls.fqn}::{ex.text(name_node)}"
    annotation = _annotation(ex, node, ctx.names)
    _symbol(ex, "method", fqn, node, ctx.cls.fqn, annotation)
    return Context(ctx.names, ctx.cls, _documented_parameters(ex, node, annotation[1], ctx, FunctionScope(fqn)))


def function(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> Context | None:
    name_node = node.child_by_field_id(php_grammar.NAME)
    if name_node is None:
        return None
    fqn = join(ctx.names.namespace, ex.text(name_node))
    annotation = _annotation(ex, node, ctx.names)
    _symbol(ex, "function", fqn, node, "", annotation)
    return Context(ctx.names, ctx.cls, _documented_parameters(ex, node, annotation[1], ctx, FunctionScope(fqn)))


def _documented_parameters(ex: Extraction, node: tree_sitter.Node, docblock: str, ctx: Context,
                           scope: FunctionScope) -> FunctionScope:
    """`scope`, its parameters that declare no type typed by the docblock's `@param` tags (a declared
    type is the parameter's own, `parameter` reads it)."""
    if "@param" not in docblock:
        return scope
    types = documented(docblock, ctx.names, ctx.cls)
    parameters = node.child_by_field_id(php_grammar.PARAMETERS)
    for parameter_node in parameters.named_children if parameters is not None else ():
        var = parameter_node.child_by_field_id(php_grammar.NAME)
        if parameter_node.type == "simple_parameter" and var is not None \
                and parameter_node.child_by_field_id(php_grammar.TYPE) is None:
            name = ex.text(var).lstrip("$")
            scope.assign(name, types.get(name, ""))
    return scope


def properties(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    if ctx.cls is None:
        return
    type_node = node.child_by_field_id(php_grammar.TYPE)
    declared = resolve_type(type_node, ex.text, ctx.names, ctx.cls) if type_node is not None else ""
    annotation = _NO_ANNOTATION if ctx.cls.anonymous else _annotation(ex, node, ctx.names)
    if type_node is None and "@var" in annotation[1]:  # `/** @var Cart */ private $cart;`
        declared = next(iter(documented(annotation[1], ctx.names, ctx.cls).values()), "")
    for element in node.named_children:
        if element.type != "property_element":
            continue
        var = element.child_by_field_id(php_grammar.NAME)
        if var is None:
            continue
        name = ex.text(var).lstrip("$")
        ctx.cls.props[name] = declared
        if not ctx.cls.anonymous:
            _symbol(ex, "property", f"{ctx.cls.fqn}::${name}", element, ctx.cls.fqn, annotation)


def promoted(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    """A constructor parameter with visibility is also a property of the class."""
    var = node.child_by_field_id(php_grammar.NAME)
    if ctx.cls is None or var is None:
        return
    type_node = node.child_by_field_id(php_grammar.TYPE)
    declared = resolve_type(type_node, ex.text, ctx.names, ctx.cls) if type_node is not None else ""
    name = ex.text(var).lstrip("$")
    ctx.cls.props[name] = declared
    if ctx.func is not None:
        ctx.func.assign(name, declared)
    if not ctx.cls.anonymous:
        annotation = _annotation(ex, node, ctx.names)
        _symbol(ex, "property", f"{ctx.cls.fqn}::${name}", node, ctx.cls.fqn, annotation)


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
    name_node = node.child_by_field_id(php_grammar.NAME)
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
    var = node.child_by_field_id(php_grammar.NAME)
    type_node = node.child_by_field_id(php_grammar.TYPE)
    if ctx.func is not None and var is not None and type_node is not None:
        ctx.func.assign(ex.text(var).lstrip("$"), resolve_type(type_node, ex.text, ctx.names, ctx.cls))


def assignment(ex: Extraction, node: tree_sitter.Node, ctx: Context) -> None:
    """`$x = new Foo(...)` types `$x` as Foo for the rest of the function (flow-insensitive)."""
    left = node.child_by_field_id(php_grammar.LEFT)
    right = node.child_by_field_id(php_grammar.RIGHT)
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
