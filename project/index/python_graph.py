"""tree-sitter-python → code-graph rows: modules, classes, functions and methods, imports, calls.

Names follow Python's own: a module is its dotted import name (`pkg/sub/mod.py` is `pkg.sub.mod`,
`pkg/__init__.py` is `pkg`; a leading `…/src/` is not part of it), a class or function is
`module.qualname` (`pkg.mod.Outer.Inner`, `pkg.mod.helper`, `pkg.mod.outer.inner` for a function
defined in a function), and a method is `Class::name` (`pkg.mod.Outer::run`), the graph's member
separator. A definition starts at its `def`/`class` line, as Python's `ast` says; its decorators are
its attributes and part of its signature, its docstring is its docblock.

As for PHP, one tree-sitter query (run in C) picks the nodes and a sweep in source order keeps the
enclosing scopes on a stack (`scopes.Scope`); calls are resolved once the whole file is known:
module functions and classes, imported names (relative imports resolved against the file's own
package), `self.`/`cls.` methods, `super()`, typed parameters and attributes, and variables assigned
an instance. Every other call keeps its name only (`by_name`).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import tree_sitter
import tree_sitter_python

from project.index import scopes, treewalk
from project.index.model import STAR
from project.index.parse import FileRows
from project.index.scopes import LOCAL, Binding, ClassInfo, Context, Rows, Scope, head, looks_like_class, sweep

if TYPE_CHECKING:
    from project.index.aliases import Aliases

_QUERY = """
(decorated_definition) @decorated
(class_definition) @class
(function_definition) @function
(import_statement) @import
(import_from_statement) @import_from
(assignment) @assign
(for_statement left: (_) @target)
(for_in_clause left: (_) @target)
(as_pattern_target) @target
(named_expression name: (identifier) @target)
"""
# a call by its callee; a function handed over by its name (`references`): an argument, a dict's value (a
# dispatch table, `{"paid": on_paid}`), what a function returns (a factory's inner function). Lists and
# tuples are not read: sympy's are of symbols, and reading them cost its extraction 5-10% for 2 of
# saleor's 400 sampled definitions
_CALLS = """
(call function: [(identifier) @call.name (attribute) @call.member])
(argument_list [(identifier) @ref.name (attribute) @ref.member])
(keyword_argument value: [(identifier) @ref.name (attribute) @ref.member])
(pair value: [(identifier) @ref.name (attribute) @ref.member])
(return_statement [(identifier) @ref.name (attribute) @ref.member])
"""
BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))
CONSTRUCTOR = "__init__"
_BUILTIN_BINDINGS = {name: Binding("name", f"builtins.{name}") for name in BUILTINS}


_GRAMMAR = tree_sitter.Language(tree_sitter_python.language())
# the fields the extractor reads, by id (`treewalk.field_ids`)
(_ALIAS, _ARGUMENTS, _ATTRIBUTE, _BODY, _DEFINITION, _FUNCTION, _LEFT, _MODULE_NAME, _NAME, _OBJECT, _PARAMETERS,
 _RIGHT, _SUPERCLASSES, _TYPE, _VALUE) = treewalk.field_ids(
    _GRAMMAR, "alias", "arguments", "attribute", "body", "definition", "function", "left", "module_name", "name",
    "object", "parameters", "right", "superclasses", "type", "value")


@lru_cache(maxsize=1)
def _language() -> tuple[tree_sitter.Language, treewalk.Find, treewalk.Find]:
    """The grammar, the finder of everything the graph reads, and that finder without the calls."""
    return _GRAMMAR, treewalk.finder(_GRAMMAR, _QUERY + _CALLS), treewalk.finder(_GRAMMAR, _QUERY)


def new_parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(_language()[0])


def module_name(path: str) -> str:
    """`src/pkg/sub/mod.py` → `pkg.sub.mod`; `pkg/__init__.py` → `pkg`."""
    parts = path.rsplit(".", 1)[0].split("/")
    if "src" in parts[:-1]:
        parts = parts[len(parts) - 1 - parts[::-1].index("src", 1) + 1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


_Class = ClassInfo
_Context = Context


# a target whose class is read after the sweep: its name (or, for `self.x = …`, "" and the attribute
# `self.x`), its annotation, its value, and its context
_Typed = tuple[str, "tree_sitter.Node | None", "tree_sitter.Node | None", "tree_sitter.Node | None", Context]


@dataclass(slots=True)
class _File(scopes.FileSweep):
    package: str = ""  # the package relative imports start from
    typed: list[_Typed] = field(default_factory=list)
    held: scopes.Held = field(default_factory=dict)
    decorated: tuple[int, list[str]] = (-1, [])  # the start of the last decorated definition, its decorators
    aliases: Aliases | None = None

    def rooted(self, dotted: str) -> str:
        """An absolute import's module as the graph names it: `app.core` in a project under backend/ is
        `backend.app.core` (module names come from paths; Python's from the project's directory)."""
        if not self.aliases:
            return dotted
        top, dot, rest = dotted.partition(".")
        found = self.aliases.python_module(self.rows.path, top)
        return f"{found}{dot}{rest}" if found else dotted


def tree_rows(path: str, source: bytes, tree: tree_sitter.Tree, digest: str = "",
              aliases: Aliases | None = None, *, relations: bool = True) -> FileRows:
    """The table rows of a parsed Python file; `digest` is its content hash when the caller has it;
    `aliases` say what top-level names the checkout's projects below its root hold. Without `relations`,
    the definitions alone (the same rows), as history reads every version of a file: calls are most of
    the captures and of the work."""
    module = module_name(path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    file = _File(Rows(path, source, "python"), module, package=package, aliases=aliases)
    root = tree.root_node
    file.rows.module(module, module.rsplit(".", 1)[-1], root, _docstring(file.rows, root))
    calls: scopes.Later = []
    _, everything, definitions = _language()
    top = Scope()
    sweep(everything if relations else definitions, root, file, _Context(top, module, module), _HANDLERS, calls)
    if relations:
        _resolve(file, calls)
        scopes.record_instances(file.rows, top, lambda name: f"{module}.{name}")
    return file.rows.done(tree, digest)


def _docstring(rows: Rows, body: tree_sitter.Node | None) -> str:
    if body is None or not body.named_child_count:
        return ""
    first = body.named_child(0)  # one child, not a list of the whole body
    if first.type == "expression_statement" and first.named_child_count:
        string = first.named_child(0)
        if string.type == "string":
            return rows.text(string)
    return ""


def _decorated(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """A decorated definition: its decorators, for the definition (captured next) to take."""
    definition = node.child_by_field_id(_DEFINITION)
    if definition is not None:
        file.decorated = (definition.start_byte, [file.rows.text(d).lstrip("@").split("(", 1)[0].strip()
                                                  for d in node.named_children if d.type == "decorator"])


def _decorators(file: _File, node: tree_sitter.Node) -> list[str]:
    """The decorators of a class or function definition (no node's parent is looked up: that walks down
    from the root)."""
    start, decorators = file.decorated
    return decorators if start == node.start_byte else []


def _signature(rows: Rows, node: tree_sitter.Node, body: tree_sitter.Node | None, decorators: list[str]) -> str:
    text = head(rows.source, node, body)
    return " ".join([*(f"@{d}" for d in decorators), text])


def _class(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    rows = file.rows
    name = rows.text(node.child_by_field_id(_NAME))
    if not name:
        return None
    fqn = f"{ctx.prefix}.{name}"
    body = node.child_by_field_id(_BODY)
    decorators = _decorators(file, node)
    rows.symbol("class", fqn, name, node, signature=_signature(rows, node, body, decorators),
                docblock=_docstring(rows, body), attributes=tuple(decorators))
    ctx.scope.bind(name, Binding("class", fqn))
    info = _Class(fqn)
    file.classes[fqn] = info
    bases = node.child_by_field_id(_SUPERCLASSES)
    if bases is not None:
        file.bases.append((bases, info, ctx))
    body_scope = Scope(outer=ctx.scope.outer if ctx.in_body else ctx.scope)  # class bodies nest no scope
    return _Context(body_scope, fqn, fqn, info, in_body=True)


def _function(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    rows = file.rows
    name = rows.text(node.child_by_field_id(_NAME))
    parameters = node.child_by_field_id(_PARAMETERS)  # read here: no capture of their own
    if not name:
        if parameters is not None:
            _parameters(file, parameters, ctx)
        return None
    decorators = _decorators(file, node)
    method = ctx.cls is not None and ctx.in_body
    if method:
        assert ctx.cls is not None
        fqn, parent, outer = f"{ctx.cls.fqn}::{name}", ctx.cls.fqn, ctx.scope.outer
    else:
        fqn, parent, outer = f"{ctx.prefix}.{name}", "", ctx.scope
        ctx.scope.bind(name, Binding("function", fqn))
    body = node.child_by_field_id(_BODY)
    rows.symbol("method" if method else "function", fqn, name, node, parent, _signature(rows, node, body, decorators),
                _docstring(rows, body), tuple(decorators))
    scope = Scope(outer=outer)
    if method and ctx.cls is not None and "staticmethod" not in decorators:
        receiver = _first_parameter(rows, parameters)
        if receiver:
            classwide = "classmethod" in decorators or name in ("__new__", "__init_subclass__")
            scope.names[receiver] = Binding("class" if classwide else "instance", ctx.cls.fqn)
    inner = _Context(scope, fqn.replace("::", "."), fqn, ctx.cls)
    if parameters is not None:
        _parameters(file, parameters, inner)
    return inner


def _first_parameter(rows: Rows, parameters: tree_sitter.Node | None) -> str:
    if parameters is None or not parameters.named_child_count:
        return ""
    first = parameters.named_child(0)
    if first.type == "identifier":
        return rows.text(first)
    if first.type in ("typed_parameter", "default_parameter", "typed_default_parameter"):
        name = first.child_by_field_id(_NAME) or (first.named_child(0) if first.named_child_count else None)
        return rows.text(name) if name is not None and name.type == "identifier" else ""
    return ""


def _parameters(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """A function's parameters are its locals; one typed with a class holds an instance of it (resolved
    with the calls)."""
    for parameter in node.named_children:
        kind = parameter.type
        if kind == "identifier":
            name_node: tree_sitter.Node | None = parameter
        elif kind in ("list_splat_pattern", "dictionary_splat_pattern"):
            name_node = parameter.named_children[0] if parameter.named_children else None
        else:
            name_node = parameter.child_by_field_id(_NAME) or (
                parameter.named_children[0] if parameter.named_children else None)
        if name_node is None or name_node.type != "identifier":
            continue
        name = file.rows.text(name_node)
        if name not in ctx.scope.names:  # the receiver (`self`) is bound already
            ctx.scope.bind(name, LOCAL)
            if kind in ("typed_parameter", "typed_default_parameter"):
                file.typed.append((name, None, parameter.child_by_field_id(_TYPE), None, ctx))


def _targets(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """`for x in`, `with … as x`, `except … as x`, `(x := …)`: locals of unknown type."""
    for name in _identifiers(node):
        ctx.scope.bind(file.rows.text(name), LOCAL)


_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target", "list_splat_pattern",
                       "parenthesized_expression", "expression_list", "tuple", "list"})


def _identifiers(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The names a target binds, in source order (`a, (b, [c]) = ...`); a loop, not recursion: a
    generated target can nest deeper than Python's stack."""
    found = []
    pending = [node]
    while pending:
        node = pending.pop()
        if node.type == "identifier":
            found.append(node)
        elif node.type in _PATTERNS:
            pending.extend(reversed(node.named_children))
    return found


