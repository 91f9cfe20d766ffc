"""The names that stand for a definition: import bindings followed to it, and back.

An import binds a name in the importing module (`from .core import Thing` in `pkg/__init__.py`
binds `pkg.Thing`; `export { a as b } from "./x"` binds `module:b`), and the extractor records that
binding as the `imports` relation's source. Code that imports `Thing` from `pkg` calls `pkg.Thing`,
a name no definition carries: these functions connect the two at query time, so a one-file sync
never has to rewrite what other files' rows say. PHP imports bind nothing another file can import
(their source is empty), so for PHP these are the identity.
"""

from __future__ import annotations

from project.index.db import Connection
from project.index.extractors import same_name

_LIMIT = 256  # names per definition: re-exports of re-exports, each importer's own binding
_DEPTH = 16


def spellings(conn: Connection, fqn: str) -> list[str]:
    """`fqn` and every name bound to it by an import, transitively."""
    seen = {fqn.lower(): fqn}
    frontier = [fqn]
    while frontier and len(seen) < _LIMIT:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT DISTINCT source_fqn FROM relations WHERE kind = 'imports' AND target_fqn IN ({marks}) "
            "AND source_fqn != '' LIMIT ?", (*frontier, _LIMIT)).fetchall()
        frontier = []
        for (source,) in rows:
            if str(source).lower() not in seen:
                seen[str(source).lower()] = str(source)
                frontier.append(str(source))
    return list(seen.values())[:_LIMIT]


def definition(conn: Connection, fqn: str) -> str:
    """The definition `fqn` names: itself when a symbol carries it, else where the import that binds it
    leads, followed through re-exports (to a name outside the repository when that is where it ends)."""
    current = fqn
    for _ in range(_DEPTH):
        if defined(conn, current):
            return current
        row = conn.execute("SELECT target_fqn FROM relations WHERE kind = 'imports' AND source_fqn = ? "
                           "AND target_fqn != '' LIMIT 1", (current,)).fetchone()
        if row is None or str(row[0]).lower() == current.lower():
            return current
        current = str(row[0])
    return current


def defined(conn: Connection, fqn: str) -> bool:
    """Whether a definition carries `fqn` (spelled so, in a case-sensitive language)."""
    rows = conn.execute("SELECT path, fqn FROM symbols WHERE fqn = ? LIMIT 8", (fqn,)).fetchall()
    return any(same_name(str(path), str(stored), fqn) for path, stored in rows)
