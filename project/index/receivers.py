"""Call sites and the statically knowable type of their receiver.

A receiver is resolved only where PHP makes it certain without running code: `$this`, `self`,
`static`, `parent`, a class name, a typed parameter or property (its declared type, else the one its
docblock's `@param`/`@var` gives), a variable assigned `new X` in the same function (if it is never
assigned another class), and `(new X)->m()`. Everything else keeps
`target_fqn` empty but still carries the method name, so name lookups never lose a call site.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from project.index import php_grammar
from project.index.names import SPECIAL_CLASS_NAMES, NameTable

TextOf = Callable[[tree_sitter.Node], str]
# path, kind, source_fqn, target_name, target_fqn, fallback_fqn, line: the `relations` table's columns
RelationRow = tuple[str, str, str, str, str, str, int]
_NAME_TYPES = ("name", "qualified_name", "relative_name")
_AMBIGUOUS = "?"
# Language constructs that tree-sitter-php parses as function calls; PHP never calls a function.
_CONSTRUCTS = frozenset({"isset", "empty", "unset", "eval", "exit", "die", "list", "array", "print"})


@dataclass(slots=True)
class ClassScope:
    """The class-like being swept: its fqn, resolved parent class, and property types by name."""

    fqn: str
    parent: str = ""
    anonymous: bool = False
    props: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class FunctionScope:
    """A method or function: its fqn and the class each local variable statically holds."""

    fqn: str
    variables: dict[str, str] = field(default_factory=dict)

    def assign(self, name: str, type_fqn: str) -> None:
        """Record a variable's class; a second, different class makes it unknown for good."""
        if not type_fqn:
            return
        known = self.variables.get(name)
        self.variables[name] = type_fqn if known in (None, type_fqn) else _AMBIGUOUS

    def type_of(self, name: str) -> str:
        found = self.variables.get(name, "")
        return "" if found == _AMBIGUOUS else found


@dataclass(slots=True)
class CallSite:
    """A call node with the context it appeared in, resolved once the whole file was swept."""

    node: tree_sitter.Node
    names: NameTable
    cls: ClassScope | None
    func: FunctionScope | None
    path: str


def class_name(raw: str, names: NameTable, cls: ClassScope | None) -> str:
    """Resolve a class reference, mapping `self`/`static`/`parent` through the enclosing class."""
    lowered = raw.strip().lower()
    if lowered in SPECIAL_CLASS_NAMES:
        if cls is None or cls.anonymous and lowered != "parent":
            return ""
        return cls.parent if lowered == "parent" else cls.fqn
    return names.resolve_class(raw)


def resolve_type(node: tree_sitter.Node, text: TextOf, names: NameTable, cls: ClassScope | None) -> str:
    """The single class a declared type names (`Foo`, `?Foo`), else "" (unions, scalars)."""
    if node.type == "optional_type" and node.named_children:
        node = node.named_children[0]
    if node.type == "named_type" and node.named_children:
        node = node.named_children[0]
    if node.type not in _NAME_TYPES:
        return ""
    return class_name(text(node), names, cls)


# `@param Cart $cart` and `@var Cart` in a docblock: code written before PHP declared types (WordPress's,
# older Laravel's) types its parameters and properties there
_DOCUMENTED = re.compile(r"@(?:phpstan-|psalm-)?(?:param|var)\s+([^\s$]+)(?:\s+(?:\.\.\.)?\$(\w+))?")
_CLASS_NAME = re.compile(r"\\?[A-Za-z_][\w\\]*")
_NOT_CLASSES = frozenset({
    "int", "integer", "string", "bool", "boolean", "float", "double", "array", "mixed", "callable", "iterable",
    "object", "void", "null", "false", "true", "resource", "never", "numeric", "scalar", "list", "array-key",
    "class-string", "positive-int", "negative-int", "non-empty-string", "non-empty-array", "callable-string"})


def documented(docblock: str, names: NameTable, cls: ClassScope | None) -> dict[str, str]:
    """Variable name ("" for a `@var` that names none) -> the single class its `@param`/`@var` tag
    gives (`Cart`, `?Cart`, `Cart|null`, `Collection<int, Item>` is a Collection); none for a scalar, an
    array (`Cart[]`), a union of two classes or an intersection."""
    found: dict[str, str] = {}
    for raw, variable in _DOCUMENTED.findall(docblock) if "@" in docblock else ():
        parts = [part for part in raw.lstrip("?").split("|") if part.lower() != "null"]
        written = parts[0].split("<", 1)[0] if len(parts) == 1 else ""
        if not written or written.endswith("]") or "&" in written or written.lower() in _NOT_CLASSES \
                or not _CLASS_NAME.fullmatch(written):
            continue
        resolved = class_name(written, names, cls)
        if resolved:
            found.setdefault(variable, resolved)
    return found


