"""What one version of a source file declares at given lines: the code as history saw it.

Project memory asks, for every commit, which declarations its diff touched. That must be answered on
the file *as of that commit* (the old blob for removed lines, the new blob for added ones): today's
line numbers point at other methods in any file edited since. A `Reader` is the interface a language
offers for it: parse a blob (from the previous version of the same file and the diff's hunks when it
has them), then name the innermost declaration enclosing each given line. PHP is read with
tree-sitter here; another language plugs in by adding a `Reader` to `READERS`.

Versions of one file are parsed incrementally: the previous version's tree, edited by the hunks
between the two, is handed to the parser, which then re-reads only the changed regions (three times
less CPU over a real history than parsing each blob whole). A declaration's lines include its
docblock, so a commit that only rewrites a method's documentation touched that method.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import partial
from typing import Protocol

import numpy as np
import tree_sitter

from project.index.extractors import EXTRACTORS, Extractor, SourceParser
from project.index.names import join, strip_leading
from project.index.parse import new_parser

Hunk = tuple[int, int, int, int]  # a `-U0` hunk: old start, old count, new start, new count


@dataclass(frozen=True, slots=True)
class Declared:
    """One declaration of a file version, named as the code graph names it."""

    kind: str  # the graph's symbol kinds: class, interface, trait, enum, method, function, property, ...
    fqn: str
    start_line: int  # 1-based, its docblock included
    end_line: int


class Version:
    """One parsed blob: its bytes, where each line starts, and the language's parse state."""

    __slots__ = ("source", "starts", "state")

    def __init__(self, source: bytes, state: object) -> None:
        self.source = source
        newlines = np.flatnonzero(np.frombuffer(source, dtype=np.uint8) == 10)
        if len(newlines) and newlines[-1] == len(source) - 1:
            newlines = newlines[:-1]  # the final newline ends the last line; it does not start one
        self.starts: np.ndarray[tuple[int], np.dtype[np.intp]] = np.concatenate(([-1], newlines)) + 1
        self.state = state

    @property
    def lines(self) -> int:
        return len(self.starts)

    def drop_tree(self) -> None:
        """Let go of the syntax tree (about 33 bytes of memory per byte of source), keeping what was read."""
        if isinstance(self.state, tuple):
            self.state = (None, self.state[1])
        elif isinstance(self.state, tree_sitter.Tree):
            self.state = None

    def offset(self, line: int) -> int:
        """Byte offset where 1-based `line` starts (the end of the source past the last line)."""
        return int(self.starts[line - 1]) if 0 < line <= len(self.starts) else len(self.source)

    def text(self, first: int, last: int | None = None) -> bytes:
        """Lines `first`..`last` (1-based, inclusive; one line when `last` is omitted)."""
        return self.source[self.offset(first):self.offset((first if last is None else last) + 1)]

    def point(self, offset: int) -> tuple[int, int]:
        row = int(np.searchsorted(self.starts, offset, side="right")) - 1
        return row, offset - int(self.starts[row])

    def nonblank(self, ranges: Iterable[tuple[int, int]]) -> list[int]:
        """The lines of `ranges` ((first line, count), 1-based) that hold more than whitespace."""
        found: list[int] = []
        for first, count in ranges:
            last = min(first + count - 1, self.lines)
            if first > last:
                continue
            if count > 64:  # a whole file, or a large part: count non-space bytes per line at C speed
                text = np.frombuffer(self.source, dtype=np.uint8)
                filled = np.concatenate(([0], np.cumsum(text > 32, dtype=np.int64)))
                bounds = np.append(self.starts, len(self.source))
                per_line = filled[bounds[first:last + 1]] - filled[bounds[first - 1:last]]
                found += (np.flatnonzero(per_line) + first).tolist()
            else:
                block = self.text(first, last).split(b"\n")
                found += [first + i for i, text in enumerate(block[:last - first + 1]) if text.strip()]
        return found


