"""The nodes an extractor's query names in a parsed tree, found by a walk in C when the build compiled it.

Why: tree-sitter's query cursor keeps match state for every node it passes; on Symfony's 6.1 million
nodes the PHP extractor's query spent a third of a parse to return 200,000. Most patterns of the
extractors' queries only name a node kind, or a kind of child under a kind of parent:
`project.index._treewalk` (treewalk.c, compiled by hatch_build.py against the pinned tree-sitter
release) finds those with a walk of the tree's subtrees and a table of symbols, in about a third of
the time, and the rest of a query runs only on the nodes the walk found (`finder`; PHP's extractor
uses `collector`).
The module reads py-tree-sitter's objects through the struct layout of the release it was compiled
against, so it is used only when that release is the one loaded; otherwise, or when the build had no
compiler, callers run their query: the same captures, slower. `FORGEBOT_NO_TREEWALK=1` makes a
process use the queries too (for an operator who suspects the walk).
"""

from __future__ import annotations

import logging
import operator
import os
import re
import struct
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import lru_cache

import tree_sitter

_log = logging.getLogger(__name__)

# (start byte, -end byte, name, node): the order a sort by the first two gives is source order
Item = tuple[int, int, str, tree_sitter.Node]
Find = Callable[[tree_sitter.Node], list[Item]]
_LEAF = 255  # treewalk.c's mark of a node type not to go into
_ANY_NAMED = 0xFFFF  # treewalk.c's child of a rule that is any named node: `(_)`
_ORDER = operator.itemgetter(0, 1)  # source order, the outer of two nodes that start together first


@lru_cache(maxsize=1)
def status() -> tuple[str, str]:
    """(the tree-sitter release the C walk was compiled against, "") when it can be used, else ("", why)."""
    if os.environ.get("FORGEBOT_NO_TREEWALK"):
        return "", "turned off (FORGEBOT_NO_TREEWALK)"
    try:
        from project.index import _treewalk
    except ImportError:
        return "", "not built when forgebot was installed (no C compiler or Python headers then)"
    installed = tree_sitter.__version__  # the release the loaded binding was built as
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


def field_ids(language: tree_sitter.Language, *names: str, optional: Collection[str] = ()) -> tuple[int, ...]:
    """The ids of a grammar's fields, for `Node.child_by_field_id`.

    Asked by name, tree-sitter first compares the name with each of the grammar's field names: half of
    each lookup's cost, and an extractor looks up hundreds of thousands of fields (sympy's 783,000).
    A name the grammar has no field of gets the id 0, which no child has: what asking by name gives.
    Unless the name is `optional` (a field of another dialect's grammar), that is said once in the log:
    the grammar packages are not pinned, and a release that renamed a field would otherwise leave the
    graph without what the field held, silently; it does not stop every command that reads the index.
    """
    ids = [language.field_id_for_name(name) for name in names]
    missing = [name for name, id_ in zip(names, ids, strict=True) if id_ is None and name not in optional]
    if missing:
        _log.warning("the installed grammar %s has no field %s: the code graph misses what it holds "
                     "(a grammar release forgebot was not tested with?)", language.name, ", ".join(missing))
    return tuple(id_ or 0 for id_ in ids)


def collector(language: tree_sitter.Language, names: Mapping[str, str], leaves: Collection[str] = ()) -> Find | None:
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
    symbols = _symbols(language)
    table = bytearray(language.node_kind_count)
    for kind in leaves:
        for symbol in symbols.get(kind, ()):
            table[symbol] = _LEAF
    for kind, name in names.items():
        for symbol in symbols.get(kind, ()):  # every symbol of that name (an alias has its own)
            table[symbol] = labels.index(name) + 1
    frozen = bytes(table)

    def collect(root: tree_sitter.Node) -> list[Item]:
        return _treewalk.collect(root, frozen, labels)

    return collect


# The pattern forms the walk does: `(kind) @name`, and a child of a parent, by field or not, of one kind
# or several: `(parent field: (kind) @name)`, `(parent [(kind) @name (_) @other])`.
_KIND = re.compile(r"\((\w+)\) @([\w.]+)")
_CHILD = re.compile(r"\((\w+) (?:(\w+): )?(\[[^][]*\]|\([\w]+\) @[\w.]+)\)")
_ALTERNATIVE = re.compile(r"\((\w+)\) @([\w.]+)")
# Any other pattern whose first step below its root is a child of a kind, or of one of several:
# `(root [field:] (child …) …)`, `(root [field:] [(a) (b) …] …) @name`. The walk finds the roots that
# have such a child; the pattern itself runs as a query on those roots alone.
_ROOTED = re.compile(r"\((\w+) (?:(\w+): )?(?:\((\w+)[ )]|\[((?:\(\w+\) ?)+)\][ )])")
_QUANTIFIERS = re.compile(r"[)\]][?*+]|!")
_ROOT = "\0root"  # the name the walk gives a child that makes its parent a root to query
Plan = tuple[bytes, tuple[str, ...], bytes, str]


