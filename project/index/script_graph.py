"""tree-sitter-typescript / tree-sitter-javascript → code-graph rows for .ts .tsx .js .jsx .mjs .cjs.

Names: a module is its path without the extension, an `index` file named by its directory
(`src/util/index.ts` is `src/util`, as `import "./util"` names it); a definition is `module:name`
(`src/util:formatDate`), a member `module:Class::name` (`src/api/client:Client::get`), something
defined inside a function or namespace `module:outer.inner`. Kinds: module, class, interface, type
(alias), enum and enum_case, function (declarations, overloads, and arrow functions or function
expressions bound to a name, also through React's `forwardRef`/`memo`), method (methods, accessors,
constructors, interface methods, class fields holding a function), namespace; in JavaScript, functions
assigned at the top of the module to `exports.f`, `X.prototype.m` or `x.m` (`_assigned`). A definition
starts at its first token after any decorators.

Relations: `imports` for ES imports, re-exports and `require` (each binding name recorded as the
name it binds in this module, so a re-export chain can be followed to the definition), `extends`
and `implements`, and `calls` resolved where the file tells: functions and classes of the module,
imported names, `this.`/`super.` methods, `new`, typed parameters and fields, variables assigned
`new X`, and JSX elements naming a component (`<Button/>` renders Button). `X.y()` on an imported `X`
is read as a static method when `X` is CapWords, with the other reading as the fallback (see `scopes`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import TYPE_CHECKING

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript

from project.index import scopes, sfc, treewalk
from project.index.model import STAR
from project.index.parse import FileRows
from project.index.scopes import LOCAL, Binding, ClassInfo, Context, Rows, Scope, head, looks_like_class, sweep

if TYPE_CHECKING:
    from project.index.aliases import Aliases

_PATTERNS = {
    "class": ("class_declaration", "abstract_class_declaration"),
    "class_expression": ("class",),
    "interface": ("interface_declaration",),
    "type": ("type_alias_declaration",),
    "enum": ("enum_declaration",),
    "function": ("function_declaration", "generator_function_declaration", "function_signature"),
    "method": ("method_definition", "method_signature", "abstract_method_signature"),
    "field": ("public_field_definition", "field_definition"),
    "variable": ("variable_declarator",),
    "namespace": ("internal_module", "module"),
    "import": ("import_statement",),
    "export": ("export_statement",),
    "params": ("formal_parameters",),
    "assign": ("assignment_expression",),
}
# a call is captured by its callee, so that C finds it (see `_call_rows`); a function handed over by its
# name (`references`): as an argument, a value of an object or an array (`{ icon: Flag }`, `{ Globe }`,
# `[Heart]`), a branch of a conditional, what a function returns; and so is a component's event handler
# named alone (Vue's `@click="save"` and Svelte's `onclick={save}`, which `sfc.readable` makes the
# statement `;(save)`)
_CALLS = """
(call_expression function: [(identifier) @call.name (super) @call.super (member_expression) @call.member])
(new_expression constructor: [(identifier) @new.name (member_expression) @new.member])
(arguments [(identifier) @ref.name (member_expression) @ref.member])
(expression_statement (parenthesized_expression . [(identifier) @ref.name (member_expression) @ref.member] .))
(pair value: [(identifier) @ref.name (member_expression) @ref.member])
(object (shorthand_property_identifier) @ref.name)
(array [(identifier) @ref.name (member_expression) @ref.member])
(ternary_expression consequence: (identifier) @ref.name)
(ternary_expression alternative: (identifier) @ref.name)
(return_statement (identifier) @ref.name)
"""
# a JSX element is a use of the component its tag names (`<Button …>` renders Button): read as a call of
# it when the tag is a component's (CapWords or dotted), not an element of the page (`<div>`)
_JSX = """
(jsx_opening_element name: [(identifier) @jsx.name (member_expression) @call.member])
(jsx_self_closing_element name: [(identifier) @jsx.name (member_expression) @call.member])
(jsx_attribute (jsx_expression [(identifier) @ref.name (member_expression) @ref.member]))
"""
CONSTRUCTOR = "constructor"
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
# what a function value may be wrapped in and still be the value bound: `((...a) => {…}) as Render`,
# `(() => {…}) satisfies Handler`, `fn!` (vuejs/core's createApp and render are bound so)
_WRAPPERS = frozenset({"as_expression", "satisfies_expression", "parenthesized_expression", "non_null_expression"})
_EXTENSIONS = (".d.ts", ".d.mts", ".d.cts", ".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
# the values `_value` may find an instance in; a variable assigned another holds no class the file tells
_INSTANCE_VALUES = frozenset({"this", "super", "member_expression", "nested_identifier", "nested_type_identifier",
                              "new_expression", "parenthesized_expression", "non_null_expression", "as_expression",
                              "satisfies_expression", "await_expression"})
_CLASS_KINDS = frozenset({"class", "interface", "enum"})


@lru_cache(maxsize=4)
def _language(dialect: str) -> tuple[tree_sitter.Language, treewalk.Find, treewalk.Find]:
    """The grammar, the finder of everything the graph reads, and that finder without the calls."""
    language = _grammar(dialect)
    everything, definitions = query_sources(dialect)
    return language, treewalk.finder(language, everything), treewalk.finder(language, definitions)


def _grammar(dialect: str) -> tree_sitter.Language:
    grammar = {"typescript": tree_sitter_typescript.language_typescript, "tsx": tree_sitter_typescript.language_tsx,
               "javascript": tree_sitter_javascript.language, "vue": tree_sitter_typescript.language_typescript,
               "svelte": tree_sitter_typescript.language_typescript}[dialect]
    return tree_sitter.Language(grammar())


@dataclass(frozen=True, slots=True)
class _Fields:
    """The ids of the fields the extractor reads in one dialect's grammar (`treewalk.field_ids`): the three
    grammars number them apart. `module` and `type` are none of JavaScript's: 0 there, which no child has."""

    alias: int
    arguments: int
    body: int
    constructor: int
    declaration: int
    function: int
    key: int
    left: int
    module: int
    name: int
    object: int
    pattern: int
    property: int
    right: int
    source: int
    type: int
    value: int


@lru_cache(maxsize=8)
def _fields(dialect: str) -> _Fields:
    names = [f.name for f in fields(_Fields)]
    return _Fields(*treewalk.field_ids(_grammar(dialect), *names, optional=("module", "type")))