class Reader(Protocol):
    """A language's side of history reading (PHP below; one per language)."""

    def parse(self, source: bytes, previous: Version | None = None, hunks: Sequence[Hunk] = (),
              path: str = "") -> Version:
        """Parse `source` (the file at `path`, which names a Python or TypeScript module); with `previous`
        (the same file before `hunks`), reuse what did not change."""
        ...

    def enclosing(self, version: Version, lines: Iterable[int]) -> dict[Declared, list[int]]:
        """The innermost declaration around each of `lines` (1-based) → the lines it encloses."""
        ...

    def types(self, version: Version) -> list[Declared]:
        """The class-like declarations of the file (a renamed file's classes keep their identity)."""
        ...

    def declares(self, version: Version, names: Iterable[tuple[str, str]]) -> set[str]:
        """Which of `names` ((kind, fqn) pairs) the file still declares: a declaration that left the file
        is told from one only edited. Needs no parse (a version may be read without one)."""
        ...


_CLASS_LIKE = {"class_declaration": "class", "interface_declaration": "interface", "trait_declaration": "trait",
               "enum_declaration": "enum"}
_BODIES = frozenset({"declaration_list", "enum_declaration_list"})
# statements a declaration can sit in at the top of a file (`if (!function_exists('f')) { function f() {} }`)
_BLOCKS = frozenset({"if_statement", "compound_statement", "else_clause", "else_if_clause", "colon_block",
                     "declare_statement"})
# what precedes a declared name (PHP names of functions and classes are case-insensitive)
_BEFORE: dict[str, tuple[bytes, ...]] = {
    "method": (b"function",), "function": (b"function",), "class": (b"class",), "interface": (b"interface",),
    "trait": (b"trait",), "enum": (b"enum",), "property": (b"$",), "enum_case": (b"case",),
    "constant": (b"const", b","),
}
_CASELESS = frozenset({"method", "function", "class", "interface", "trait", "enum"})


class PhpReader:
    """PHP through tree-sitter-php, with the fully qualified names `project.index.definitions` gives."""

    def __init__(self) -> None:
        self._parser = new_parser()

    def parse(self, source: bytes, previous: Version | None = None, hunks: Sequence[Hunk] = (),
              path: str = "") -> Version:
        version = Version(source, None)
        version.state = _reparse(self._parser, version, previous, hunks)
        return version

    def enclosing(self, version: Version, lines: Iterable[int]) -> dict[Declared, list[int]]:
        wanted = sorted(set(lines))
        found: dict[Declared, list[int]] = {}
        if wanted:
            _Walk(version, found).scope(self._tree(version).root_node, "", wanted)
        return found

    def _tree(self, version: Version) -> tree_sitter.Tree:
        """The version's tree; parsed again (not kept) when the cache let go of it."""
        tree = version.state
        return tree if isinstance(tree, tree_sitter.Tree) else self._parser.parse(version.source)

    def types(self, version: Version) -> list[Declared]:
        tree = self._tree(version)
        walk = _Walk(version, {})
        walk.scope(tree.root_node, "", list(range(1, version.lines + 1)), types_only=True)
        return walk.types

    def declares(self, version: Version, names: Iterable[tuple[str, str]]) -> set[str]:
        """A text search for each name's declaration (`function name(`, `class Name`, `$name`, `NAME =`);
        a name in a comment or string can keep a deleted declaration "present" (then it is merely not
        recorded as moved), never the reverse."""
        source = version.source
        lowered = source.lower()
        found = set()
        for kind, fqn in names:
            short = fqn.rsplit("::", 1)[-1].rsplit("\\", 1)[-1].lstrip("$").encode()
            if _declares(lowered if kind in _CASELESS else source, short.lower() if kind in _CASELESS else short,
                         _BEFORE.get(kind, ())):
                found.add(fqn)
        return found


def _declares(source: bytes, name: bytes, before: tuple[bytes, ...]) -> bool:
    """Whether `name` occurs as a whole word, preceded by one of `before` (any word when empty)."""
    at = source.find(name)
    while at >= 0:
        end = at + len(name)
        whole = (at == 0 or not _ident(source[at - 1])) and (end >= len(source) or not _ident(source[end]))
        if whole:
            ahead = source[max(0, at - 24):at].rstrip(b" \t\r\n&")
            if not before or ahead.endswith(before):
                return True
        at = source.find(name, at + 1)
    return False