def _assignment(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    left = node.child_by_field_id(_LEFT)
    if left is None:
        return
    kind = left.type
    if kind == "identifier":
        name = file.rows.text(left)
        ctx.scope.bind(name, LOCAL)
        annotation = node.child_by_field_id(_TYPE)
        right = node.child_by_field_id(_RIGHT)
        if annotation is None and right is not None and right.type != "call" and not ctx.in_body:
            scopes.hold(file.held, ctx.scope, name, "")  # no class the file could tell
        elif annotation is not None or right is not None:  # the value's class is known after the sweep
            file.typed.append((name, None, annotation, right, ctx))
    elif kind == "attribute":
        if ctx.cls is not None:
            file.typed.append(("", left, node.child_by_field_id(_TYPE), node.child_by_field_id(_RIGHT), ctx))
    else:
        for name_node in _identifiers(left):
            ctx.scope.bind(file.rows.text(name_node), LOCAL)


def _import(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """`import a.b.c` binds `a`; `import a.b as x` binds `x` to `a.b`."""
    rows = file.rows
    line = node.start_point[0] + 1
    for clause in node.named_children:
        if clause.type == "aliased_import":
            target = file.rooted(_dotted(rows, clause.child_by_field_id(_NAME)))
            alias = rows.text(clause.child_by_field_id(_ALIAS))
            ctx.scope.bind(alias, Binding("module", target))
            rows.relate("imports", _binds(file, ctx, alias), target.rsplit(".", 1)[-1], target, line)
        elif clause.type == "dotted_name":
            first = _dotted(rows, clause).split(".", 1)[0]
            target = file.rooted(_dotted(rows, clause))
            ctx.scope.bind(first, Binding("module", file.rooted(first)))
            rows.relate("imports", "", target.rsplit(".", 1)[-1], target, line)


def _import_from(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """`from m import a, b as c` binds `a` and `c` to names of `m` (relative `m` resolved here)."""
    rows = file.rows
    module_node = node.child_by_field_id(_MODULE_NAME)
    if module_node is None:
        return
    base = _absolute(file, module_node)
    line = node.start_point[0] + 1
    for clause in node.named_children:
        if clause == module_node:
            continue
        if clause.type == "wildcard_import":  # at module level, every name of `base` under this module's
            star = _binds(file, ctx, STAR)
            rows.relate("imports", star, base.rsplit(".", 1)[-1], f"{base}.{STAR}" if star else base, line)
            continue
        if clause.type == "aliased_import":
            name = _dotted(rows, clause.child_by_field_id(_NAME))
            local = rows.text(clause.child_by_field_id(_ALIAS))
        elif clause.type == "dotted_name":
            name = local = _dotted(rows, clause)
        else:
            continue
        target = f"{base}.{name}" if base else name
        ctx.scope.bind(local, Binding("name", target))
        rows.relate("imports", _binds(file, ctx, local), name, target, line)


def _binds(file: _File, ctx: _Context, local: str) -> str:
    """The name an import binds in the module (what another module may import it as), or "" when the
    import is local to a function or class."""
    return f"{file.module}.{local}" if ctx.source == file.module else ""


def _dotted(rows: Rows, node: tree_sitter.Node | None) -> str:
    return "".join(rows.text(node).split()) if node is not None else ""


def _absolute(file: _File, node: tree_sitter.Node) -> str:
    """The absolute module a `from` import names: `..x` from `pkg.sub.mod` is `pkg.x`."""
    if node.type != "relative_import":
        return file.rooted(_dotted(file.rows, node))
    prefix = next((c for c in node.children if c.type == "import_prefix"), None)
    dots = len(file.rows.text(prefix)) if prefix is not None else 0
    parts = file.package.split(".") if file.package else []
    base = parts[:len(parts) - (dots - 1)] if dots > 1 else parts
    rest = next((c for c in node.named_children if c.type == "dotted_name"), None)
    return ".".join([*base, *([_dotted(file.rows, rest)] if rest is not None else [])])


# the calls (`call.*` captures) are left to after the sweep
_HANDLERS: dict[str, scopes.Handler[_File]] = {
    "decorated": _decorated, "class": _class, "function": _function, "import": _import, "import_from": _import_from,
    "assign": _assignment, "target": _targets,
}


# --- after the sweep: bases, the classes of variables and attributes, then calls -----------------------


def _resolve(file: _File, calls: scopes.Later) -> None:
    rows = file.rows
    for bases, info, ctx in file.bases:
        for base in bases.named_children:
            if base.type == "keyword_argument":
                continue
            expression = base.child_by_field_id(_VALUE) if base.type == "subscript" else base
            found = _value(file, expression, ctx) if expression is not None else None
            if found is not None and found.kind in ("class", "name") and found.fqn:
                info.bases.append(found.fqn)
                rows.relate("extends", info.fqn, found.fqn.rsplit(".", 1)[-1], found.fqn, base.start_point[0] + 1)
    for name, left, annotation, right, ctx in file.typed:
        _typed(file, name, left, annotation, right, ctx)
    scopes.settle(file.held)
    _call_rows(file, calls)
    _field_methods(file)


def _field_methods(file: _File) -> None:
    """The methods a framework calls for a field the class declares, as `references` rows at the field:
    graphene's resolver of `total = graphene.Int()` is `resolve_total`; Django REST framework's
    `SerializerMethodField()` calls `get_<field>` (or its `method_name`); a `method="filter_x"` argument
    (django-filter's filters, graphene's fields) names the method. Only a method the class itself
    defines counts: `name = "cart"` beside `get_name()` is no field of a framework's."""
    rows = file.rows
    methods: set[str] | None = None
    for name, _, _, right, ctx in file.typed:
        if not name or not ctx.in_body or ctx.cls is None or right is None or right.type != "call":
            continue
        wanted = [f"resolve_{name}"]
        named = _named_method(rows, right.child_by_field_id(_ARGUMENTS))
        if named:
            wanted.append(named)
        elif rows.text(right.child_by_field_id(_FUNCTION)).endswith("SerializerMethodField"):
            wanted.append(f"get_{name}")
        if methods is None:
            methods = {row[2] for row in rows.symbols if row[1] == "method"}
        for method in wanted:
            if f"{ctx.cls.fqn}::{method}" in methods:
                rows.relate("references", ctx.cls.fqn, method, f"{ctx.cls.fqn}::{method}", right.start_point[0] + 1)


def _named_method(rows: Rows, arguments: tree_sitter.Node | None) -> str:
    """The string a call's `method=` or `method_name=` argument gives, else ""."""
    for argument in arguments.named_children if arguments is not None else ():
        if argument.type == "keyword_argument" and \
                rows.text(argument.child_by_field_id(_NAME)) in ("method", "method_name"):
            value = rows.text(argument.child_by_field_id(_VALUE))
            if value[:1] in ("'", '"') and value[1:-1].isidentifier():
                return value[1:-1]
    return ""


def _typed(file: _File, name: str, left: tree_sitter.Node | None, annotation: tree_sitter.Node | None,
           right: tree_sitter.Node | None, ctx: _Context) -> None:
    """The class a variable or `self.` attribute holds: from its annotation or `= Class(...)`."""
    found = _annotated(file, annotation, ctx) if annotation is not None else ""
    if not found and right is not None and right.type == "call":
        value = _value(file, right, ctx)
        found = value.fqn if value is not None and value.kind == "instance" else ""
    if name:
        if ctx.cls is not None and ctx.in_body:
            ctx.cls.attributes.setdefault(name, found)  # a class-level annotation (dataclass fields)
        scopes.hold(file.held, ctx.scope, name, found)
    elif left is not None and ctx.cls is not None:
        owner = left.child_by_field_id(_OBJECT)
        receiver = ctx.scope.lookup(file.rows.text(owner)) if owner is not None and owner.type == "identifier" else None
        if receiver is not None and receiver.kind == "instance" and receiver.fqn == ctx.cls.fqn:
            ctx.cls.hold(file.rows.text(left.child_by_field_id(_ATTRIBUTE)), found)


def _annotated(file: _File, annotation: tree_sitter.Node, ctx: _Context, depth: int = 0) -> str:
    """The class an annotation names (`Foo`, `mod.Foo`, `Optional[Foo]`, `Foo | None`), else ""."""
    if depth > scopes.NESTING_LIMIT:
        return ""
    node = annotation.named_children[0] if annotation.type == "type" and annotation.named_children else annotation
    if node.type == "string" or node.type == "none":
        return ""
    if node.type == "binary_operator":  # `Foo | None`
        sides = [n for n in (node.child_by_field_id(_LEFT), node.child_by_field_id(_RIGHT)) if n is not None]
        named = [s for s in sides if s.type != "none"]
        return _annotated(file, named[0], ctx, depth + 1) if len(named) == 1 else ""
    if node.type in ("generic_type", "subscript"):
        head = node.named_children[0] if node.named_children else None
        if head is not None and file.rows.text(head).rsplit(".", 1)[-1] == "Optional":
            inner = [n for n in node.named_children[1:] if n.type in ("type_parameter", "type", "identifier")]
            arguments = inner[0].named_children if inner and inner[0].type == "type_parameter" else inner
            return _annotated(file, arguments[0], ctx, depth + 1) if len(arguments) == 1 else ""
        return ""
    found = _value(file, node, ctx)
    if found is not None and found.kind in ("class", "name") and looks_like_class(found.fqn.rsplit(".", 1)[-1]):
        return found.fqn
    return ""


def _value(file: _File, node: tree_sitter.Node, ctx: _Context, depth: int = 0) -> Binding | None:
    """What an expression is, as far as the file tells (None: unknown, also past `scopes.NESTING_LIMIT`)."""
    if depth > scopes.NESTING_LIMIT:
        return None
    kind = node.type
    rows = file.rows
    if kind == "identifier":
        return _named(file, rows.text(node), ctx)
    if kind == "attribute":
        owner = node.child_by_field_id(_OBJECT)
        name = rows.text(node.child_by_field_id(_ATTRIBUTE))
        value = _value(file, owner, ctx, depth + 1) if owner is not None else None
        if value is None or not name:
            return None
        if value.kind in ("module", "name"):
            return Binding("name", f"{value.fqn}.{name}")
        if value.kind == "class":
            return Binding("name", f"{value.fqn}.{name}") if looks_like_class(name) else None
        return file.attribute(value.fqn, name) if value.kind == "instance" else None
    if kind == "call":
        callee = node.child_by_field_id(_FUNCTION)
        if callee is None:
            return None
        if callee.type == "identifier" and rows.text(callee) == "super":
            bases = ctx.cls.bases if ctx.cls is not None else []
            return Binding("instance", bases[0]) if bases else None
        value = _value(file, callee, ctx, depth + 1)
        if value is not None and (value.kind == "class" or value.kind == "name"
                                  and looks_like_class(value.fqn.rsplit(".", 1)[-1])):
            return Binding("instance", value.fqn)
        return None
    if kind == "parenthesized_expression" and node.named_children:
        return _value(file, node.named_children[0], ctx, depth + 1)
    return None


def _named(file: _File, name: str, ctx: _Context) -> Binding | None:
    """What the identifier `name` is where `ctx` reads it (None: unknown)."""
    found = ctx.scope.lookup(name)
    if found is None:
        return _BUILTIN_BINDINGS.get(name)
    return None if found.kind == "local" else found


def _call_rows(file: _File, calls: scopes.Later) -> None:
    """The call rows, in the order of the calls, each captured as its callee: `f()` as `f` (`call.name`),
    `x.f()` as `x.f` (`call.member`). A row of a name already called from the same context, the same way,
    is the one made then on another line (for a member, when its owner is a plain dotted name: `self.x.f()`)."""
    rows = file.rows
    text = rows.text
    ascii_text = rows.ascii
    relations = rows.relations
    path = rows.path
    made: dict[tuple[Context, str, str], tuple[str, str, str, str, str, str]] = {}
    references = scopes.References(rows, "self", lambda name, ctx: _referenced(_named(file, name, ctx)),
                                   lambda owner, name, ctx: _module_member(_named(file, owner, ctx), name))
    handed: frozenset[str] = frozenset()
    for capture, node, ctx in calls:
        if capture == "call.name":  # the most frequent capture of all: its text is sliced here
            name = ascii_text[node.start_byte:node.end_byte] if ascii_text is not None else text(node)
            row = made.get((ctx, "", name))
            if row is None:
                target, fallback = _named_target(_named(file, name, ctx))
                row = made[(ctx, "", name)] = (path, "calls", ctx.source, name, target, fallback)
            relations.append(row + (node.start_point[0] + 1,))
            continue
        if capture == "ref.name":  # `map(fmt, xs)`, `Thread(target=run)`: most are locals, skipped here
            name = ascii_text[node.start_byte:node.end_byte] if ascii_text is not None else text(node)
            handed = handed or references.names(ctx)
            if name in handed:
                references.name(name, node, ctx)
            continue
        if capture == "ref.member":  # `bus.subscribe(self.on_saved)`, `path("", views.index)`
            references.read(capture, node, ctx)
            continue
        name_node = node.child_by_field_id(_ATTRIBUTE)
        owner = node.child_by_field_id(_OBJECT)
        if name_node is None or owner is None:
            continue
        name = text(name_node)
        key = (ctx, scopes.owner_text(text, owner), name)
        row = made.get(key)
        if row is None:
            target, fallback = _member_target(_value(file, owner, ctx), name)
            row = (path, "calls", ctx.source, name, target, fallback)
            if scopes.plain(key[1]):
                made[key] = row
        relations.append(row + (name_node.start_point[0] + 1,))


def _referenced(value: Binding | None) -> str:
    """The function a name handed over as a value is: one this module defines, or an imported name that
    is not a class's (`isinstance(x, Cart)` uses the class, it makes none); "" for anything else."""
    if value is None:
        return ""
    if value.kind == "function":
        return value.fqn
    if value.kind == "name" and not value.fqn.startswith("builtins.") \
            and not looks_like_class(value.fqn.rsplit(".", 1)[-1]):
        return value.fqn
    return ""


def _module_member(owner: Binding | None, name: str) -> str:
    """`views.index` handed over: a function of an imported module (`from app import views`; an imported
    name of unknown kind that is not a class's), else ""."""
    if owner is None or owner.kind not in ("module", "name") or looks_like_class(owner.fqn.rsplit(".", 1)[-1]):
        return ""
    return f"{owner.fqn}.{name}" if name[:1].islower() else ""


def _named_target(value: Binding | None) -> tuple[str, str]:
    """`f()` / `Foo()`: a function, or a class's constructor; an imported name could be either."""
    if value is None:
        return "", ""
    if value.kind == "class":
        return f"{value.fqn}::{CONSTRUCTOR}", ""
    if value.kind == "function":
        return value.fqn, ""
    if value.kind == "name":
        constructor = f"{value.fqn}::{CONSTRUCTOR}"
        # classes named in lower case (`exp(x)` builds sympy's class exp) keep the constructor as fallback
        return (constructor, value.fqn) if looks_like_class(value.fqn.rsplit(".", 1)[-1]) else (value.fqn, constructor)
    return "", ""


# A task queue's way of calling a function it registered: Celery's `send_email.delay(to)` and
# `.apply_async(...)`, Dramatiq's `.send(...)` and `.send_with_options(...)` run the function later, in a
# worker: a call of it (a plain function has none of these members)
_QUEUED = frozenset({"delay", "apply_async", "send", "send_with_options"})


def _member_target(owner: Binding | None, name: str) -> tuple[str, str]:
    """`x.name()`: a method of x's class, a function or class of module x, a task function queued, or (an
    imported x of unknown kind) whichever its spelling suggests, the other reading as the fallback."""
    if owner is None:
        return "", ""
    if name in _QUEUED and (owner.kind == "function" or owner.kind == "name"
                            and not looks_like_class(owner.fqn.rsplit(".", 1)[-1])):
        return owner.fqn, ""
    if owner.kind in ("instance", "class"):
        return f"{owner.fqn}::{name}", ""
    if owner.kind not in ("module", "name"):
        return "", ""
    dotted = f"{owner.fqn}.{name}"
    if looks_like_class(name):
        return f"{dotted}::{CONSTRUCTOR}", dotted
    if owner.kind == "name" and looks_like_class(owner.fqn.rsplit(".", 1)[-1]):
        return f"{owner.fqn}::{name}", dotted
    return dotted, ""