def query_sources(dialect: str) -> tuple[str, str]:
    """The query of everything the graph reads of a dialect's files, and that query without the calls."""
    language = _grammar(dialect)
    patterns = "\n".join(f"({kind}) @{name}" for name, kinds in _PATTERNS.items() for kind in kinds
                         if language.id_for_node_kind(kind, True))
    if dialect == "javascript":  # a function in the object a prototype is assigned (`_prototype`)
        values = " ".join(f"({kind})" for kind in sorted(_FUNCTION_VALUES) if language.id_for_node_kind(kind, True))
        patterns += f"\n(pair value: [{values}]) @pair"
    calls = f"{_CALLS}\n{_JSX}" if language.id_for_node_kind("jsx_opening_element", True) else _CALLS
    return f"{patterns}\n{calls}", patterns


def parser_of(dialect: str) -> Callable[[], tree_sitter.Parser]:
    return lambda: tree_sitter.Parser(_language(dialect)[0])


def module_name(path: str) -> str:
    """`src/util/index.ts` → `src/util`; `src/a.service.ts` → `src/a.service`."""
    stem = path
    for extension in _EXTENSIONS:
        if stem.endswith(extension):
            stem = stem[:-len(extension)]
            break
    if stem.endswith("/index"):
        stem = stem[:-len("/index")]
    return stem


def resolve_specifier(path: str, specifier: str, aliases: Aliases | None = None) -> str:
    """The module an import names: relative ones as a path of the repository, one the checkout's
    configuration maps to its own files as that module (`aliases`), others as written."""
    if not specifier.startswith("."):
        return (aliases.resolve(path, specifier) if aliases else "") or specifier
    return _resolved(posixpath.dirname(path), specifier)


@lru_cache(maxsize=4096)
def _resolved(directory: str, specifier: str) -> str:
    """A relative specifier from `directory` (the files of a directory import the same modules)."""
    joined = _normjoin(directory, specifier) if not directory.startswith("/") \
        else posixpath.normpath(posixpath.join(directory, specifier))
    if joined in (".", "index"):  # the checkout's root directory: its `index.js` is the module `index`
        return "index"
    return module_name(joined) if joined.endswith(_EXTENSIONS) or joined.endswith("/index") else joined


def _normjoin(directory: str, specifier: str) -> str:
    """`posixpath.normpath(posixpath.join(directory, specifier))` for a relative directory and a specifier
    starting with ".", without normpath's generality (it is most of an import's cost)."""
    parts: list[str] = []
    for part in f"{directory}/{specifier}".split("/"):
        if part == "" or part == ".":
            continue
        if part != ".." or not parts or parts[-1] == "..":
            parts.append(part)
        else:
            parts.pop()
    return "/".join(parts) or "."


_Class = ClassInfo
_Context = Context


@dataclass(slots=True)
class _File(scopes.FileSweep):  # `bases` holds the heritage clauses (`extends`, `implements`)
    dialect: str = ""
    exports: list[tuple[tree_sitter.Node, _Context]] = field(default_factory=list)
    # what `_typed` reads after the sweep: kind, name, annotation, value, the node, its context
    typed: list[tuple[str, str, tree_sitter.Node | None, tree_sitter.Node | None, tree_sitter.Node, _Context]] = \
        field(default_factory=list)
    held: scopes.Held = field(default_factory=dict)
    named_class: tuple[int, str] = (-1, "")  # where the last `const X = class …` has its class, and X
    aliases: Aliases | None = None  # what the checkout's bare specifiers name (tsconfig `paths`, packages)
    prototypes: set[int] = field(default_factory=set)  # where each `X.prototype = {…}` object starts
    fields: _Fields = field(init=False)

    def __post_init__(self) -> None:
        self.fields = _fields(self.dialect)

    def resolve(self, specifier: str) -> str:
        return resolve_specifier(self.rows.path, specifier, self.aliases)

    def name(self, prefix: str, name: str) -> str:
        return f"{prefix}{name}" if prefix.endswith(":") else f"{prefix}.{name}"


def rows_of(dialect: str) -> Callable[..., FileRows]:
    def tree_rows(path: str, source: bytes, tree: tree_sitter.Tree, digest: str = "",
                  aliases: Aliases | None = None, *, relations: bool = True) -> FileRows:
        return _rows(dialect, path, source, tree, digest, aliases, relations)
    return tree_rows


def _rows(dialect: str, path: str, source: bytes, tree: tree_sitter.Tree, digest: str,
          aliases: Aliases | None, relations: bool) -> FileRows:
    """The file's rows; without `relations`, its definitions alone (the same rows, for history)."""
    module = module_name(path)
    file = _File(Rows(path, source, "javascript" if dialect == "javascript" else "typescript"), module,
                 dialect=dialect, aliases=aliases)
    root = tree.root_node
    file.rows.module(module, module.rsplit("/", 1)[-1], root)
    calls: scopes.Later = []
    _, everything, definitions = _language(dialect)
    top = Scope()
    sweep(everything if relations else definitions, root, file, _Context(top, f"{module}:", module), _HANDLERS, calls)
    if relations:
        _resolve(file, calls)
        scopes.record_instances(file.rows, top, lambda name: f"{module}:{name}")
    if dialect in sfc.MARKUP:  # a component: an error in a template expression is not the script's
        outside = sfc.in_template(source)
        return file.rows.done(tree, digest, lambda error: outside(error) or _grammar_gap(error))
    return file.rows.done(tree, digest, None if dialect == "javascript" else _grammar_gap)


# where a type is written: the graph reads no definition there, so an error one line long inside one costs
# at most that annotation (a receiver's type, for resolving calls through it)
_TYPE_NODES = frozenset({"type_annotation", "union_type", "intersection_type", "type_parameters", "type_parameter",
                         "type_arguments",
                         "array_type", "tuple_type", "generic_type", "function_type", "object_type",
                         "parenthesized_type", "conditional_type", "lookup_type", "index_type_query",
                         "type_predicate", "opting_type_annotation", "omitting_type_annotation"})


def _grammar_gap(error: tree_sitter.Node) -> bool:
    """An error node tree-sitter-typescript 0.23 makes of valid TypeScript whose rows are read right anyway:
    `export type * from "./x"` (TypeScript 5.0; the star re-export is read), and a one-line error inside a
    type: variance annotations (`interface P<in out T>`, 4.7; `<in T = never>` and `<out T extends X = Y>`
    put the error inside the type parameter: zod 4's core `schemas.ts`), `import('@babel/types').Statement[]`, a
    property named `in` after a union-typed one (elsewhere the grammar's recovery spills out of the type).
    Without this, typeorm's own `src/index.ts` was a file with syntax errors: left out of search, and
    "stale" in every answer."""
    parent = error.parent
    if parent is None or not error.is_error:
        return False
    if parent.type == "export_statement":
        return error.text == b"type" and parent.child_by_field_name("source") is not None
    return parent.type in _TYPE_NODES and error.start_point[0] == error.end_point[0]


