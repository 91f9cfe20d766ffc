"""A commit's entry points into the code: the declarations its diff touched, at that commit and today.

For each parsed file a commit changed, the old blob is asked which declarations enclose the removed
lines and the new blob which enclose the added ones (`declarations.Reader`, on the file as of the
commit; blank lines count for nothing). That is exact where reading HEAD's symbol table with the
commit's line numbers is not. A declaration that leaves one place and appears in another in the same
commit (a method moved to a trait, a class whose file moved to another namespace, a method renamed in
place) is recorded as a move, so that today's name can be found later (`at_head`): *kept* (the name
still exists), *moved* (it exists under the name the moves lead to) or *gone*.

Under the cap, the most useful come first: production code before tests, functions and methods
before classes, properties and constants, then the most changed lines.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from project.index.db import Connection
from project.index.declarations import READERS, Declared, Hunk, Reader, Version, reader_pattern
from project.index.history import Change, Commit

MAX_SYMBOLS = 12
MAX_WORDS = 256  # distinct identifiers kept per touched declaration (a long method has ~100)
CACHED_VERSIONS = 2048
# of which the most recent keep their syntax tree while their sources add up to at most this much: a tree
# takes about 33 bytes of memory per byte of source, and 2,048 versions of sympy's files with their trees
# held 1.5 GB after 1,000 commits. A version without its tree keeps what was read from it; the next
# version of its file is parsed whole (PHP's, whose declarations are read from the tree, parsed again)
TREE_BYTES = 8 << 20
_KIND_RANK = {"function": 0, "method": 0, "class": 1, "interface": 1, "trait": 1, "enum": 1}
# not production code: test directories and the test-file names of each language's runners (PHPUnit,
# pytest, Jest/Vitest/Mocha), fixtures, and the examples beside documentation
_TEST = re.compile(r"(^|/)(tests?|Tests?|spec|specs|__tests__|fixtures?|docs?|examples?)/|Test(Case)?\.php$"
                   r"|(^|/)test_[^/]*\.py$|_test\.py$|\.(test|spec)\.[cm]?[jt]sx?$")
_WORD = re.compile(r"[a-z_][a-z0-9_]*")
STOP_WORDS = frozenset(
    "this self static parent return function public protected private new null true false array string int "
    "bool float void mixed if else elseif foreach for while as use namespace class extends implements "
    "const var echo isset empty unset throw try catch finally instanceof and or not fn match case default "
    "break continue the a an of to in is it be".split()
)


@dataclass
class Touch:
    """A declaration one commit touched, named as it was at that commit."""

    fqn: str
    kind: str
    path: str  # the file at that commit (its new path; the old one for a deleted file)
    lines: int  # changed, non-blank lines inside it
    change: str  # "added", "removed" or "changed"
    old_span: tuple[int, int] | None  # its lines in the parent's version of the file
    new_span: tuple[int, int] | None  # its lines in the commit's version
    words: str  # identifiers on its added lines (what "why is this line here" asks about)
    whole: bool = False  # every line of it removed (or added): not a declaration renamed in place
    old_path: str = ""  # the file's name before the commit, when the commit renamed it


@dataclass(frozen=True)
class Move:
    old_fqn: str
    new_fqn: str


def is_test(path: str) -> bool:
    """Whether `path` holds tests or examples rather than the code they exercise."""
    return _TEST.search(path) is not None


def rank(touches: Iterable[Touch]) -> list[Touch]:
    """Production before tests, functions and methods first, then class-likes, then the rest; most changed first."""
    return sorted(touches, key=lambda t: (is_test(t.path), _KIND_RANK.get(t.kind, 2), -t.lines, t.fqn))


def words(text: str) -> list[str]:
    """The identifiers of a piece of code or question, lower-cased, keywords left out, each once."""
    return [w for w in dict.fromkeys(_WORD.findall(text.lower())) if w not in STOP_WORDS and len(w) > 2]


class Touches:
    """Reads what each commit touched, keeping recent file versions so the next version parses incrementally."""

    def __init__(self, fetch: Callable[[list[str]], Mapping[str, bytes | None]] | None = None) -> None:
        """`fetch` reads blobs a batch's contents leave out (its reader skips the ones it expects cached)."""
        self._readers: dict[str, Reader] = {pattern: factory() for pattern, factory in READERS.items()}
        self._versions: OrderedDict[str, Version] = OrderedDict()
        self._trees: OrderedDict[str, int] = OrderedDict()  # the versions holding their tree: source bytes
        self._tree_bytes = 0
        self._fetch = fetch

    def of(self, commit: Commit, contents: Mapping[str, bytes | None]) -> tuple[list[Touch], list[Move]]:
        missing = [b for change in commit.changes for b in (change.old_blob, change.new_blob)
                   if b and b not in contents and b not in self._versions]
        if missing and self._fetch is not None:  # read together what the batch's reader expected cached
            contents = {**contents, **self._fetch(list(dict.fromkeys(missing)))}
        touches: dict[str, Touch] = {}
        removed: list[Touch] = []
        added: list[Touch] = []
        moves: list[Move] = []
        for change in commit.changes:
            pattern = reader_pattern(change.new_path or change.old_path)
            if pattern is None:
                continue
            reader = self._readers[pattern]
            try:
                old, new = self._versions_of(reader, change, contents)
            except LookupError:
                commit.skipped.append(f"{change.new_path or change.old_path}: object unreadable")
                continue
            found = _file_touches(reader, change, old, new)
            for touch in found:
                if touch.fqn in touches:
                    touches[touch.fqn].lines += touch.lines
                else:
                    touches[touch.fqn] = touch
            removed += [t for t in found if t.change == "removed"]
            added += [t for t in found if t.change == "added"]
            moves += _renamed_types(reader, change, old, new)
            if new is not None and change.old_blob and change.old_blob != change.new_blob:
                self._let_go(change.old_blob)  # its file's next version parses from this one's
        moves += _moves(removed, added, {m.old_fqn: m.new_fqn for m in moves})
        return rank(touches.values()), moves

    def _versions_of(self, reader: Reader, change: Change, contents: Mapping[str, bytes | None]
                     ) -> tuple[Version | None, Version | None]:
        """The change's two versions. The old one is parsed only when it is needed: lines were removed
        from it, or it is the base the new one is parsed from; a file that only gained lines and
        whose last version is not at hand is parsed once, whole, on its new side."""
        old = self._cached(change.old_blob)
        if old is None and change.old_blob:
            removes = change.status in ("D", "R") or any(count for _, count, _, _ in change.hunks)
            old = self._parse(reader, change.old_blob, contents, None, (), change.old_path) if removes else \
                Version(self._source(change.old_blob, contents), None)
        new = self._cached(change.new_blob)
        if new is None and change.new_blob:
            base = old if old is not None and old.state is not None else None
            new = self._parse(reader, change.new_blob, contents, base, change.hunks, change.new_path)
        return old, new

    def _let_go(self, blob: str) -> None:
        """Drop the tree of a version: superseded (history is read oldest first, so the next change of its
        file starts from the version that replaced it; a branch starting from it parses it whole) or the
        oldest over `TREE_BYTES`."""
        self._tree_bytes -= self._trees.pop(blob, 0)
        version = self._versions.get(blob)
        if version is not None:
            version.drop_tree()

    def _cached(self, blob: str) -> Version | None:
        version = self._versions.get(blob) if blob else None
        if version is not None:
            self._versions.move_to_end(blob)
            if blob in self._trees:
                self._trees.move_to_end(blob)
        return version

    def _source(self, blob: str, contents: Mapping[str, bytes | None]) -> bytes:
        source = contents.get(blob) if blob in contents or self._fetch is None else self._fetch([blob]).get(blob)
        if source is None:
            raise LookupError(blob)
        return source

    def _parse(self, reader: Reader, blob: str, contents: Mapping[str, bytes | None], previous: Version | None,
               hunks: Sequence[Hunk], path: str) -> Version:
        version = reader.parse(self._source(blob, contents), previous, hunks, path)
        self._versions[blob] = version
        self._versions.move_to_end(blob)
        self._tree_bytes += len(version.source) - self._trees.pop(blob, 0)
        self._trees[blob] = len(version.source)
        while len(self._trees) > 1 and self._tree_bytes > TREE_BYTES:
            self._let_go(next(iter(self._trees)))
        if len(self._versions) > CACHED_VERSIONS:
            gone, _ = self._versions.popitem(last=False)
            self._tree_bytes -= self._trees.pop(gone, 0)
        return version


