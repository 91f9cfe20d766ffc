"""What the Python and TypeScript/JavaScript extractors share: name bindings, scopes and row making.

Both languages name things by module and scope, bind names with imports and definitions, and shadow
them with local variables. A `Scope` is one table of names (a module, a class body, a function) with
the scope it falls back to; a `Binding` says what a name stands for as far as the file tells: a
module, a class, a function, an instance of a class, an imported name whose kind the file cannot
tell, or a local value of unknown type (which shadows every outer meaning). Calls are resolved after
the sweep, when every binding of the file is known, so a call may come before the definition it calls.

A resolved call has a primary target and, when the file cannot tell a class from a module or a
function (`X.y()` on an imported `X`), the other reading as `fallback_fqn`: the store takes the
fallback only when no definition carries the primary name, as it does for PHP's global functions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypeVar

import tree_sitter

from project.index.parse import FileRows, StoredSymbolRow, content_hash
from project.index.receivers import RelationRow
from project.index.treewalk import Item

F = TypeVar("F", bound="FileSweep")
BindingKind = Literal["module", "class", "function", "instance", "name", "local"]


class Binding(NamedTuple):
    """What a name stands for: `fqn` is the module, class or function it names (the class of an
    instance); "" for a local value of unknown type. A named tuple: made and compared in C, as often as
    names are bound and read."""

    kind: BindingKind
    fqn: str = ""


LOCAL = Binding("local")


@dataclass(slots=True)
class Scope:
    """One table of names, falling back to `outer` (a class body's names are not seen by its methods,
    so a method's scope falls back past it)."""

    names: dict[str, Binding] = field(default_factory=dict)
    outer: Scope | None = None
    assigned: dict[str, int] = field(default_factory=dict)  # how often each local was assigned

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.outer
        return None

    def settle(self, name: str, classes: list[str]) -> None:
        """A local every assignment of which holds an instance of the same class is an instance of it."""
        if classes and classes[0] and len(set(classes)) == 1 and self.assigned.get(name) == len(classes) \
                and self.names.get(name) == LOCAL:
            self.names[name] = Binding("instance", classes[0])

    def bind(self, name: str, binding: Binding) -> None:
        """Bind `name` here; a second, different meaning of a name leaves it a local of unknown type."""
        if binding.kind == "local":
            self.assigned[name] = self.assigned.get(name, 0) + 1
        known = self.names.get(name)
        if known is None or known == binding:
            self.names[name] = binding
        elif binding.kind == "local" or known.kind == "local" or known.kind != binding.kind:
            self.names[name] = LOCAL
        else:
            self.names[name] = LOCAL if known.fqn != binding.fqn else known


@dataclass(slots=True)
class ClassInfo:
    """A class being read: its bases (resolved) and the class each attribute (`self.x`, a field) holds."""

    fqn: str
    bases: list[str] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)

    def hold(self, name: str, found: str) -> None:
        """Attribute `name` holds an instance of `found` ("" unknown); two different classes make it unknown."""
        if name:
            known = self.attributes.get(name)
            self.attributes[name] = found if known in (None, found) else ""


@dataclass(slots=True, eq=False)
class Context:
    """What encloses a node during the sweep (compared, and hashed, by identity)."""

    scope: Scope
    prefix: str  # the name definitions inside are named under
    source: str  # the fqn calls made here are made from
    cls: ClassInfo | None = None  # the enclosing class, in its body and its methods (`self`, `this`)
    in_body: bool = False  # directly in the class body (a function here is a method)


_HUGE = 1 << 62

Handler = Callable[[F, tree_sitter.Node, Context], "Context | None"]
Later = list[tuple[str, tree_sitter.Node, Context]]


def sweep(find: Callable[[tree_sitter.Node], list[Item]], root: tree_sitter.Node, file: F, first: Context,
          handlers: Mapping[str, Handler[F]], later: Later) -> None:
    """Visit what `find` captures under `root` in source order (`treewalk.finder`: a walk in C, or the
    query), each with the context enclosing it; a handler that returns a context opens it until the end
    of its node. A capture without a handler (a call, read only once the whole file is known) is kept in
    `later` with its context, in the same order. Python sees only the nodes that matter, never the whole
    tree."""
    stack: list[tuple[int, Context]] = [(_HUGE, first)]
    end, ctx = stack[-1]
    get = handlers.get
    keep = later.append
    for start, _, capture, node in find(root):
        if end <= start:
            while stack[-1][0] <= start:
                stack.pop()
            end, ctx = stack[-1]
        handle = get(capture)
        if handle is None:
            keep((capture, node, ctx))
            continue
        inner = handle(file, node, ctx)
        if inner is not None:
            stack.append((node.end_byte, inner))
            end, ctx = stack[-1]