def _start(node: tree_sitter.Node) -> tree_sitter.Node:
    """The declaration's first token after its decorators."""
    first = node.child(0) if node.child_count else None
    if first is not None and first.type != "decorator":
        return first  # most declarations: no list of all the children made
    return next((c for c in node.children if c.type != "decorator"), node)


def _doc(rows: Rows, node: tree_sitter.Node) -> tuple[str, tuple[str, ...]]:
    """The `/** */` comment right before the declaration (or before the `export` holding it), and the
    decorators a class member has before it (`@Get("/items")` is Get: tree-sitter makes a method's
    decorators its siblings, a class's its children, and an exported class's the export's:
    `@Controller("cats") export class CatsController`, NestJS's and Angular's way)."""
    parent = node.parent  # found by walking down from the root: looked up once
    at = parent if parent is not None and parent.type == "export_statement" else node
    previous = at.prev_named_sibling
    exported = () if at is node else tuple(_decorator(rows, c) for c in at.children[:16] if c.type == "decorator")
    if previous is not None and previous.type == "comment":
        text = rows.text(previous)
        return (text if text.startswith("/**") else ""), exported
    if at is not node:
        return "", exported
    marks: list[str] = []
    while previous is not None and previous.type == "decorator" and len(marks) < 16:
        marks.append(_decorator(rows, previous))
        previous = previous.prev_named_sibling
    return "", tuple(reversed(marks))


def _decorator(rows: Rows, node: tree_sitter.Node) -> str:
    return rows.text(node)[1:].split("(", 1)[0].strip()


def _define(file: _File, kind: str, name: str, node: tree_sitter.Node, ctx: _Context, parent: str = "",
            body: tree_sitter.Node | None = None, fqn: str = "", span: tree_sitter.Node | None = None) -> str:
    fqn = fqn or file.name(ctx.prefix, name)
    rows = file.rows
    first = _start(node)
    if body is not None or span is None:
        signature = head(rows.source, first, body)
    else:  # a declaration without a body (an overload, an abstract or interface method) ends in `;`
        signature = rows.source[first.start_byte:span.end_byte].decode("utf-8", "replace").rstrip("; ") + ";"
    # its decorators by name (`@Get("/items")` is Get), as Python's are: what registers it (a route, a
    # handler) and so what calls it when no line of the repository does
    doc, marks = _doc(rows, node)
    if first.start_byte != node.start_byte:  # a class's decorators: its first children
        marks = tuple(_decorator(rows, c) for c in node.children if c.type == "decorator")
    rows.symbol(kind, fqn, name, node, parent, " ".join(signature.split())[:400], doc, marks)
    if first is not node:  # the row starts at the first token after the decorators
        row = rows.symbols[-1]
        rows.symbols[-1] = (*row[:5], first.start_point[0] + 1, row[6], first.start_byte, *row[8:])
    return fqn


def _name(rows: Rows, node: tree_sitter.Node | None) -> str:
    if node is None:
        return ""
    if node.type == "string":
        return rows.text(node)[1:-1]
    if node.type in ("computed_property_name",):
        return ""
    return rows.text(node)


def _class(file: _File, node: tree_sitter.Node, ctx: _Context, name: str = "") -> _Context | None:
    name = name or _name(file.rows, node.child_by_field_id(file.fields.name))
    body = node.child_by_field_id(file.fields.body)
    if not name or body is None:
        return None
    fqn = _define(file, "class", name, node, ctx, body=body)
    if "Component" in file.rows.symbols[-1][11]:  # its decorators, by name
        _template(file, node, fqn, ctx)
    ctx.scope.bind(name, Binding("class", fqn))
    info = file.classes[fqn] = _Class(fqn)
    for child in node.named_children:
        if child.type == "class_heritage":
            file.bases.append((child, info, ctx))
    return _Context(Scope(outer=ctx.scope), fqn.replace("::", "."), fqn, info, in_body=True)


_COMPONENT = "@angular/core:Component"


def _template(file: _File, node: tree_sitter.Node, fqn: str, ctx: _Context) -> None:
    """An Angular component's `templateUrl` (`@Component({templateUrl: './cart.html'})`): the row `template`
    from the class to the template's path, from which `templates` reads the members the template uses.
    A path out of the checkout (`../` past its root, or absolute) gives no row."""
    rows = file.rows
    parent = node.parent
    holders = (node, parent) if parent is not None and parent.type == "export_statement" else (node,)
    for decorator in (c for holder in holders for c in holder.children if c.type == "decorator"):
        options = _component_options(file, decorator, ctx)
        for pair in options.named_children if options is not None else ():
            key, value = pair.child_by_field_id(file.fields.key), pair.child_by_field_id(file.fields.value)
            if pair.type != "pair" or key is None or value is None or value.type != "string" \
                    or rows.text(key).strip("'\"") != "templateUrl":
                continue
            url = rows.text(value)[1:-1]
            path = posixpath.normpath(posixpath.join(posixpath.dirname(rows.path), url))
            if url and not url.startswith("/") and path != ".." and not path.startswith("../"):
                rows.relate("template", fqn, posixpath.basename(path), path, value.start_point[0] + 1)


def _component_options(file: _File, decorator: tree_sitter.Node, ctx: _Context) -> tree_sitter.Node | None:
    """The object `@Component({...})` of `@angular/core` is given, else None."""
    call = decorator.named_children[0] if decorator.named_children else None
    options = _first_argument(file, call, ctx, _COMPONENT) if call is not None else None
    return options if options is not None and options.type == "object" else None


def _first_argument(file: _File, call: tree_sitter.Node, ctx: _Context, function: str) -> tree_sitter.Node | None:
    """The first argument of `call` when it calls `function` by a name bound to it (`inject(X)` of
    `@angular/core:inject`), else None."""
    if call.type != "call_expression":
        return None
    callee, arguments = call.child_by_field_id(file.fields.function), call.child_by_field_id(file.fields.arguments)
    if callee is None or callee.type != "identifier" or arguments is None or not arguments.named_children:
        return None
    bound = _named(file.rows.text(callee), ctx)
    return arguments.named_children[0] if bound is not None and bound.fqn == function else None


