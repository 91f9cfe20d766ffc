"""The few node types of a language's grammar that reading a method's exits needs.

`contract.override_contract` walks an ancestor method's body for the ways control leaves it; which
nodes are returns, throws, yields, nested functions (whose exits are their own) and a call of the
overridden method on the parent differs per grammar, and is all that differs. Each extractor gives
its `ExitSyntax`; the contract code names no language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter


@dataclass(frozen=True)
class ExitSyntax:
    methods: frozenset[str]  # node types of a method declaration
    returns: frozenset[str]
    throws: frozenset[str]
    yields: frozenset[str]
    opaque: frozenset[str]  # nested functions and classes: their exits are not the method's
    # (node, the method's name) -> whether the node calls the parent's implementation of it
    parent_call: Callable[[tree_sitter.Node, str], bool]


def _text(node: tree_sitter.Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _php_parent(node: tree_sitter.Node, name: str) -> bool:
    """`parent::name(...)` (PHP method names ignore case)."""
    if node.type != "scoped_call_expression":
        return False
    scope, called = node.child_by_field_name("scope"), node.child_by_field_name("name")
    return _text(scope) == "parent" and _text(called).lower() == name.lower()


def _python_parent(node: tree_sitter.Node, name: str) -> bool:
    """`super().name(...)` / `super(Cls, self).name(...)`."""
    callee = node.child_by_field_name("function") if node.type == "call" else None
    if callee is None or callee.type != "attribute":
        return False
    owner = callee.child_by_field_name("object")
    return owner is not None and owner.type == "call" and _text(owner.child_by_field_name("function")) == "super" \
        and _text(callee.child_by_field_name("attribute")) == name


def _script_parent(node: tree_sitter.Node, name: str) -> bool:
    """`super.name(...)`."""
    callee = node.child_by_field_name("function") if node.type == "call_expression" else None
    if callee is None or callee.type != "member_expression":
        return False
    owner = callee.child_by_field_name("object")
    return owner is not None and owner.type == "super" and _text(callee.child_by_field_name("property")) == name


PHP = ExitSyntax(
    methods=frozenset({"method_declaration"}), returns=frozenset({"return_statement"}),
    throws=frozenset({"throw_expression"}), yields=frozenset({"yield_expression"}),
    opaque=frozenset({"anonymous_function", "arrow_function", "anonymous_class", "function_definition"}),
    parent_call=_php_parent,
)
PYTHON = ExitSyntax(
    methods=frozenset({"function_definition"}), returns=frozenset({"return_statement"}),
    throws=frozenset({"raise_statement"}), yields=frozenset({"yield"}),
    opaque=frozenset({"function_definition", "class_definition", "lambda"}), parent_call=_python_parent,
)
SCRIPT = ExitSyntax(
    methods=frozenset({"method_definition", "public_field_definition", "field_definition"}),
    returns=frozenset({"return_statement"}), throws=frozenset({"throw_statement"}),
    yields=frozenset({"yield_expression"}),
    opaque=frozenset({"function_declaration", "function_expression", "function", "arrow_function", "class",
                      "class_declaration", "generator_function_declaration", "generator_function"}),
    parent_call=_script_parent,
)
