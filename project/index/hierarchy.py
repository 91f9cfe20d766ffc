"""Class hierarchy over the stored `extends`, `implements` and `uses_trait` relations.

Overrides are derived here, at query time, rather than stored: whether `B::m` overrides `A::m`
depends on other files, and storing it would make a one-file sync rewrite rows of many files.
"""

from __future__ import annotations

import re

from project.index.bindings import definition, spellings
from project.index.db import Connection

_HIERARCHY_KINDS = ("extends", "uses_trait", "implements")  # lookup order: parents, traits, interfaces


_SEPARATORS = re.compile(r"[\\\\./:]")


def short_name(fqn: str) -> str:
    """The last part of a name in any language's form: `A\\B`, `pkg.mod.B`, `src/mod:B` → `B`."""
    return _SEPARATORS.split(fqn)[-1]


def split_member(fqn: str) -> tuple[str, str]:
    """`A\\B::m` → (`A\\B`, `m`); a non-member gives (fqn, "")."""
    owner, sep, member = fqn.partition("::")
    return (owner, member) if sep else (fqn, "")


def ancestors(conn: Connection, class_fqn: str, limit: int = 64) -> list[str]:
    """Ancestors of a class-like, nearest first: parent chain, then traits, then interfaces."""
    seen: list[str] = []
    frontier = [class_fqn]
    while frontier and len(seen) < limit:
        current = frontier.pop(0)
        rows = conn.execute(
            "SELECT kind, target_fqn FROM relations WHERE source_fqn = ? AND kind IN (?, ?, ?)",
            (current, *_HIERARCHY_KINDS),
        ).fetchall()
        rows.sort(key=lambda row: _HIERARCHY_KINDS.index(row[0]))
        for _, written in rows:
            target = definition(conn, written) if written else written
            if target and target.lower() != class_fqn.lower() and target.lower() not in map(str.lower, seen):
                seen.append(target)
                frontier.append(target)
    return seen


def descendants(conn: Connection, class_fqn: str, limit: int = 512) -> list[str]:
    """Every class-like that extends, implements or uses `class_fqn`, transitively."""
    seen: dict[str, str] = {}
    frontier = [class_fqn]
    while frontier and len(seen) < limit:
        names = spellings(conn, frontier.pop())
        marks = ",".join("?" * len(names))
        rows = conn.execute(
            f"SELECT DISTINCT source_fqn FROM relations WHERE target_fqn IN ({marks}) AND kind IN (?, ?, ?)",
            (*names, *_HIERARCHY_KINDS),
        ).fetchall()
        for (source,) in rows:
            if source and source.lower() not in seen and source.lower() != class_fqn.lower():
                seen[source.lower()] = source
                frontier.append(source)
    return list(seen.values())


def overridden(conn: Connection, method_fqn: str) -> list[tuple[str, str]]:
    """Ancestor methods `method_fqn` overrides or implements: (ancestor method fqn, its kind of owner)."""
    owner, name = split_member(method_fqn)
    if not name:
        return []
    found: list[tuple[str, str]] = []
    for ancestor in ancestors(conn, owner):
        row = conn.execute(
            "SELECT s.fqn, c.kind FROM symbols s LEFT JOIN symbols c ON c.fqn = s.parent_fqn "
            "AND c.kind IN ('class', 'interface', 'trait', 'enum') "
            "WHERE s.fqn = ? AND s.kind = 'method' LIMIT 1",
            (f"{ancestor}::{name}",),
        ).fetchone()
        if row is not None:
            found.append((row[0], row[1] or ""))
    return found