def _class_expression(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """`const Foo = class {…}` is the class Foo; a class expression bound to nothing is not indexed."""
    start, name = file.named_class  # the variable holding it, read just before (not its node's parent)
    if start != node.start_byte:
        return _Context(Scope(outer=ctx.scope), ctx.prefix, ctx.source)
    return _class(file, node, ctx, name)


def _interface(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    name = _name(file.rows, node.child_by_field_id(file.fields.name))
    body = node.child_by_field_id(file.fields.body)
    if not name:
        return None
    fqn = _define(file, "interface", name, node, ctx, body=body)
    ctx.scope.bind(name, Binding("class", fqn))
    info = file.classes.setdefault(fqn, _Class(fqn))
    for child in node.named_children:
        if child.type == "extends_type_clause":
            file.bases.append((child, info, ctx))
    return _Context(Scope(outer=ctx.scope), fqn, fqn, info, in_body=True)


def _type(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    name = _name(file.rows, node.child_by_field_id(file.fields.name))
    if name:
        _define(file, "type", name, node, ctx, body=node.child_by_field_id(file.fields.value))


def _enum(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    name = _name(file.rows, node.child_by_field_id(file.fields.name))
    body = node.child_by_field_id(file.fields.body)
    if not name:
        return
    fqn = _define(file, "enum", name, node, ctx, body=body)
    ctx.scope.bind(name, Binding("class", fqn))
    for member in body.named_children if body is not None else ():
        name_node = member.child_by_field_id(file.fields.name) if member.type == "enum_assignment" else member
        if member.type in ("enum_assignment", "property_identifier", "string") and name_node is not None:
            case = _name(file.rows, name_node)
            if case:
                file.rows.symbol("enum_case", f"{fqn}::{case}", case, member, fqn, file.rows.text(member))


def _function(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    name = _name(file.rows, node.child_by_field_id(file.fields.name))
    body = node.child_by_field_id(file.fields.body)
    if not name:
        return None
    fqn = _define(file, "function", name, node, ctx, body=body, span=node)
    ctx.scope.bind(name, Binding("function", fqn))
    return _body(fqn, ctx) if body is not None else None


def _body(fqn: str, ctx: _Context) -> _Context:
    return _Context(Scope(outer=ctx.scope), fqn.replace("::", "."), fqn, ctx.cls)


def _method(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    parent = node.parent
    body = node.child_by_field_id(file.fields.body)
    if parent is None or ctx.cls is None or not ctx.in_body or parent.type not in ("class_body", "interface_body") \
            and parent.start_byte not in file.prototypes:
        return _Context(Scope(outer=ctx.scope), ctx.prefix, ctx.source, ctx.cls) if body is not None else None
    name = _name(file.rows, node.child_by_field_id(file.fields.name))
    if not name:
        return _Context(Scope(outer=ctx.scope), ctx.prefix, ctx.source, ctx.cls) if body is not None else None
    fqn = _define(file, "method", name, node, ctx, ctx.cls.fqn, body, f"{ctx.cls.fqn}::{name}", span=node)
    return _body(fqn, _Context(ctx.scope.outer or ctx.scope, ctx.prefix, ctx.source, ctx.cls)) \
        if body is not None else None


def _pair(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """`cache: function (owner) {…}` in the object `Data.prototype = {…}` assigns: the method `Data::cache`."""
    if not ctx.in_body or ctx.cls is None:  # any other object's function (the usual case, asked first)
        return None
    parent = node.parent
    value = _unwrapped(node.child_by_field_id(file.fields.value))
    name = _name(file.rows, node.child_by_field_id(file.fields.key))
    if parent is None or parent.start_byte not in file.prototypes or value is None or not name:
        return None
    fqn = _define(file, "method", name, node, ctx, ctx.cls.fqn, value.child_by_field_id(file.fields.body),
                  f"{ctx.cls.fqn}::{name}")
    this = ctx.cls if value.type != "arrow_function" else None  # an arrow function's `this` is the module's
    return _body(fqn, _Context(ctx.scope.outer or ctx.scope, ctx.prefix, ctx.source, this))


def _unwrapped(value: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The value bound, out of the casts and parentheses around it (at most `scopes.NESTING_LIMIT`)."""
    for _ in range(scopes.NESTING_LIMIT):
        if value is None or value.type not in _WRAPPERS or not value.named_child_count:
            return value
        value = value.named_child(0)
    return value


def _field(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """A class field: a method when it holds a function, else an attribute whose class may be known."""
    name = _name(file.rows, node.child_by_field_id(file.fields.name) or node.child_by_field_id(file.fields.property))
    value = node.child_by_field_id(file.fields.value)
    if ctx.cls is None or not name:
        return None
    function = _unwrapped(value)
    if function is not None and function.type in _FUNCTION_VALUES:
        fqn = _define(file, "method", name, node, ctx, ctx.cls.fqn, function.child_by_field_id(file.fields.body),
                      f"{ctx.cls.fqn}::{name}")
        return _body(fqn, _Context(ctx.scope.outer or ctx.scope, ctx.prefix, ctx.source, ctx.cls))
    file.typed.append(("field", name, node.child_by_field_id(file.fields.type), value, node, ctx))
    return None


def _variable(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """`const f = () => …` defines the function f; other variables are locals (typed later)."""
    name_node = node.child_by_field_id(file.fields.name)
    value = node.child_by_field_id(file.fields.value)
    rows = file.rows
    if name_node is None:
        return None
    if name_node.type != "identifier":
        _pattern(file, name_node, value, ctx)
        return None
    name = rows.text(name_node)
    bound = _wrapped_component(rows, _unwrapped(value))
    if bound is not None and bound.type in _FUNCTION_VALUES:
        fqn = _define(file, "function", name, node, ctx, body=bound.child_by_field_id(file.fields.body))
        ctx.scope.bind(name, Binding("function", fqn))
        return _body(fqn, ctx)
    if value is not None and value.type == "class":
        file.named_class = (value.start_byte, name)  # the class expression, captured next, is named so
        return None
    specifier = _required(rows, value)
    if specifier is not None:
        target = file.resolve(specifier)
        ctx.scope.bind(name, Binding("module", target))
        rows.relate("imports", _binds(file, ctx, name), target.rsplit("/", 1)[-1], target, node.start_point[0] + 1)
        return None
    if bound is not None and bound.type == "identifier" and _constant(node):
        alias = _named(rows.text(bound), ctx)
        if alias is not None and alias.kind in ("function", "class", "name"):
            # `export const useData: typeof useData$<Config> = useData$` (vitepress's theme): another name of
            # the same function, followed to it as `export { useData$ as useData }` is
            ctx.scope.bind(name, alias)
            binds = _binds(file, ctx, name)
            if binds:
                rows.relate("imports", binds, _short(alias.fqn), alias.fqn, node.start_point[0] + 1)
            return None
    ctx.scope.bind(name, LOCAL)
    annotation = node.child_by_field_id(file.fields.type)
    if value is not None and value.type in _INSTANCE_VALUES or annotation is not None:
        file.typed.append(("local", name, annotation, value, node, ctx))  # its class is known after the sweep
    else:
        scopes.hold(file.held, ctx.scope, name, "")  # no class the file could tell
    return None


def _constant(declarator: tree_sitter.Node) -> bool:
    """Whether a variable is declared `const` (its value stays the one it is declared with)."""
    declaration = declarator.parent
    return declaration is not None and declaration.type == "lexical_declaration" and declaration.child_count > 0 \
        and declaration.children[0].type == "const"


# React's wrappers of a function component: what they return renders as the function they are given
_COMPONENT_WRAPPERS = frozenset({"forwardRef", "memo", "React.forwardRef", "React.memo"})


def _wrapped_component(rows: Rows, value: tree_sitter.Node | None) -> tree_sitter.Node | None:
    """The function component `forwardRef(…)`, `React.memo(…)` or `memo(forwardRef(…))` wraps (excalidraw's
    `export const Island = React.forwardRef<…>((props, ref) => …)`), else `value` itself: such a variable
    is the component, defined at its name like `const Button = (props) => …`."""
    for _ in range(3):
        if value is None or value.type != "call_expression":
            return value
        callee = value.child_by_field_name("function")
        arguments = value.child_by_field_name("arguments")
        if callee is None or arguments is None or rows.text(callee) not in _COMPONENT_WRAPPERS \
                or not arguments.named_children:
            return value
        value = _unwrapped(arguments.named_children[0])
    return value


def _required(rows: Rows, value: tree_sitter.Node | None) -> str | None:
    """The module of `require("…")`, else None."""
    if value is None or value.type != "call_expression":
        return None
    callee = value.child_by_field_name("function")
    arguments = value.child_by_field_name("arguments")
    if callee is None or rows.text(callee) != "require" or arguments is None or len(arguments.named_children) != 1:
        return None
    argument = arguments.named_children[0]
    return rows.text(argument)[1:-1] if argument.type == "string" else None


def _pattern(file: _File, pattern: tree_sitter.Node, value: tree_sitter.Node | None, ctx: _Context) -> None:
    """`const { a, b: c } = require("m")` binds names of m; any other destructuring binds locals."""
    rows, fields = file.rows, file.fields
    specifier = _required(rows, value)
    target = file.resolve(specifier) if specifier is not None else ""
    for child in pattern.named_children:
        if child.type == "shorthand_property_identifier_pattern":
            exported, local = rows.text(child), rows.text(child)
        elif child.type == "pair_pattern" and (child.child_by_field_id(fields.value) or child).type == "identifier":
            exported = rows.text(child.child_by_field_id(fields.key))
            local = rows.text(child.child_by_field_id(fields.value))
        else:
            for name in _identifiers(child):
                ctx.scope.bind(rows.text(name), LOCAL)
            continue
        if target:
            ctx.scope.bind(local, Binding("name", f"{target}:{exported}"))
            rows.relate("imports", _binds(file, ctx, local), exported, f"{target}:{exported}",
                        child.start_point[0] + 1)
        else:
            ctx.scope.bind(local, LOCAL)


def _identifiers(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The names a pattern binds, in source order; a loop, not recursion: a generated pattern can nest
    deeper than Python's stack."""
    found = []
    pending = [node]
    while pending:
        node = pending.pop()
        if node.type in ("identifier", "shorthand_property_identifier_pattern"):
            found.append(node)
        else:
            pending.extend(reversed(node.named_children))
    return found


def _namespace(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    name_node = node.child_by_field_id(file.fields.name)
    if name_node is None:
        return None
    if name_node.type == "string":  # `declare module "x" {…}`: its declarations describe another module
        return _Context(Scope(outer=ctx.scope), ctx.prefix, ctx.source)
    parts = file.rows.text(name_node).replace(" ", "").split(".")
    prefix = ctx.prefix
    for part in parts:
        fqn = file.name(prefix, part)
        file.rows.symbol("namespace", fqn, part, node, signature=f"namespace {part}")
        if prefix == ctx.prefix:
            ctx.scope.bind(part, Binding("name", fqn))
        prefix = fqn
    return _Context(Scope(outer=ctx.scope), prefix, prefix)


def _binds(file: _File, ctx: _Context, local: str) -> str:
    return f"{file.module}:{local}" if ctx.source == file.module else ""


def _import(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    rows = file.rows
    source = node.child_by_field_id(file.fields.source)
    line = node.start_point[0] + 1
    require = next((c for c in node.named_children if c.type == "import_require_clause"), None)
    if require is not None:  # `import x = require("m")`
        local = rows.text(require.named_children[0]) if require.named_children else ""
        source = require.child_by_field_id(file.fields.source) or next(
            (c for c in require.named_children if c.type == "string"), None)
        if local and source is not None:
            target = file.resolve(rows.text(source)[1:-1])
            ctx.scope.bind(local, Binding("module", target))
            rows.relate("imports", "", target.rsplit("/", 1)[-1], target, line)
        return
    if source is None:
        return
    target = file.resolve(rows.text(source)[1:-1])
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:  # `import "./polyfill"`
        rows.relate("imports", "", target.rsplit("/", 1)[-1], target, line)
        return
    for part in clause.named_children:
        if part.type == "identifier":  # the default import
            _bind_import(file, ctx, rows.text(part), "default", target, line)
        elif part.type == "namespace_import":
            local = rows.text(part.named_children[0]) if part.named_children else ""
            if local:
                ctx.scope.bind(local, Binding("module", target))
                rows.relate("imports", "", target.rsplit("/", 1)[-1], target, line)
        elif part.type == "named_imports":
            for specifier in part.named_children:
                if specifier.type != "import_specifier":
                    continue
                exported = _name(rows, specifier.child_by_field_id(file.fields.name))
                alias = specifier.child_by_field_id(file.fields.alias)
                _bind_import(file, ctx, _name(rows, alias) if alias is not None else exported, exported, target,
                             specifier.start_point[0] + 1)


def _bind_import(file: _File, ctx: _Context, local: str, exported: str, module: str, line: int) -> None:
    if not local or not exported:
        return
    ctx.scope.bind(local, Binding("name", f"{module}:{exported}"))
    file.rows.relate("imports", "", exported, f"{module}:{exported}", line)  # an ES import is not exported


def _export(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """Re-exports (`export { a as b } from "m"`, `export * from "m"`) and local aliases (`export { a as b }`,
    `export default x`), resolved after the sweep."""
    file.exports.append((node, ctx))


def _parameters(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """Parameters are locals; a typed one holds an instance; `private x: T` is also a field of the class."""
    fields = file.fields
    for parameter in node.named_children:
        pattern = parameter.child_by_field_id(fields.pattern) or (
            parameter if parameter.type == "identifier" else None)
        if pattern is None:
            continue
        for name in _identifiers(pattern):
            ctx.scope.bind(file.rows.text(name), LOCAL)
        annotation = parameter.child_by_field_id(fields.type) if pattern.type == "identifier" else None
        if annotation is not None:
            file.typed.append(("local", file.rows.text(pattern), annotation, parameter.child_by_field_id(fields.value),
                               parameter, ctx))


def _assign(file: _File, node: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """`this.x = new X()` gives the class field x the class X; in JavaScript, `module.exports = …` is the
    module's value (`_module_value`) and a function assigned to a member at the top of the module is a
    definition (`_assigned`)."""
    left = node.child_by_field_id(file.fields.left)
    if left is None or left.type != "member_expression":
        return None
    owner = left.child_by_field_id(file.fields.object)
    if owner is not None and owner.type == "this":
        if ctx.cls is not None:
            file.typed.append(("field", _name(file.rows, left.child_by_field_id(file.fields.property)), None,
                               node.child_by_field_id(file.fields.right), node, ctx))
        return None
    if file.dialect == "javascript" and owner is not None:
        if file.rows.text(left) == "module.exports":
            _module_value(file, node, ctx)
            return None
        if _name(file.rows, left.child_by_field_id(file.fields.property)) == "prototype":
            return _prototype(file, node, owner, ctx)
        return _assigned(file, node, left, owner, ctx)
    return None


def _prototype(file: _File, node: tree_sitter.Node, owner: tree_sitter.Node, ctx: _Context) -> _Context | None:
    """`Data.prototype = { cache: function…, get(owner) {…} }` at the top of a JavaScript module: each
    function of the object is a method of `Data` (`_pair`, `_method`), as the TypeScript compiler binds
    them; jQuery and code older than ES classes write a class so."""
    value = _unwrapped(node.child_by_field_id(file.fields.right))
    target = file.rows.text(owner)
    if value is None or value.type != "object" or not _top_statement(node) \
            or not scopes.plain(target.replace("$", "_")):
        return None
    cls = file.name(ctx.prefix, target)
    file.prototypes.add(value.start_byte)
    return _Context(Scope(outer=ctx.scope), ctx.prefix, ctx.source, file.classes.setdefault(cls, _Class(cls)),
                    in_body=True)


def _top_statement(node: tree_sitter.Node) -> bool:
    """Whether an assignment is a statement at the top of the module, or the value of one
    (`exports = module.exports = createApplication`). One level only: each step up asks tree-sitter for a
    parent, which walks down from the root, and a generated chain of thousands of assignments climbed
    to its top from every link cost the build minutes (2,000 links: 33 s)."""
    parent = node.parent
    if parent is not None and parent.type == "assignment_expression":
        parent = parent.parent
    return parent is not None and parent.type == "expression_statement" and parent.parent is not None \
        and parent.parent.type == "program"


def _module_value(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    """`module.exports = createApplication` makes the module's value, what `require()` of it gives, that
    function: recorded as `export default createApplication` is, and read once the whole file is known
    (the function is declared further down). `module.exports = require("./lib/express")` passes another
    module's value on, as `export { default } from` does."""
    value = _unwrapped(node.child_by_field_id(file.fields.right))
    if value is None or not _top_statement(node):
        return
    specifier = _required(file.rows, value)
    if specifier is not None:
        target = file.resolve(specifier)
        file.rows.relate("imports", f"{file.module}:default", "default", f"{target}:default", node.start_point[0] + 1)
    elif value.type == "identifier":
        file.exports.append((node, ctx))


_EXPORTS = "exports"


def _exported_path(target: str) -> str | None:
    """What follows `exports` in an assignment's target, with a trailing dot (`exports.describe` → `describe.`,
    `module.exports` → ``); None when the target is not the module's exports."""
    for start in (_EXPORTS, "module.exports"):
        if target == start:
            return ""
        if target.startswith(start + "."):
            return target[len(start) + 1:] + "."
    return None


def _assigned(file: _File, node: tree_sitter.Node, left: tree_sitter.Node, owner: tree_sitter.Node,
              ctx: _Context) -> _Context | None:
    """The definitions JavaScript writes as assignments, read as the TypeScript compiler binds them in a
    JavaScript file (its "assignment declarations"), when the value is a function and the statement is
    at the top of the module (or assigns it in a chain, `a.f = b.f = function…`):
    - `exports.f = function…` and `module.exports.f = …` define the function `module:f`
      (`exports.describe.only = …` the function `module:describe.only`);
    - `View.prototype.render = function…` the method `module:View::render`;
    - `app.use = function…` the method `module:app::use` (Express builds its application, request and
      response objects so), `$.fn.tooltip = function…` the method `module:$.fn::tooltip`.
    In a function's body `this` is `View` or `app`, so `this.lookup()` finds `View::lookup`. Node's own
    libraries, Express and most JavaScript older than ES classes define their API this way and no other."""
    function = _unwrapped(node.child_by_field_id(file.fields.right))
    name_node = left.child_by_field_id(file.fields.property)
    if function is None or function.type not in _FUNCTION_VALUES or name_node is None \
            or name_node.type != "property_identifier" or not _top_statement(node):
        return None  # in a function or a block, an assignment patches an object the module was given
    rows = file.rows
    name = rows.text(name_node)
    body = function.child_by_field_id(file.fields.body)
    target = rows.text(owner) if owner.type in ("identifier", "member_expression") else ""
    exported = _exported_path(target)
    if exported is not None:  # `exports.describe.only = …` is the function `module:describe.only`
        fqn = _define(file, "function", name, node, ctx, body=body, fqn=f"{ctx.prefix}{exported}{name}")
        return _body(fqn, ctx)
    target = target.removesuffix(".prototype")
    if not scopes.plain(target.replace("$", "_")):  # names joined by dots (`$.fn`), nothing computed
        return None
    cls = file.name(ctx.prefix, target)
    fqn = _define(file, "method", name, node, ctx, cls, body, f"{cls}::{name}")
    info = file.classes.setdefault(cls, _Class(cls))  # an arrow function's `this` is the module's
    this = ctx.cls if function.type == "arrow_function" else info
    return _body(fqn, _Context(ctx.scope, ctx.prefix, ctx.source, this))


_HANDLERS: dict[str, scopes.Handler[_File]] = {
    "class": _class, "class_expression": _class_expression, "interface": _interface, "type": _type,
    "enum": _enum, "function": _function, "method": _method, "field": _field, "variable": _variable,
    "namespace": _namespace, "import": _import, "export": _export, "params": _parameters,
    "assign": _assign, "pair": _pair,
}


# --- after the sweep ---------------------------------------------------------------------------------


def _resolve(file: _File, calls: scopes.Later) -> None:
    for clause, info, ctx in file.bases:
        _heritage(file, clause, info, ctx)
    for kind, name, annotation, value, node, ctx in file.typed:
        _typed(file, kind, name, annotation, value, node, ctx)
    scopes.settle(file.held)
    for node, ctx in file.exports:
        _exported(file, node, ctx)
    _call_rows(file, calls)


def _heritage(file: _File, clause: tree_sitter.Node, info: _Class, ctx: _Context) -> None:
    clauses = clause.named_children if clause.type == "class_heritage" else [clause]
    for part in clauses:
        kind = "implements" if part.type == "implements_clause" else "extends"
        for base in part.named_children:
            if base.type in ("type_arguments",):
                continue
            if base.type == "generic_type" and base.named_children:
                base = base.named_children[0]
            value = _value(file, base, ctx)
            if value is not None and value.kind in ("class", "name") and value.fqn:
                if kind == "extends":
                    info.bases.append(value.fqn)
                file.rows.relate(kind, info.fqn, _short(value.fqn), value.fqn, base.start_point[0] + 1)


def _short(fqn: str) -> str:
    return fqn.rsplit("::", 1)[-1].rsplit(":", 1)[-1].rsplit(".", 1)[-1].rsplit("/", 1)[-1]


def _typed(file: _File, kind: str, name: str, annotation: tree_sitter.Node | None, value: tree_sitter.Node | None,
           node: tree_sitter.Node, ctx: _Context) -> None:
    """The class a variable, parameter (`kind` "local") or field (`kind` "field": a class field or
    `this.x = …`) holds: its type annotation, or `new X()` assigned."""
    found = _annotated(file, annotation, ctx) if annotation is not None else ""
    if not found and value is not None:
        held_value = _value(file, value, ctx)
        found = held_value.fqn if held_value is not None and held_value.kind == "instance" else ""
    if kind == "field":
        if ctx.cls is not None:
            ctx.cls.hold(name, found)
        return
    if node.type in ("required_parameter", "optional_parameter") and ctx.cls is not None and any(
            c.type in ("accessibility_modifier", "override_modifier") or c.type == "readonly"
            for c in node.children):
        ctx.cls.hold(name, found)  # a parameter property is a field too
    scopes.hold(file.held, ctx.scope, name, found)


def _annotated(file: _File, annotation: tree_sitter.Node, ctx: _Context, depth: int = 0) -> str:
    """The class a type annotation names (`Foo`, `ns.Foo`, `Foo<T>`, `Foo | null`), else ""."""
    if depth > scopes.NESTING_LIMIT:
        return ""
    node = annotation.named_children[0] if annotation.type == "type_annotation" and annotation.named_children \
        else annotation
    if node.type == "union_type":
        named = [n for n in node.named_children
                 if not (n.type in ("literal_type", "predefined_type") and file.rows.text(n) in ("null", "undefined"))]
        return _annotated(file, named[0], ctx, depth + 1) if len(named) == 1 else ""
    if node.type == "generic_type" and node.named_children:
        node = node.named_children[0]
    if node.type not in ("type_identifier", "nested_type_identifier", "identifier"):
        return ""
    if node.type == "type_identifier":
        found = ctx.scope.lookup(file.rows.text(node))
    else:
        found = _value(file, node, ctx)
    if found is not None and found.kind in ("class", "name") and looks_like_class(_short(found.fqn)):
        return found.fqn
    return ""


def _value(file: _File, node: tree_sitter.Node, ctx: _Context, depth: int = 0) -> Binding | None:
    """What an expression is, as far as the file tells (None: unknown, also past `scopes.NESTING_LIMIT`)."""
    if depth > scopes.NESTING_LIMIT:
        return None
    kind = node.type
    rows = file.rows
    if kind in ("identifier", "type_identifier"):
        return _named(rows.text(node), ctx)
    if kind == "this":
        return Binding("instance", ctx.cls.fqn) if ctx.cls is not None else None
    if kind == "super":
        bases = ctx.cls.bases if ctx.cls is not None else []
        return Binding("instance", bases[0]) if bases else None
    if kind in ("member_expression", "nested_identifier", "nested_type_identifier"):
        owner = node.child_by_field_id(file.fields.object) or node.child_by_field_id(file.fields.module) or (
            node.named_children[0] if node.named_children else None)
        name_node = node.child_by_field_id(file.fields.property) or node.child_by_field_id(file.fields.name) or (
            node.named_children[-1] if node.named_children else None)
        value = _value(file, owner, ctx, depth + 1) if owner is not None else None
        name = rows.text(name_node)
        if value is None or not name:
            return None
        if value.kind == "module":
            return Binding("name", f"{value.fqn}:{name}")
        if value.kind == "name":
            return Binding("name", f"{value.fqn}.{name}")
        return file.attribute(value.fqn, name) if value.kind == "instance" else None
    if kind == "new_expression":
        created = node.child_by_field_id(file.fields.constructor)
        value = _value(file, created, ctx, depth + 1) if created is not None else None
        if value is not None and value.kind in ("class", "name"):
            return Binding("instance", value.fqn)
        return None
    if kind in ("parenthesized_expression", "non_null_expression", "as_expression", "satisfies_expression",
                "await_expression") and node.named_children:
        return _value(file, node.named_children[0], ctx, depth + 1)
    if kind == "call_expression":
        return _injected(file, node, ctx, depth)
    return None


# Angular's `inject(DataService)` returns the instance of DataService its injector holds: the field
# `private readonly dataService = inject(DataService)` holds one, as a constructor's parameter property
# `private dataService: DataService` does (the way Angular recommends since version 14)
_INJECT = "@angular/core:inject"


def _injected(file: _File, call: tree_sitter.Node, ctx: _Context, depth: int) -> Binding | None:
    """`inject(X)` of Angular: an instance of the class X; None for any other call."""
    injected = _first_argument(file, call, ctx, _INJECT)
    if injected is None:
        return None
    value = _value(file, injected, ctx, depth + 1)
    if value is not None and value.kind in ("class", "name") and looks_like_class(_short(value.fqn)):
        return Binding("instance", value.fqn)
    return None


def _named(name: str, ctx: _Context) -> Binding | None:
    """What the identifier `name` is where `ctx` reads it (None: unknown)."""
    found = ctx.scope.lookup(name)
    return None if found is None or found.kind == "local" else found


def _exported(file: _File, node: tree_sitter.Node, ctx: _Context) -> None:
    rows = file.rows
    line = node.start_point[0] + 1
    if node.type == "assignment_expression":  # `module.exports = name` (`_module_value`)
        right = _unwrapped(node.child_by_field_id(file.fields.right))
        value = ctx.scope.lookup(rows.text(right)) if right is not None else None
        if value is not None and value.kind in ("class", "function", "name"):
            rows.relate("imports", f"{file.module}:default", _short(value.fqn), value.fqn, line)
        return
    source = node.child_by_field_id(file.fields.source)
    target_module = file.resolve(rows.text(source)[1:-1]) if source is not None else ""
    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
    if source is not None and clause is None:  # `export * from "m"` / `export * as ns from "m"`
        alias = next((c for c in node.named_children if c.type == "namespace_export"), None)
        local = _name(rows, alias.named_children[0]) if alias is not None and alias.named_children else ""
        if local:
            rows.relate("imports", f"{file.module}:{local}", _short(target_module), target_module, line)
        else:  # every name of the module under this one's (`bindings` follows `module:*`)
            rows.relate("imports", f"{file.module}:{STAR}", _short(target_module), f"{target_module}:{STAR}", line)
        return
    if clause is not None:
        for specifier in clause.named_children:
            if specifier.type != "export_specifier":
                continue
            name = _name(rows, specifier.child_by_field_id(file.fields.name))
            alias = specifier.child_by_field_id(file.fields.alias)
            exported = _name(rows, alias) if alias is not None else name
            if source is not None:
                target = f"{target_module}:{name}"
            else:
                value = ctx.scope.lookup(name)
                target = value.fqn if value is not None and value.kind in ("class", "function", "name") else ""
            if target and exported and f"{file.module}:{exported}" != target:
                rows.relate("imports", f"{file.module}:{exported}", _short(target), target, line)
        return
    if any(c.type == "default" for c in node.children):  # `export default x` / `export default class X {}`
        declaration = node.child_by_field_id(file.fields.declaration) or node.child_by_field_id(file.fields.value)
        if declaration is None:
            return
        name_node = declaration.child_by_field_id(file.fields.name) if declaration.type != "identifier" else declaration
        value = ctx.scope.lookup(rows.text(name_node)) if name_node is not None else None
        if value is not None and value.kind in ("class", "function", "name"):
            rows.relate("imports", f"{file.module}:default", _short(value.fqn), value.fqn, line)


def _call_rows(file: _File, calls: scopes.Later) -> None:
    """The call rows, in the order of the calls, each captured as its callee: `f()` as `f` (`call.name`),
    `super()` as `super`, `x.f()` as `x.f` (`call.member`), `new X()` as `X`, `new a.X()` as `a.X`. A row of
    a name already called from the same context, the same way, is the one made then on another line (for a
    member, when its owner is a plain dotted name: `this.repository.find()`)."""
    rows = file.rows
    text = rows.text
    relations = rows.relations
    path = rows.path
    made: dict[tuple[_Context, str, str], tuple[str, str, str, str, str, str]] = {}
    references = scopes.References(rows, "this", _handed_function, _module_member)
    property_field, object_field = file.fields.property, file.fields.object
    for capture, node, ctx in calls:
        if capture[:4] == "ref.":  # `xs.map(fmt)`, `app.get("/", handler)`, `onClick={save}`, `this.onClick`
            references.read(capture, node, ctx)
            continue
        if capture == "call.member":
            name_node = node.child_by_field_id(property_field)
            owner = node.child_by_field_id(object_field)
            if name_node is None or owner is None or name_node.type not in ("property_identifier",
                                                                             "private_property_identifier"):
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
        elif capture == "call.name" or capture == "jsx.name":
            name = text(node)
            if capture == "jsx.name" and not name[:1].isupper():
                continue  # `<div>`: an element of the page, not a component
            row = made.get((ctx, "", name))
            if row is None:
                value = _named(name, ctx)
                target = value.fqn if value is not None and value.kind in ("function", "name") else ""
                if value is not None and value.kind == "module":  # `const express = require("express"); express()`
                    target = f"{value.fqn}:default"
                row = made[(ctx, "", name)] = (path, "calls", ctx.source, name, target, "")
            relations.append(row + (node.start_point[0] + 1,))
        elif capture == "call.super":
            value = _value(file, node, ctx)
            target = f"{value.fqn}::{CONSTRUCTOR}" if value is not None else ""
            rows.relate("calls", ctx.source, CONSTRUCTOR, target, node.start_point[0] + 1)
        else:  # `new X()` (`new.name`), `new a.X()` (`new.member`)
            name_node = node.child_by_field_id(file.fields.property) if capture == "new.member" else node
            value = _value(file, node, ctx)
            target = f"{value.fqn}::{CONSTRUCTOR}" if value is not None and value.kind in ("class", "name") else ""
            rows.relate("calls", ctx.source, text(name_node), target, (name_node or node).start_point[0] + 1)


def _handed_function(name: str, ctx: Context) -> str:
    """The function a name handed over as a value is: one this module defines or a name it imports."""
    value = _named(name, ctx)
    return value.fqn if value is not None and value.kind in ("function", "name") else ""


def _module_member(owner: str, name: str, ctx: Context) -> str:
    """`users.list` handed over: a function of a module bound whole (`import * as users`, `const users =
    require("./users")`), else ""."""
    value = _named(owner, ctx)
    return f"{value.fqn}:{name}" if value is not None and value.kind == "module" else ""


def _member_target(owner: Binding | None, name: str) -> tuple[str, str]:
    if owner is None:
        return "", ""
    if owner.kind in ("instance", "class"):
        return f"{owner.fqn}::{name}", ""
    if owner.kind == "module":
        return f"{owner.fqn}:{name}", ""
    if owner.kind == "name":
        dotted = f"{owner.fqn}.{name}"
        return (f"{owner.fqn}::{name}", dotted) if looks_like_class(_short(owner.fqn)) else (dotted, "")
    return "", ""