def _ident(byte: int) -> bool:
    return byte == 95 or 48 <= byte <= 57 or 65 <= byte <= 90 or 97 <= byte <= 122 or byte >= 128


def _reparse(parser: SourceParser, version: Version, previous: Version | None, hunks: Sequence[Hunk]
             ) -> tree_sitter.Tree:
    """Parse `version`, from `previous`'s tree edited by `hunks` when there is one."""
    old_tree = None
    previous_tree = previous.state[0] if previous is not None and isinstance(previous.state, tuple) else (
        previous.state if previous is not None else None)
    if previous is not None and isinstance(previous_tree, tree_sitter.Tree):
        old_tree = previous_tree.copy()
        for old_start, old_count, new_start, new_count in reversed(hunks):  # bottom-up: earlier offsets hold
            first_old = old_start if old_count == 0 else old_start - 1  # 0-based first line replaced
            first_new = new_start if new_count == 0 else new_start - 1
            start = previous.offset(first_old + 1)
            old_end = previous.offset(first_old + old_count + 1)
            new_end = start + version.offset(first_new + new_count + 1) - version.offset(first_new + 1)
            old_tree.edit(start_byte=start, old_end_byte=old_end, new_end_byte=new_end,
                          start_point=previous.point(start), old_end_point=previous.point(old_end),
                          new_end_point=version.point(new_end))
    return parser.parse(version.source, old_tree) if old_tree is not None else parser.parse(version.source)


class _Walk:
    """One descent from the root toward the wanted lines: children are found by binary search, so a class
    of a hundred methods costs a few node visits for a one-line change, and no node is visited that
    encloses none of the lines."""

    def __init__(self, version: Version, found: dict[Declared, list[int]]) -> None:
        self.version, self.found, self.types = version, found, list[Declared]()

    def text(self, node: tree_sitter.Node | None) -> str:
        return "" if node is None else self.version.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def scope(self, node: tree_sitter.Node, namespace: str, wanted: list[int], types_only: bool = False) -> None:
        """Statements of a file, a braced namespace or a block: class-likes, functions, constants.

        `namespace X;` holds until the next such statement: each statement found takes the last one
        before it."""
        children = node.named_children
        statements = [(index, strip_leading(self.text(child.child_by_field_name("name"))))
                      for index, child in enumerate(children)
                      if child.type == "namespace_definition" and child.child_by_field_name("body") is None]
        positions = [index for index, _ in statements]
        for index, child, span, inside in _over(node, wanted, self.text):
            before = bisect.bisect_left(positions, index) - 1
            self.statement(child, statements[before][1] if before >= 0 else namespace, span, inside, types_only)

    def statement(self, child: tree_sitter.Node, namespace: str, span: tuple[int, int], inside: list[int],
                  types_only: bool) -> None:
        kind = child.type
        if kind == "namespace_definition":
            body = child.child_by_field_name("body")
            if body is not None:
                self.scope(body, strip_leading(self.text(child.child_by_field_name("name"))), inside, types_only)
        elif kind in _CLASS_LIKE:
            self.class_like(child, namespace, _CLASS_LIKE[kind], span, inside, types_only)
        elif kind in _BLOCKS:
            self.scope(child, namespace, inside, types_only)
        elif types_only:
            return
        elif kind == "function_definition":
            self.add("function", join(namespace, self.text(child.child_by_field_name("name"))), span, inside)
        elif kind == "const_declaration":
            self.elements(child, partial(join, namespace), "constant", span, inside)

    def class_like(self, node: tree_sitter.Node, namespace: str, kind: str, span: tuple[int, int],
                   inside: list[int], types_only: bool) -> None:
        fqn = join(namespace, self.text(node.child_by_field_name("name")) or "?")
        self.types.append(Declared(kind, fqn, *span))
        if types_only:
            return
        body = next((c for c in node.named_children if c.type in _BODIES), None)
        rest = self.members(body, fqn, inside) if body is not None else inside
        if rest:
            self.add(kind, fqn, span, rest)

    def members(self, body: tree_sitter.Node, owner: str, wanted: list[int]) -> list[int]:
        """Give each member the wanted lines it encloses; return the lines no member took (the class's)."""
        taken: set[int] = set()
        for _, child, span, inside in _over(body, wanted, self.text):
            kind = child.type
            if kind == "method_declaration":
                self.add("method", f"{owner}::{self.text(child.child_by_field_name('name'))}", span, inside)
            elif kind == "property_declaration":
                self.elements(child, partial(_member, owner, "$"), "property", span, inside)
            elif kind == "const_declaration":
                self.elements(child, partial(_member, owner, ""), "constant", span, inside)
            elif kind == "enum_case":
                self.add("enum_case", f"{owner}::{self.text(child.child_by_field_name('name'))}", span, inside)
            else:
                continue  # `use Trait;` and the like: the class's own lines
            taken.update(inside)
        return [line for line in wanted if line not in taken]

    def elements(self, node: tree_sitter.Node, name_of: Callable[[str], str], kind: str, span: tuple[int, int],
                 inside: list[int]) -> None:
        """`public $a = 1, $b;` / `const A = 1, B = 2;`: each line to the element on it (else the first)."""
        elements = [c for c in node.named_children if c.type in ("property_element", "const_element")]
        if not elements:
            return
        names = [self.text(e.child_by_field_name("name") or (e.named_children[0] if e.named_children else None))
                 for e in elements]
        for line in inside:
            index = next((i for i, e in enumerate(elements) if _lines(e)[0] <= line <= _lines(e)[1]), 0)
            self.add(kind, name_of(names[index]), span, [line])

    def add(self, kind: str, fqn: str, span: tuple[int, int], lines: list[int]) -> None:
        self.found.setdefault(Declared(kind, fqn, *span), []).extend(lines)


