"""The nodes of chosen types in a parsed tree, found by a walk in C when the build compiled it.

Why: tree-sitter's query cursor keeps match state for every node it passes, and the PHP extractor's
query spends a third of a parse doing so on Symfony's 6.1 million nodes to return 200,000. Most of
its patterns only name a node type; `project.index._treewalk` (treewalk.c, compiled by hatch_build.py
against the pinned tree-sitter release) finds those nodes with a plain tree cursor in a third of the
time. The module reads py-tree-sitter's objects through the struct layout of the release it was
compiled against, so it is used only when that release is the one installed; otherwise, or when the
build had no compiler, `collector` returns None and callers run their query: the same nodes, slower.
`FORGEBOT_NO_TREEWALK=1` makes a process use the query too (for an operator who suspects the walk).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from functools import lru_cache
from importlib import metadata

import tree_sitter

# (start byte, -end byte, name, node): the order a sort by the first two gives is source order
Item = tuple[int, int, str, tree_sitter.Node]
Collect = Callable[[tree_sitter.Node], list[Item]]
_LEAF = 255  # treewalk.c's mark of a node type not to go into


@lru_cache(maxsize=1)
def status() -> tuple[str, str]:
    """(the tree-sitter release the C walk was compiled against, "") when it can be used, else ("", why)."""
    if os.environ.get("FORGEBOT_NO_TREEWALK"):
        return "", "turned off (FORGEBOT_NO_TREEWALK)"
    try:
        from project.index import _treewalk
    except ImportError:
        return "", "not built when forgebot was installed (no C compiler or Python headers then)"
    try:
        installed = metadata.version("tree-sitter")
    except metadata.PackageNotFoundError:
        installed = "an unknown release"
    if _treewalk.TREE_SITTER_VERSION != installed:
        return "", f"built for tree-sitter {_treewalk.TREE_SITTER_VERSION}, but {installed} is installed"
    return installed, ""


def compiled() -> str:
    """The tree-sitter release the C walk was compiled against when it can be used, else ""."""
    return status()[0]


def described() -> str:
    """One line for `forgebot index --timings`: which walk finds the nodes, and why not the C one."""
    release, why = status()
    if release:
        return f"node walk: C (tree-sitter {release})"
    return f"node walk: tree-sitter queries; the C walk is {why}"


def collector(language: tree_sitter.Language, names: Mapping[str, str], leaves: Collection[str] = ()) -> Collect | None:
    """A function giving, for a tree's root, every named node whose type `names` maps, with the name it
    maps to, in walk order (a node before its children); None when the C walk cannot be used.

    `leaves` are node types that by the grammar hold no node of those types (names, literals, type
    names): the walk does not go into them, which halves the nodes it visits in PHP code. A type put
    there by mistake loses nodes, so callers test the walk against their query on real code.
    """
    if not compiled():
        return None
    from project.index import _treewalk

    labels = tuple(sorted(set(names.values())))
    table = bytearray(language.node_kind_count)
    for symbol in range(language.node_kind_count):
        kind = language.node_kind_for_id(symbol)
        if kind is None:
            continue
        if kind in names and language.node_kind_is_named(symbol):  # every symbol of that name (aliases)
            table[symbol] = labels.index(names[kind]) + 1
        elif kind in leaves:
            table[symbol] = _LEAF
    frozen = bytes(table)

    def collect(root: tree_sitter.Node) -> list[Item]:
        return _treewalk.collect(root, frozen, labels)

    return collect