# How many parts of an expression are followed to find what it is (`a.b.c()` follows 3): past this the
# answer is "unknown". Written code stays far below; a generated chain of thousands of calls would
# overflow Python's stack (1,000 frames) and stop the whole build.
NESTING_LIMIT = 50
# An owner expression longer than this is not read for reuse (`plain`): reading the whole receiver at
# every link of a generated chain made the file's cost quadratic in its length.
_PLAIN_BYTES = 256
_LONG = "(long)"  # never `plain`, so a row keyed by it is never reused


def owner_text(text: Callable[[tree_sitter.Node], str], owner: tree_sitter.Node) -> str:
    """The text of a call's owner expression (`self.repository` of `self.repository.find()`) to key a
    reusable row by; a long owner gets a key no row is stored under."""
    return text(owner) if owner.end_byte - owner.start_byte <= _PLAIN_BYTES else _LONG


def plain(expression: str) -> bool:
    """Whether an expression's text is names joined by dots (`self.x`, `this.repository`): the same text
    then reads the same wherever a context reads it, so what it resolves to can be reused."""
    return expression.replace(".", "").isidentifier()


def looks_like_class(name: str) -> bool:
    """CapWords: the naming both languages' style guides give classes (and constructors)."""
    return name[:1].isupper() and not name.isupper()


@dataclass(slots=True)
class Rows:
    """One file's symbol and relation rows as they accumulate (the `symbols`/`relations` columns)."""

    path: str
    source: bytes
    language: str
    symbols: list[StoredSymbolRow] = field(default_factory=list)
    relations: list[RelationRow] = field(default_factory=list)
    # the source as text when it is ASCII (a byte offset is then a character offset): one decode for the
    # file instead of one per name read
    ascii: str | None = None

    def __post_init__(self) -> None:
        if self.source.isascii():
            self.ascii = self.source.decode("ascii")

    def text(self, node: tree_sitter.Node | None) -> str:
        if node is None:
            return ""
        if self.ascii is not None:
            return self.ascii[node.start_byte:node.end_byte]
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def symbol(self, kind: str, fqn: str, name: str, node: tree_sitter.Node, parent: str = "",
               signature: str = "", docblock: str = "", attributes: tuple[str, ...] = ()) -> None:
        self.symbols.append((
            self.path, kind, fqn, name, parent, node.start_point[0] + 1, node.end_point[0] + 1,
            node.start_byte, node.end_byte, signature[:400], docblock,
            json.dumps(list(attributes)) if attributes else "[]",
        ))

    def relate(self, kind: str, source: str, name: str, target: str, line: int, fallback: str = "") -> None:
        self.relations.append((self.path, kind, source, name, target, fallback, line))

    def module(self, fqn: str, name: str, root: tree_sitter.Node, docblock: str = "") -> None:
        """The file's module: all of it, from its first byte (the tree's root starts at its first token)."""
        self.symbols.append((self.path, "module", fqn, name, "", 1, root.end_point[0] + 1, 0, len(self.source),
                             "", docblock, "[]"))

    def done(self, tree: tree_sitter.Tree, digest: str,
             benign: Callable[[tree_sitter.Node], bool] | None = None) -> FileRows:
        """The file's rows; it has errors when its tree does, except where `benign` says an error node is
        the grammar's, not the file's (valid syntax the grammar does not know, read right anyway)."""
        errors = tree.root_node.has_error and not (benign is not None and all(map(benign, _errors(tree))))
        return FileRows(self.path, digest or content_hash(self.source), self.language, errors,
                        self.symbols, self.relations)


def _errors(tree: tree_sitter.Tree) -> list[tree_sitter.Node]:
    """The tree's ERROR and MISSING nodes, found through the subtrees that hold one (a loop: a broken file
    can nest deeper than Python's stack)."""
    found = []
    pending = [tree.root_node]
    while pending:
        node = pending.pop()
        if node.is_error or node.is_missing:
            found.append(node)
        elif node.has_error:
            pending.extend(node.children)
    return found


def head(source: bytes, node: tree_sitter.Node, body: tree_sitter.Node | None) -> str:
    """A declaration's text up to its body, on one line: its signature."""
    end = body.start_byte if body is not None else node.end_byte
    return " ".join(source[node.start_byte:end].decode("utf-8", "replace").split()).rstrip(":{ ")


Held = dict[tuple[int, str], tuple[Scope, list[str]]]  # (scope id, local) -> the scope, each class assigned


