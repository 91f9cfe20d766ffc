"""The names that stand for a definition: import bindings followed to it, and back.

An import binds a name in the importing module (`from .core import Thing` in `pkg/__init__.py`
binds `pkg.Thing`; `export { a as b } from "./x"` binds `module:b`), and the extractor records that
binding as the `imports` relation's source. Code that imports `Thing` from `pkg` calls `pkg.Thing`,
a name no definition carries: these functions connect the two at query time, so a one-file sync
never has to rewrite what other files' rows say. PHP imports bind nothing another file can import
(their source is empty), so for PHP these are the identity.

A star re-export binds every name of one module in another: `export * from "./decorators"` in
`src/index.ts` is recorded as `src:*` → `src/decorators:*`, `from .core import *` in `pkg/__init__.py`
as `pkg.*` → `pkg.core.*`. Such a row stands for each name under the two prefixes (`src:Injectable`
is `src/decorators:Injectable`): the barrel files TypeScript packages are published through, where a
name is otherwise bound nowhere and its callers' rows could not be tied to its definition.
"""

from __future__ import annotations

from project.index.db import Connection
from project.index.extractors import same_name
from project.index.model import STAR

_LIMIT = 256  # names per definition: re-exports of re-exports, each importer's own binding
_DEPTH = 16


def spellings(conn: Connection, fqn: str) -> list[str]:
    """`fqn` and every name bound to it by an import, transitively (star re-exports included)."""
    seen = {fqn.lower(): fqn}
    frontier = [fqn]
    while frontier and len(seen) < _LIMIT:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT DISTINCT source_fqn FROM relations WHERE kind = 'imports' AND target_fqn IN ({marks}) "
            "AND source_fqn != '' LIMIT ?", (*frontier, _LIMIT)).fetchall()
        # a star's names first: a barrel re-exports to every importer of a package, and an often imported
        # name's direct importers (Python's modules bind what they import) would fill the limit first
        found = _through_stars(conn, frontier, backward=True)
        found += [str(source) for (source,) in rows if not str(source).endswith(STAR)]
        frontier = []
        for source in found:
            if source.lower() not in seen:
                seen[source.lower()] = source
                frontier.append(source)
    return list(seen.values())[:_LIMIT]


def definition(conn: Connection, fqn: str) -> str:
    """The definition `fqn` names: itself when a symbol carries it, else where the import that binds it
    leads, followed through re-exports (to a name outside the repository when that is where it ends).

    A name no import binds by name is looked for behind the star re-exports of its module, the nearest
    first (a module's own named binding wins over its stars, as in TypeScript and Python); behind a
    star, a name may again be bound by name or by a star (`export * from "@vue/runtime-core"`, whose
    index re-exports `ref` from `@vue/reactivity`)."""
    current = fqn
    for _ in range(_DEPTH):
        if defined(conn, current):
            return current
        row = _bound(conn, current)
        if row is None:
            return _behind_stars(conn, current) or current
        if row.lower() == current.lower():
            return current
        current = row
    return current


def _bound(conn: Connection, fqn: str) -> str | None:
    """Where the import binding the name `fqn` leads, if one does."""
    row = conn.execute("SELECT target_fqn FROM relations WHERE kind = 'imports' AND source_fqn = ? "
                       "AND target_fqn != '' LIMIT 1", (fqn,)).fetchone()
    return str(row[0]) if row is not None else None


def _behind_stars(conn: Connection, fqn: str) -> str:
    """The first definition found from `fqn` through star re-exports and the named bindings behind them,
    breadth first; "" when none is."""
    seen = {fqn.lower()}
    frontier = [fqn]
    while frontier and len(seen) < _LIMIT:
        reached = []
        for name in _through_stars(conn, frontier, backward=False):
            while name.lower() not in seen and len(seen) < _LIMIT:  # a star's name, then its named chain
                seen.add(name.lower())
                if defined(conn, name):
                    return name
                reached.append(name)
                name = _bound(conn, name) or name
        frontier = reached
    return ""


def _through_stars(conn: Connection, names: list[str], *, backward: bool) -> list[str]:
    """What `names` are called on the other side of the star re-exports that cover them: forward, in the
    modules a star exports from; backward, in the modules exporting them by a star. A star covers the
    names of one module (`src:*` covers `src:Cart` and its members, not `src:outer.inner`): a star over
    a package does not make every name of its subpackages a name of the importing module."""
    covered: dict[str, list[str]] = {}  # the star name covering a name -> the rest of each such name
    for name in names:
        owner, sep, member = name.partition("::")
        cut = max(owner.rfind("."), owner.rfind(":"))
        if cut > 0:
            covered.setdefault(f"{owner[:cut + 1]}{STAR}", []).append(f"{owner[cut + 1:]}{sep}{member}")
    if not covered:
        return []
    near, far = ("target_fqn", "source_fqn") if backward else ("source_fqn", "target_fqn")
    marks = ",".join("?" * len(covered))
    rows = conn.execute(
        f"SELECT {near}, {far} FROM relations WHERE kind = 'imports' AND {near} IN ({marks}) "
        f"AND {far} LIKE '%{STAR}' LIMIT ?", (*covered, _LIMIT)).fetchall()
    lowered = {star.lower(): rests for star, rests in covered.items()}  # the columns compare without case
    return [f"{str(there)[:-1]}{rest}" for here, there in rows for rest in lowered.get(str(here).lower(), [])]


def defined(conn: Connection, fqn: str) -> bool:
    """Whether a definition carries `fqn` (spelled so, in a case-sensitive language)."""
    rows = conn.execute("SELECT path, fqn FROM symbols WHERE fqn = ? LIMIT 8", (fqn,)).fetchall()
    return any(same_name(str(path), str(stored), fqn) for path, stored in rows)