def finder(language: tree_sitter.Language, source: str) -> Find:
    """A function giving what the query `source` captures under a root, in source order (the outer of
    two nodes that start together first): found by the C walk when each pattern has a form it does or
    starts with a child it can find (`_plan`), else by the query. Both give the same captures (tests
    compare them on real code)."""
    query = tree_sitter.Query(language, source)
    plan = _plan(language, query, source) if compiled() else None
    if plan is None:
        return lambda root: queried(query, root)
    from project.index import _treewalk

    table, names, rules, rest = plan
    rooted = tree_sitter.Query(language, rest) if rest else None

    def by_walk(root: tree_sitter.Node) -> list[Item]:
        # a walk visits a node before its children and siblings in order: source order, as sorting by
        # (start, -end) gives it (a stable sort leaves a node and a child of the same span as walked)
        items = _treewalk.collect(root, table, names, rules)
        if rooted is not None:
            heads = [node for _, _, name, node in items if name == _ROOT]
            if heads:
                items = [item for item in items if item[2] != _ROOT]
                items.extend(captured_at(rooted, [node.parent for node in heads]))
                items.sort(key=_ORDER)
        return items
    return by_walk


def queried(query: tree_sitter.Query, root: tree_sitter.Node) -> list[Item]:
    """What `query` captures under `root`, by tree-sitter's query cursor, in source order."""
    captures = tree_sitter.QueryCursor(query).captures(root)
    items = [(n.start_byte, -n.end_byte, name, n) for name, nodes in captures.items() for n in nodes]
    items.sort(key=_ORDER)
    return items


def captured_at(query: tree_sitter.Query, roots: Sequence[tree_sitter.Node | None]) -> list[Item]:
    """The captures of the patterns of `query` that start at one of `roots`, each node once per name (as
    a query over the whole tree gives a node two patterns capture under one name)."""
    found: dict[tuple[int, str], Item] = {}
    done: set[int] = set()
    cursor = tree_sitter.QueryCursor(query)
    cursor.set_max_start_depth(0)  # the patterns that start at the node itself
    for root in roots:
        if root is None or root.id in done:
            continue
        done.add(root.id)
        for name, nodes in cursor.captures(root).items():
            for n in nodes:
                found.setdefault((n.id, name), (n.start_byte, -n.end_byte, name, n))
    return list(found.values())


def _plan(language: tree_sitter.Language, query: tree_sitter.Query, source: str) -> Plan | None:
    """The walk's table, names and rules for the query and the query of its other patterns, or None
    when a pattern has none of the forms the walk does nor a first child it can find."""
    kinds: dict[str, str] = {}
    children: list[tuple[str, str, str, str]] = []  # parent, field ("" any), child ("_" any named), name
    rest: list[str] = []
    encoded = source.encode()
    for pattern in range(query.pattern_count):
        text = " ".join(encoded[query.start_byte_for_pattern(pattern):query.end_byte_for_pattern(pattern)]
                        .decode().split())
        child = _CHILD.fullmatch(text)
        alternatives = _ALTERNATIVE.findall(child.group(3)) if child else []
        if (alone := _KIND.fullmatch(text)) and alone.group(1) not in kinds:
            kinds[alone.group(1)] = alone.group(2)
        elif child and " ".join(f"({kind}) @{name}" for kind, name in alternatives) == child.group(3).strip("[]"):
            children.extend((child.group(1), child.group(2) or "", kind, name) for kind, name in alternatives)
        elif (rooted := _ROOTED.match(text)) and not _QUANTIFIERS.search(text):
            parent, field, one, several = rooted.groups()
            heads = [one] if one else re.findall(r"\((\w+)\)", several)
            if "_" in heads:
                return None
            children.extend((parent, field or "", kind, _ROOT) for kind in heads)
            rest.append(text)
        else:
            return None
    names = tuple(sorted({*kinds.values(), *(name for *_, name in children)}))
    symbols = _symbols(language)
    table = bytearray(language.node_kind_count)
    for kind, name in kinds.items():
        if kind not in symbols:
            return None
        for symbol in symbols[kind]:
            table[symbol] = names.index(name) + 1
    rules = bytearray()
    for parent, field, kind, name in children:
        field_id = language.field_id_for_name(field) if field else 0
        if field_id is None or parent not in symbols or (kind != "_" and kind not in symbols):
            return None
        for above in symbols[parent]:
            for below in [_ANY_NAMED] if kind == "_" else symbols[kind]:
                rules += struct.pack("=HHHH", above, field_id, below, names.index(name) + 1)
    return bytes(table), names, bytes(rules), "\n".join(rest)


def _symbols(language: tree_sitter.Language) -> dict[str, list[int]]:
    """Each named node kind's symbols (a kind an alias makes has one of its own). A supertype
    (`expression`) is left out: a query matches it on every kind under it, which a symbol's table
    cannot say, so a pattern naming one is not planned."""
    supertypes = {language.node_kind_for_id(symbol) for symbol in language.supertypes}
    symbols: dict[str, list[int]] = {}
    for symbol in range(language.node_kind_count):
        kind = language.node_kind_for_id(symbol)
        if kind is not None and kind not in supertypes and language.node_kind_is_named(symbol):
            symbols.setdefault(kind, []).append(symbol)
    return symbols