@dataclass(slots=True)
class FileSweep:
    """What the sweep of one file collects for after it: the rows, the classes read, and the nodes whose
    meaning needs every binding of the file (bases here; each language adds its typed assignments; the calls
    are the sweep's `later`)."""

    rows: Rows
    module: str
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    bases: list[tuple[tree_sitter.Node, ClassInfo, Context]] = field(default_factory=list)

    def attribute(self, cls: str, name: str) -> Binding | None:
        """What attribute `name` of an instance of `cls` holds, when the file tells (None: unknown)."""
        info = self.classes.get(cls)
        held = info.attributes.get(name, "") if info is not None else ""
        return Binding("instance", held) if held else None


def hold(held: Held, scope: Scope, name: str, found: str) -> None:
    """Record that local `name` of `scope` is assigned an instance of `found` ("" unknown) once more."""
    key = (id(scope), name)
    entry = held.get(key)
    if entry is None:
        held[key] = (scope, [found])
    else:
        entry[1].append(found)


def settle(held: Held) -> None:
    """Settle every local all of whose assignments agree on a class."""
    for (_, name), (scope, classes) in held.items():
        scope.settle(name, classes)


def record_instances(rows: Rows, module: Scope, fqn: Callable[[str], str]) -> None:
    """An `instance` row for each name of the module (`module`, settled) that holds an instance of one
    class: `db = Database()`, `export const api = new ApiClient()`. A call through an import of the name
    in another module (`from app.db import db; db.query()`) is then a call of the class's method
    (`queries.call_sites`). The row is no line's: its line is 0."""
    for name, binding in module.names.items():
        if binding.kind == "instance" and binding.fqn:
            rows.relate("instance", fqn(name), binding.fqn.rsplit(".", 1)[-1].rsplit(":", 1)[-1], binding.fqn, 0)


class References:
    """The `references` rows of one file: functions its arguments hand over for another function to call
    (`map(fmt, xs)`, `app.get("/", handler)`, `bus.subscribe(self.on_saved)`, `path("", views.index)`,
    `onClick={save}`).

    A name counts when `resolve` says which function it is, a member of an imported module when `member`
    does (Django's `views.index`, Express's `users.list` of a required controller); only names the file
    defines as functions or its module imports are asked (most arguments are locals: one lookup in that
    set tells, where a walk up the scopes would cost each). A member of `self.`/`this.` (`owner`) counts
    when it is a method the file's class defines: `f(self.timeout)` hands over an attribute."""

    def __init__(self, rows: Rows, owner: str, resolve: Callable[[str, Context], str],
                 member: Callable[[str, str, Context], str]) -> None:
        self.rows, self.owner, self.resolve, self.member = rows, f"{owner}.", resolve, member
        self.handed: frozenset[str] | None = None
        self.methods: set[str] | None = None

    def names(self, ctx: Context) -> frozenset[str]:
        """The names an identifier argument must be one of to count (`name` is asked for no other): a
        caller holding the set skips most arguments, locals, with one lookup and no call."""
        if self.handed is None:
            self.handed = self._handed(ctx.scope)
        return self.handed

    def name(self, text: str, node: tree_sitter.Node, ctx: Context) -> None:
        """A `ref.name` capture (an identifier argument) whose `text` is one of `names`."""
        target = self.resolve(text, ctx)
        if target:
            self.rows.relate("references", ctx.source, text, target, node.start_point[0] + 1)

    def read(self, capture: str, node: tree_sitter.Node, ctx: Context) -> None:
        """One capture: `ref.name` (an identifier argument) or `ref.member` (an attribute argument)."""
        rows = self.rows
        text = rows.text(node)
        if capture == "ref.name":
            if text in self.names(ctx):
                self.name(text, node, ctx)
            return
        owner, _, name = text.partition(".")
        if not name.isidentifier():  # `a.b.c`, `a?.b`, `a[0]`
            return
        if owner in self.names(ctx):
            target = self.member(owner, name, ctx)
        elif f"{owner}." == self.owner and ctx.cls is not None:
            if self.methods is None:
                self.methods = {row[2] for row in rows.symbols if row[1] == "method"}
            target = f"{ctx.cls.fqn}::{name}"
            target = target if target in self.methods else ""
        else:
            return
        if target:
            rows.relate("references", ctx.source, name, target, node.end_point[0] + 1)

    def _handed(self, scope: Scope) -> frozenset[str]:
        while scope.outer is not None:  # the module's scope: what it imports
            scope = scope.outer
        imported = (name for name, value in scope.names.items() if value.kind in ("name", "module"))
        return frozenset((*imported, *(row[3] for row in self.rows.symbols if row[1] == "function")))