def _file_touches(reader: Reader, change: Change, old: Version | None, new: Version | None) -> list[Touch]:
    old_lines = old.nonblank([(a, b) for a, b, _, _ in change.hunks]) if old is not None else []
    new_lines = new.nonblank([(c, d) for _, _, c, d in change.hunks]) if new is not None else []
    if change.status == "D" and old is not None:
        old_lines = old.nonblank([(1, old.lines)])
    if change.status == "A" and new is not None:
        new_lines = new.nonblank([(1, new.lines)])
    before = reader.enclosing(old, old_lines) if old is not None and old_lines else {}
    after = reader.enclosing(new, new_lines) if new is not None and new_lines else {}
    path = change.new_path or change.old_path
    gone = _absent(reader, old, new, before, after)
    fresh = _absent(reader, new, old, after, before)
    touches: dict[str, Touch] = {}
    for declared, lines in before.items():
        change_kind = "removed" if declared.fqn in gone else "changed"
        span = (declared.start_line, declared.end_line)
        touches[declared.fqn] = Touch(declared.fqn, declared.kind, path, len(lines), change_kind, span, None, "",
                                      change_kind == "removed" and _whole(old, span, lines))
    for declared, lines in after.items():
        assert new is not None
        said = " ".join(words(_runs(new, lines).decode("utf-8", "replace"))[:MAX_WORDS])
        span = (declared.start_line, declared.end_line)
        if declared.fqn in touches:
            touch = touches[declared.fqn]
            touch.lines += len(lines)
            touch.new_span, touch.words = span, said
        else:
            kind = "added" if declared.fqn in fresh else "changed"
            touches[declared.fqn] = Touch(declared.fqn, declared.kind, path, len(lines), kind, None, span, said,
                                          kind == "added" and _whole(new, span, lines))
    if change.old_path != change.new_path and change.old_path and change.new_path:
        for touch in touches.values():
            touch.old_path = change.old_path
    return list(touches.values())