def _member(owner: str, sigil: str, name: str) -> str:
    return f"{owner}::{sigil}{name.lstrip('$')}"


def _over(node: tree_sitter.Node, wanted: list[int], text: Callable[[tree_sitter.Node | None], str]
          ) -> Iterator[tuple[int, tree_sitter.Node, tuple[int, int], list[int]]]:
    """The named children of `node` that enclose wanted lines (a docblock counts with the declaration
    after it), each with its index, span and those lines, found by binary search over the children."""
    count = node.named_child_count
    index, line_at = 0, 0
    while line_at < len(wanted) and index < count:
        index = _first_ending_at(node, index, count, wanted[line_at])
        if index >= count:
            return
        child = node.named_child(index)
        assert child is not None
        if child.type == "comment":
            following = node.named_child(index + 1) if index + 1 < count else None
            if following is None or not _is_docblock(text(child)):
                index += 1
                continue
            span = (child.start_point[0] + 1, _lines(following)[1])
            child, index = following, index + 1
        else:
            span = _span(child, node.named_child(index - 1) if index else None, text)
        inside = _within(wanted, span)
        if inside:
            yield index, child, span, inside
        index += 1
        line_at = bisect.bisect_right(wanted, span[1])


def _first_ending_at(node: tree_sitter.Node, low: int, high: int, line: int) -> int:
    """The first child index in [low, high) whose last line is at or after `line`."""
    while low < high:
        middle = (low + high) // 2
        child = node.named_child(middle)
        if child is not None and child.end_point[0] + 1 < line:
            low = middle + 1
        else:
            high = middle
    return low


def _span(child: tree_sitter.Node, previous: tree_sitter.Node | None,
          text: Callable[[tree_sitter.Node | None], str]) -> tuple[int, int]:
    """A declaration's lines, with the docblock before it (the comment right before it, as PHP reads it)."""
    first, last = _lines(child)
    if previous is not None and previous.type == "comment" and _is_docblock(text(previous)):
        first = previous.start_point[0] + 1
    return first, last


