"""Every key a node of the built graph can return is declared by `TaskState`.

LangGraph drops an update key the state schema does not declare, silently: a node that returns
`{"anaylsis": ...}` loses its work and no test of the route fails for it. This check reads the
source of each node function of `build_graph()` (and of every function or method whose result a
node returns, spreads or updates its answer with) and collects the string keys of the dicts it
returns. Whatever it cannot follow is reported, so the check never passes by not looking.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from graph.builder import build_graph
from graph.state import TaskState

DECLARED = TaskState.__required_keys__ | TaskState.__optional_keys__


@dataclass
class Found:
    keys: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # key -> where
    unresolved: list[str] = field(default_factory=list)
    seen: set[Any] = field(default_factory=set)
    packages: tuple[str, ...] = ("graph.",)  # whose functions are read; anything else is unresolved


def _node_functions() -> Iterator[tuple[str, Callable[..., Any]]]:
    """Each node as the graph runs it: the builder's wrappers (limits, status, trace) around the
    node function; a wrapper's update is followed through the `run` it closes over."""
    for name, spec in build_graph().nodes.items():
        runnable: Any = spec.runnable  # LangGraph's RunnableCallable: the async function is `afunc`
        yield name, runnable.afunc or runnable.func


def _own_nodes(body: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function body, not descending into nested functions or lambdas."""
    for child in ast.iter_child_nodes(body):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield child
        yield from _own_nodes(child)


class _Reader:
    """The keys of the dicts one function returns."""

    def __init__(self, fn: Callable[..., Any], found: Found) -> None:
        self.fn, self.found = fn, found
        self.where = f"{fn.__module__}.{fn.__qualname__}"
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        self.body = tree.body[0]
        self.values: dict[str, list[ast.expr]] = defaultdict(list)  # name -> what was assigned / merged into it
        self.parts: dict[str, list[tuple[ast.expr, int]]] = defaultdict(list)  # name -> (call, tuple index)
        self.types: dict[str, Any] = {}
        for node in _own_nodes(self.body):
            self._note(node)

    def _note(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    self.values[target.id].append(node.value)
                    if (kind := self._type_of(node.value)) is not None:
                        self.types[target.id] = kind
                elif isinstance(target, ast.Tuple):
                    for index, element in enumerate(target.elts):
                        if isinstance(element, ast.Name):
                            self.parts[element.id].append((node.value, index))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    key = target.slice
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        self.found.keys[key.value].add(self.where)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name) and len(node.args) == 1
        ):
            self.values[node.func.value.id].append(node.args[0])

    def read(self) -> None:
        for node in _own_nodes(self.body):
            if isinstance(node, ast.Return) and node.value is not None:
                self._collect(node.value)

    def _collect(self, expr: ast.expr, index: int | None = None) -> None:
        if isinstance(expr, ast.Await):
            self._collect(expr.value, index)
        elif isinstance(expr, ast.Dict) and index is None:
            for key, value in zip(expr.keys, expr.values, strict=True):
                if key is None:
                    self._collect(value)
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    self.found.keys[key.value].add(self.where)
                else:
                    self.found.unresolved.append(f"{self.where}: key {ast.unparse(key)}")
        elif isinstance(expr, ast.Tuple) and index is not None:
            self._collect(expr.elts[index])
        elif isinstance(expr, ast.IfExp):
            self._collect(expr.body, index)
            self._collect(expr.orelse, index)
        elif isinstance(expr, ast.Name) and index is None and (expr.id in self.values or expr.id in self.parts):
            for value in self.values.get(expr.id, []):
                self._collect(value)
            for call, part in self.parts.get(expr.id, []):
                self._collect(call, part)
        elif isinstance(expr, ast.Call) and (callee := self._callee(expr.func)) is not None:
            _follow(callee, self.found, index)
        else:
            self.found.unresolved.append(f"{self.where}: {ast.unparse(expr)}")

    def _lookup(self, expr: ast.expr) -> Any:
        if isinstance(expr, ast.Name):
            if expr.id in self.types:
                return self.types[expr.id]
            if expr.id in (closure := inspect.getclosurevars(self.fn).nonlocals):
                return closure[expr.id]
            return self.fn.__globals__.get(expr.id)
        if isinstance(expr, ast.Attribute):
            owner = self._lookup(expr.value)
            return getattr(owner, expr.attr, None) if owner is not None else None
        return None

    def _callee(self, func: ast.expr) -> Callable[..., Any] | None:
        found = self._lookup(func)
        return found if isinstance(found, types.FunctionType | types.MethodType) else None

    def _type_of(self, value: ast.expr) -> Any:
        """The class a call returns, from its annotation (for `role = RoleRun.open(...)`)."""
        if isinstance(value, ast.Await):
            value = value.value
        if not isinstance(value, ast.Call) or (callee := self._callee(value.func)) is None:
            return None
        returned = typing.get_type_hints(callee).get("return")
        return returned if isinstance(returned, type) and returned.__module__.startswith(self.found.packages) else None


def _follow(fn: Callable[..., Any], found: Found, index: int | None = None) -> None:
    fn = getattr(fn, "__func__", fn)
    if (fn, index) in found.seen:
        return
    found.seen.add((fn, index))
    if not fn.__module__.startswith(found.packages):
        found.unresolved.append(f"{fn.__module__}.{fn.__qualname__}: outside the graph package")
        return
    reader = _Reader(fn, found)
    if index is None:
        reader.read()
    else:
        for node in _own_nodes(reader.body):
            if isinstance(node, ast.Return) and node.value is not None:
                reader._collect(node.value, index)


def test_every_node_returns_only_declared_keys() -> None:
    found = Found()
    nodes = dict(_node_functions())
    for fn in nodes.values():
        _follow(fn, found)
    assert not found.unresolved, found.unresolved
    undeclared = {key: sorted(where) for key, where in found.keys.items() if key not in DECLARED}
    assert not undeclared, undeclared
    # the reader saw the keys every route writes (a check that finds nothing proves nothing)
    assert {"analysis", "plan", "change", "sessions", "tokens", "review_scope", "answers"} <= found.keys.keys()
    assert {"decomposer", "coder", "delivery", "reviewer", "review_publisher"} <= nodes.keys()


def test_the_check_sees_an_undeclared_key() -> None:
    def node(state: TaskState) -> dict[str, Any]:
        update: dict[str, Any] = {"plan": {}}
        update["anaylsis"] = {}
        return {**update, **_extra()}

    found = Found(packages=(__name__,))
    _follow(node, found)
    assert {"plan", "anaylsis", "outcome"} <= found.keys.keys() and not found.unresolved
    assert "anaylsis" not in DECLARED


def _extra() -> dict[str, Any]:
    return {"outcome": "reported"}