def _runs(version: Version, lines: list[int]) -> bytes:
    """The text of `lines` (sorted), read a run of consecutive lines at a time."""
    parts, start = [], 0
    for index in range(1, len(lines) + 1):
        if index == len(lines) or lines[index] != lines[index - 1] + 1:
            parts.append(version.text(lines[start], lines[index - 1]))
            start = index
    return b"\n".join(parts)


def _whole(version: Version | None, span: tuple[int, int], lines: list[int]) -> bool:
    return version is not None and len(lines) >= len(version.nonblank([(span[0], span[1] - span[0] + 1)]))


def _absent(reader: Reader, here: Version | None, there: Version | None, found_here: Mapping[Declared, list[int]],
            found_there: Mapping[Declared, list[int]]) -> set[str]:
    """Names touched in `here` that the other side of the change does not declare at all."""
    names = {d.fqn for d in found_there}
    candidates = {(d.kind, d.fqn) for d in found_here if d.fqn not in names}
    if not candidates or here is None:
        return set()
    if there is None:
        return {fqn for _, fqn in candidates}
    return {fqn for _, fqn in candidates} - reader.declares(there, candidates)


def _short(fqn: str) -> str:
    return re.split(r"::|\\", fqn)[-1]


def _parent(fqn: str) -> str:
    return fqn.rsplit("::", 1)[0] if "::" in fqn else ""