def _lines(node: tree_sitter.Node) -> tuple[int, int]:
    return node.start_point[0] + 1, node.end_point[0] + 1


def _within(wanted: list[int], span: tuple[int, int]) -> list[int]:
    return wanted[bisect.bisect_left(wanted, span[0]):bisect.bisect_right(wanted, span[1])]


def _is_docblock(text: str) -> bool:
    return text.startswith("/**")


_TYPES = frozenset({"class", "interface", "trait", "enum"})
_OUTSIDE = frozenset({"module", "namespace"})  # they enclose everything; PHP's reader names no namespace either
# the word before a declared name, by kind (`def name`, `class Name`, `function name`, `const name =`)
_KEYWORDS: dict[str, tuple[bytes, ...]] = {
    "class": (b"class",), "interface": (b"interface",), "enum": (b"enum",), "type": (b"type",),
    "function": (b"def", b"function", b"function*", b"const", b"let", b"var"),
}


class DefinitionReader:
    """A language read through its extractor: a version's declarations are the definitions the code graph
    would store for it (same names, kinds and lines), their spans widened over the decorators and doc
    comment right above them, so a commit that only edits those touched the declaration."""

    def __init__(self, extractor: Extractor) -> None:
        self._extractor = extractor
        self._parser = extractor.new_parser()

    def parse(self, source: bytes, previous: Version | None = None, hunks: Sequence[Hunk] = (),
              path: str = "") -> Version:
        version = Version(source, None)
        tree = _reparse(self._parser, version, previous, hunks)
        rows = self._extractor.read(path, source, tree, "-", relations=False)
        declared = [Declared(kind, fqn, _widened(version, start), end)
                    for _, kind, fqn, _, _, start, end, *_ in rows.symbols if kind not in _OUTSIDE]
        version.state = (tree, declared)
        return version

    def enclosing(self, version: Version, lines: Iterable[int]) -> dict[Declared, list[int]]:
        declared = _declared(version)
        found: dict[Declared, list[int]] = {}
        for line in sorted(set(lines)):
            around = [d for d in declared if d.start_line <= line <= d.end_line]
            if around:  # the innermost: the one starting last (then ending first)
                found.setdefault(max(around, key=lambda d: (d.start_line, -d.end_line)), []).append(line)
        return found

    def types(self, version: Version) -> list[Declared]:
        return [d for d in _declared(version) if d.kind in _TYPES]

    def declares(self, version: Version, names: Iterable[tuple[str, str]]) -> set[str]:
        """A text search for each name after the word that declares it (any whole word for a method, whose
        declaration has none); as for PHP, a mention elsewhere can only keep a name "present"."""
        return {fqn for kind, fqn in names
                if _declares(version.source, _last_name(fqn).encode(), _KEYWORDS.get(kind, ()))}


def _declared(version: Version) -> list[Declared]:
    state = version.state
    return state[1] if isinstance(state, tuple) else []


def _last_name(fqn: str) -> str:
    return re.split(r"::|[.:/\\\\]", fqn)[-1]


def _widened(version: Version, start: int) -> int:
    """`start` moved up over the decorators (`@…`) and the `/** … */` comment right above it."""
    line = start
    while line > 1:
        text = version.text(line - 1).strip()
        if text.startswith(b"@"):
            line -= 1
        elif text.endswith(b"*/"):
            first = line - 1
            while first > 1 and not version.text(first).strip().startswith(b"/*"):
                first -= 1
            if not version.text(first).strip().startswith(b"/**"):
                break
            line = first
        else:
            break
    return line


READERS: dict[str, Callable[[], Reader]] = {
    "*.php": PhpReader,
    **{f"*{suffix}": partial(DefinitionReader, extractor)
       for extractor in EXTRACTORS if extractor.language != "php" for suffix in extractor.suffixes},
}


def reader_pattern(path: str) -> str | None:
    """The `READERS` pattern whose language reads `path`, if any."""
    return next((pattern for pattern in READERS if fnmatchcase(path, pattern)), None)