def _receiver(node: tree_sitter.Node | None, site: CallSite, text: TextOf) -> str:
    if node is None:
        return ""
    kind = node.type
    if kind == "variable_name":
        name = text(node)[1:]
        if name == "this":
            return site.cls.fqn if site.cls is not None and not site.cls.anonymous else ""
        return site.func.type_of(name) if site.func is not None else ""
    if kind in ("member_access_expression", "nullsafe_member_access_expression"):
        owner = node.child_by_field_id(php_grammar.OBJECT)
        prop = node.child_by_field_id(php_grammar.NAME)
        if owner is not None and prop is not None and owner.type == "variable_name" and text(owner) == "$this" \
                and site.cls is not None:  # the type first: a long chain's text is not read at each link
            return site.cls.props.get(text(prop), "")
        return ""
    if kind == "parenthesized_expression" and node.named_children:
        inner = node.named_children[0]
        if inner.type == "object_creation_expression" and inner.named_children:
            created = inner.named_children[0]
            if created.type in _NAME_TYPES:
                return class_name(text(created), site.names, site.cls)
    return ""


def caller_of(site: CallSite) -> str:
    """The fqn of the function or class a call site is in ("" at the top of a file: the file calls)."""
    if site.func is not None:
        return site.func.fqn
    return site.cls.fqn if site.cls is not None else ""


def resolve_call(site: CallSite, text: TextOf) -> RelationRow | None:
    """Turn a call node into a `calls` relation row, or None when the callee has no static name."""
    node = site.node
    kind = node.type
    if kind == "function_call_expression":
        return _function_call(site, text)
    if kind == "object_creation_expression":
        return _creation(site, text)
    name_node = node.child_by_field_id(php_grammar.NAME)
    if name_node is None or name_node.type != "name":
        return None
    if _braced(node, name_node):
        return None  # `$o->{CONSTANT}()`: the method name is computed at run time
    method = text(name_node)
    if kind == "scoped_call_expression":
        scope = node.child_by_field_id(php_grammar.SCOPE)
        owner = ""
        if scope is not None and scope.type in ("relative_scope", *_NAME_TYPES):
            owner = class_name(text(scope), site.names, site.cls)
    else:
        owner = _receiver(node.child_by_field_id(php_grammar.OBJECT), site, text)
    target = f"{owner}::{method}" if owner else ""
    return (site.path, "calls", caller_of(site), method, target, "", name_node.start_point[0] + 1)


def _braced(call: tree_sitter.Node, name: tree_sitter.Node) -> bool:
    """Whether `name` follows a `{` among the call's own children (`$o->{CONSTANT}()`). Read from the
    call's children: tree-sitter finds a node's previous sibling by walking down from the root, which
    made each link of a generated chain of calls cost the chain's depth."""
    previous = None
    for child in call.children:
        if child == name:
            return previous is not None and previous.type == "{"
        previous = child
    return False


def _function_call(site: CallSite, text: TextOf) -> RelationRow | None:
    callee = site.node.child_by_field_id(php_grammar.FUNCTION)
    if callee is None or callee.type not in _NAME_TYPES:
        return None
    if callee.type == "name" and text(callee).lower() in _CONSTRUCTS:
        return None
    target, fallback = site.names.resolve_function(text(callee))
    name = target.rsplit("\\", 1)[-1]
    line = callee.start_point[0] + 1
    return (site.path, "calls", caller_of(site), name, target, fallback, line)


def _creation(site: CallSite, text: TextOf) -> RelationRow | None:
    if not site.node.named_children:
        return None
    created = site.node.named_children[0]
    if created.type == "anonymous_class":
        return None
    owner = class_name(text(created), site.names, site.cls) if created.type in _NAME_TYPES else ""
    target = f"{owner}::__construct" if owner else ""
    return (site.path, "calls", caller_of(site), "__construct", target, "", site.node.start_point[0] + 1)