def _moves(removed: list[Touch], added: list[Touch], types: Mapping[str, str]) -> list[Move]:
    """A declaration that left one place and appeared in another in the same commit, paired when the
    pairing is unambiguous: the same kind and short name (moved), or the same class and kind (renamed;
    `types` are the class-likes the commit itself moved, whose members count as in the same class)."""
    moves: list[Move] = []
    by_name: dict[tuple[str, str], list[Touch]] = {}
    for touch in added:
        by_name.setdefault((touch.kind, _short(touch.fqn)), []).append(touch)
    paired: set[str] = set()
    for touch in removed:
        candidates = by_name.get((touch.kind, _short(touch.fqn)), [])
        if len(candidates) == 1 and sum(1 for r in removed if (r.kind, _short(r.fqn)) ==
                                        (touch.kind, _short(touch.fqn))) == 1:
            moves.append(Move(touch.fqn, candidates[0].fqn))
            paired |= {touch.fqn, candidates[0].fqn}
    left = [t for t in removed if t.fqn not in paired and t.kind in ("method", "function") and not t.whole]
    right = [t for t in added if t.fqn not in paired and t.kind in ("method", "function") and not t.whole]
    for touch in left:
        owner = types.get(_parent(touch.fqn), _parent(touch.fqn))
        same = [a for a in right if _parent(a.fqn) == owner and a.path == touch.path]
        if len(same) == 1 and len([r for r in left if _parent(r.fqn) == _parent(touch.fqn)]) == 1:
            moves.append(Move(touch.fqn, same[0].fqn))
    return moves


def _renamed_types(reader: Reader, change: Change, old: Version | None, new: Version | None) -> list[Move]:
    """A renamed file whose class-likes changed namespace (PSR-4 moves): old name → new name."""
    if change.status != "R" or old is None or new is None:
        return []
    before = {(d.kind, _short(d.fqn)): d.fqn for d in reader.types(old)}
    return [Move(before[(d.kind, _short(d.fqn))], d.fqn) for d in reader.types(new)
            if before.get((d.kind, _short(d.fqn)), d.fqn) != d.fqn]


@dataclass(frozen=True)
class EntryPoint:
    """An entry point named at its commit, and what that name is today."""

    name: str  # at the commit
    head: str  # today's name; "" when gone
    status: str  # "kept", "moved" or "gone" ("" when the index has no code graph to tell)

    def label(self) -> str:
        if self.status == "moved":
            return f"{self.head} (moved from {self.name})"
        return f"{self.name} (gone)" if self.status == "gone" else self.name

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "head": self.head, "status": self.status}


def at_head(conn: Connection, names: Sequence[str], since: float) -> list[EntryPoint]:
    """Today's name of each of `names` (as a commit at time `since` knew them), following later moves.

    Most names never moved: one query finds the moves of all names and their classes, and one the names
    the graph still has; only a name that moved is followed further, a query a step."""
    graph = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'symbols'").fetchone() is not None
    if not names or conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_moves'").fetchone() is None:
        return [EntryPoint(name, name, "") for name in names]
    owners = {name.split("::", 1)[0] for name in names if "::" in name}
    asked = [*names, *owners]
    marks = ",".join("?" * len(asked))
    moved = {str(r[0]) for r in conn.execute(
        f"SELECT old_fqn FROM memory_moves WHERE old_fqn IN ({marks}) AND ts >= ?", (*asked, since))}
    today = {name: _follow(conn, name, since) if name in moved or name.split("::", 1)[0] in moved else name
             for name in names}
    existing: set[str] = set()
    if graph:
        wanted = list(dict.fromkeys(today.values()))
        existing = {str(r[0]) for r in conn.execute(
            f"SELECT fqn FROM symbols WHERE fqn IN ({','.join('?' * len(wanted))})", wanted)}
    out = []
    for name in names:
        current = today[name]
        if not graph:
            out.append(EntryPoint(name, current, ""))
        elif current not in existing:
            out.append(EntryPoint(name, "", "gone"))
        else:
            out.append(EntryPoint(name, current, "kept" if current == name else "moved"))
    return out


def _follow(conn: Connection, name: str, since: float) -> str:
    current, when = name, since
    for _ in range(32):  # a chain of renames; a cycle (renamed back and forth) ends here
        row = conn.execute("SELECT new_fqn, ts FROM memory_moves WHERE old_fqn = ? AND ts >= ? ORDER BY ts LIMIT 1",
                           (current, when)).fetchone()
        if row is None and "::" in current:
            owner, member = current.split("::", 1)
            moved = conn.execute("SELECT new_fqn, ts FROM memory_moves WHERE old_fqn = ? AND ts >= ? "
                                 "ORDER BY ts LIMIT 1", (owner, when)).fetchone()
            row = (f"{moved[0]}::{member}", moved[1]) if moved is not None else None
        if row is None or row[0] == current:
            return current
        current, when = str(row[0]), float(row[1])
    return current
