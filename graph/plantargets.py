"""Plan-target checks against the code graph, before the architect sees a plan.

A plan item names files (`paths`) and, in its title, symbols in backticks (`Calculator::add`,
`App\\Calculator`; in Python and TypeScript, `Ledger.close()`, `billing.refunds.Ledger`). Code can
tell whether they exist, so no model is asked: an item that rests on a file or a class that exists
nowhere (and is not declared new) blocks the plan and goes back to the planner; a method the graph does
not know on a class it does know only warns (the item may be adding it), and the architect sees the
warning. A dotted name's class the graph does not know only warns too: `Path.read_text()` or
`datetime.timedelta` name a library's, which the graph does not hold. A symbol's presence proves
nothing about behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from graph.schemas import Plan
from project.index.db import Connection, connect
from project.index.mentions import RECEIVERS

_TICKED = re.compile(r"`([^`\s]{1,200})`")
_SYMBOL = re.compile(r"^\\?([A-Za-z_][A-Za-z0-9_]*(?:\\[A-Za-z_][A-Za-z0-9_]*)*)(?:::([A-Za-z_][A-Za-z0-9_]*)\(?\)?)?$")
# `Ledger.close()`, `billing.refunds.Ledger`, `models.Ledger.close`: the dotted form of Python and
# TypeScript; its class is its last CapWords part, and the part after it is a member when called
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(\(\))?$")
_CLASS_KINDS = ("class", "interface", "trait", "enum")


@dataclass
class TargetCheck:
    blocking: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_targets(plan: Plan, root: Path, index: str, new_files: Sequence[str], *, symbols: bool = True
                  ) -> TargetCheck:
    """Blocking problems and warnings about what the plan's items name.

    `symbols` is False when the profile has no grammar (`Profile.search_only`): the graph then holds
    no definitions, and checking names against it would block every plan.
    """
    found = TargetCheck()
    declared = set(new_files)
    for item in plan.items:
        for path in item.paths:
            if path not in declared and not (root / path).is_file():
                found.blocking.append(f"item {item.id} names {path}, which does not exist and is not declared new")
    for path in plan.scope.context_only:
        if not (root / path).is_file():
            found.blocking.append(f"`{path}` is listed as context only, but no such file exists")
    if not index or not Path(index).is_file() or not symbols:
        if any(_symbols(i.title) or _dotted(i.title) for i in plan.items):
            why = "this task has no code index" if symbols else "the profile's language has no code graph"
            found.warnings.append(f"symbols named by the plan were not checked: {why}")
        return found
    conn = connect(index, vectors=False, readonly=True)
    try:
        for item in plan.items:
            _check_names(conn, item.id, item.title, bool(declared), found)
    finally:
        conn.close()
    return found


def _check_names(conn: Connection, item: int, title: str, declares_files: bool, found: TargetCheck) -> None:
    """What an item's title names in backticks, against the graph (see the module's docstring)."""
    for cls, method in _symbols(title):
        classes = _classes(conn, cls)
        if not classes:
            where = "warnings" if declares_files else "blocking"  # a new file may define it
            getattr(found, where).append(f"item {item} names `{cls}`, which the code graph does not know")
        elif method and not _has_method(conn, classes, method):
            found.warnings.append(f"item {item} names `{cls}::{method}`, which does not exist yet "
                                  "(fine if the item adds it)")
    for written, cls, method in _dotted(title):
        classes = _classes(conn, cls)
        if not classes:
            found.warnings.append(f"item {item} names `{written}`: the code graph knows no class `{cls}` "
                                  "(fine if it is a library's or the item adds it)")
        elif method and not _has_method(conn, classes, method):
            found.warnings.append(f"item {item} names `{written}`: `{cls}` has no `{method}` yet "
                                  "(fine if the item adds it)")


def _symbols(title: str) -> list[tuple[str, str]]:
    out = []
    for ticked in _TICKED.findall(title):
        match = _SYMBOL.match(ticked)
        # a bare lowercase word in backticks is a variable or a keyword, not a class
        if match and (match.group(2) or "\\" in ticked or ticked[:1].isupper()) and "." not in ticked:
            out.append((match.group(1), match.group(2) or ""))
    return out


def _dotted(title: str) -> list[tuple[str, str, str]]:
    """(as written, class, member or "") of each dotted name in backticks whose class is written in CapWords;
    the member only when called (`Ledger.close()`): an attribute (`Config.DEBUG`) is no definition."""
    out = []
    for ticked in _TICKED.findall(title):
        match = _DOTTED.match(ticked)
        if not match or "::" in ticked:
            continue
        parts = ticked.removesuffix("()").split(".")
        if parts[0] in RECEIVERS:
            continue
        at = max((i for i, part in enumerate(parts) if part[:1].isupper() and not part.isupper()), default=-1)
        if at < 0 or at < len(parts) - 2:  # no class, or a chain past a member (`A.b.c`): nothing to check
            continue
        called = at == len(parts) - 2 and match.group(1) is not None
        out.append((ticked, parts[at], parts[at + 1] if called else ""))
    return out


def _classes(conn: Connection, name: str) -> list[str]:
    short = name.rsplit("\\", 1)[-1]
    marks = ",".join("?" * len(_CLASS_KINDS))
    rows = conn.execute(
        f"SELECT fqn FROM symbols WHERE name = ? AND kind IN ({marks})", (short, *_CLASS_KINDS)
    ).fetchall()
    fqns = [r[0] for r in rows]
    if "\\" in name:
        fqns = [f for f in fqns if f.lower().lstrip("\\") == name.lower().lstrip("\\")]
    return fqns


def _has_method(conn: Connection, classes: list[str], method: str) -> bool:
    marks = ",".join("?" * len(classes))
    row = conn.execute(
        f"SELECT 1 FROM symbols WHERE name = ? AND parent_fqn IN ({marks}) LIMIT 1", (method, *classes)
    ).fetchone()
    return row is not None
