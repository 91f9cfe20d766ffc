"""The code a text names: tokens that look like code, resolved to graph symbols by whole names.

A document, a discussion or a question names code in a few recognisable ways: a code span
(`` `timeoutSeconds` ``), a member (`LockManager::timeoutSeconds`, `$this->release()`), a namespaced
name (`App\\Lock\\LockManager`, `Support\\Str`), a CamelCase class name, a camelCase method name, a call
(`array_wrap(`, `now()`). Only those are candidates — plain words never are, so "core" in every project
link of a changelog names nothing, where a suffix match once resolved it to a `$score` property. A
candidate resolves by **whole names** through an index built once from the code graph (no table scan
per word): the full name, a namespace-boundary suffix of it, a class's short name, or a member's name;
a short name shared by more than `AMBIGUOUS` symbols names none of them in particular.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from project.index.db import Connection

MAX_SYMBOLS = 12
AMBIGUOUS = 3
_CLASS_KINDS = frozenset({"class", "interface", "trait", "enum"})
_CALLABLE_KINDS = frozenset({"method", "function"})
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
# not text: link targets, URLs, e-mail addresses, @mentions
_URL = re.compile(r"\]\([^)\s]*\)|\b[a-z][a-z0-9+.-]*://\S+|[\w.+-]+@[\w-]+\.[\w.]+|@[\w-]+")
_SPAN = re.compile(r"`([^`\n]{2,120})`")
_TOKEN = re.compile(
    rf"(?P<qualified>\\?{_IDENT}(?:\\{_IDENT})+(?:::\$?{_IDENT})?)"  # App\Lock\LockManager[::member]
    rf"|(?P<member>(?:\$this|{_IDENT})(?:::|->)\$?{_IDENT})"  # LockManager::timeoutSeconds, $this->release
    rf"|(?P<call>{_IDENT})\("  # now(, array_wrap(
    # LockManager (a class), orWhereKey (a method)
    r"|(?P<camel>\b(?:[A-Z][a-z0-9]+){2,}[A-Za-z0-9]*\b|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b)"
)
_SELF = frozenset({"$this", "self", "static", "parent"})


Row = tuple[str, str]  # fqn, kind


class SymbolIndex:
    """Whole-name lookups over a code graph's symbols, all through one primitive: the symbols of a short
    name. `of` loads them all at once (a document refresh resolves thousands of tokens); `live` asks
    the graph's name index per token (a question names a handful)."""

    def __init__(self, by_name: Callable[[str], list[Row]]) -> None:
        self._by_name = by_name

    @classmethod
    def of(cls, conn: Connection) -> SymbolIndex:
        names: dict[str, list[Row]] = {}
        if _has_graph(conn):
            for fqn, name, kind in conn.execute("SELECT fqn, name, kind FROM symbols"):
                names.setdefault(str(name), []).append((str(fqn), str(kind)))
        return cls(lambda name: names.get(name, []))

    @classmethod
    def live(cls, conn: Connection) -> SymbolIndex:
        if not _has_graph(conn):
            return cls(lambda name: [])
        return cls(lambda name: [(str(r[0]), str(r[1])) for r in conn.execute(
            "SELECT fqn, kind FROM symbols WHERE name = ?", (name,))])

    def resolve(self, text: str) -> tuple[str, ...]:
        """The symbols `text` names, in the order it names them, at most MAX_SYMBOLS."""
        found: dict[str, None] = {}
        for form, token in candidates(text):
            for fqn in self.lookup(form, token):
                found[fqn] = None
            if len(found) >= MAX_SYMBOLS:
                break
        return tuple(found)[:MAX_SYMBOLS]

    def lookup(self, form: str, token: str, ambiguous: int | None = AMBIGUOUS) -> list[str]:
        """The symbols one candidate names (none when more than `ambiguous` share the name)."""
        found = self._lookup(form, token)
        return found if ambiguous is None or len(found) <= ambiguous else []

    def _lookup(self, form: str, token: str) -> list[str]:
        if form == "qualified":
            name = token.lstrip("\\")
            owner, _, member = name.partition("::")
            short = owner.rsplit("\\", 1)[-1]
            owners = [f for f, _ in self._by_name(short) if _names(f, owner)]
            if not member:
                return _unique(owners)
            return _unique([f for f, _ in self._by_name(member) if any(
                f.lower() == f"{o}::{member}".lower() for o in owners)])
        if form == "member":
            owner, member = re.split(r"::|->", token, maxsplit=1)
            rows = self._by_name(member)
            if owner in _SELF:
                return _unique([f for f, kind in rows if kind in _CALLABLE_KINDS or "::" in f])
            return _unique([f for f, _ in rows if _names(f, f"{owner}::{member}")])
        if form == "camel" and token[0].isupper():
            return _unique([f for f, kind in self._by_name(token) if kind in _CLASS_KINDS])
        return _unique([f for f, kind in self._by_name(token) if kind in _CALLABLE_KINDS])


def _names(fqn: str, written: str) -> bool:
    """Whether `written` is `fqn` or a suffix of it on a namespace or module boundary (`\\`, `.`, `/`, `:`;
    compared without case, as PHP names are)."""
    fqn, written = fqn.lower(), written.lower()
    return fqn == written or fqn.endswith(written) and fqn[-len(written) - 1] in "\\./:"


def _has_graph(conn: Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'symbols'").fetchone() is not None


def _unique(found: list[str]) -> list[str]:
    return list(dict.fromkeys(found))


def candidates(text: str) -> Iterator[tuple[str, str]]:
    """(form, token) of every code-like token: code spans first, then the rest of the text; links,
    URLs and e-mail addresses are not text."""
    text = _URL.sub(" ", text)
    for span in _SPAN.finditer(text):
        yield from _tokens(span.group(1).strip())
    yield from _tokens(_SPAN.sub(" ", text))


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    for match in _TOKEN.finditer(text):
        form = match.lastgroup or ""
        yield form, match.group(form)
