"""Search chunks cut along the code graph's symbols, and the text each search leg sees.

One chunk per method or function body; one per class-like header (its lines with member bodies
collapsed to their signature line, so properties, constants and the method list stay); one per run of
top-level leftovers that holds code. Each chunk keeps path, line range and symbol so a hit can be
checked against source, and a content hash of what gets embedded so unchanged chunks keep their
vectors.
"""

from __future__ import annotations

import functools
import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from project.index.hierarchy import short_name
from project.index.model import Symbol

_CLASS_LIKE = frozenset({"class", "interface", "trait", "enum"})
_BODIES = frozenset({"method", "function"})
_DOC_COMMENT = re.compile(r"/\*\*.*?\*/", re.DOTALL)
_IDENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)")  # a group: `split` keeps identifiers at odd positions
# Bumped whenever `embed_text` changes: the content hash then changes with it, so no chunk keeps a
# vector embedded from other text (2: a Python or TypeScript member's class by its own name, special
# methods by what they do).
EMBED_TEXT_VERSION = "2"
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Methods a language calls by convention, not by name (PHP's magic methods, Python's special methods,
# a TypeScript/JavaScript class's constructor) say what they do in these words in their docblocks and
# docstrings ("Create a new ... instance", "Initialize the formatter", "Return the number of items"),
# so the name side of a chunk carries them too. Keys are lower case: PHP's method names ignore case.
_MAGIC = {
    "__construct": "construct constructor create new instance",
    "__destruct": "destruct destructor destroy",
    "__invoke": "invoke call handle",
    "__tostring": "to string convert",
    "__get": "get dynamic property",
    "__set": "set dynamic property",
    "__isset": "isset dynamic property exists",
    "__unset": "unset dynamic property remove",
    "__call": "call dynamic method",
    "__callstatic": "call static dynamic method",
    "__clone": "clone copy",
    "__serialize": "serialize",
    "__unserialize": "unserialize restore",
    # Python
    "__init__": "init initialize construct constructor create new instance",
    "__new__": "new create construct instance",
    "__del__": "del destroy finalize",
    "__call__": "call invoke",
    "__str__": "str string convert",
    "__repr__": "repr representation string",
    "__len__": "len length size count number",
    "__iter__": "iter iterate iterator",
    "__next__": "next iterate item",
    "__contains__": "contains membership",
    "__getitem__": "get item",
    "__setitem__": "set item",
    "__delitem__": "delete remove item",
    "__getattr__": "get dynamic attribute",
    "__setattr__": "set dynamic attribute",
    "__delattr__": "delete dynamic attribute",
    "__enter__": "enter context",
    "__exit__": "exit context close",
    "__aenter__": "enter context",
    "__aexit__": "exit context close",
    "__eq__": "eq equal compare",
    "__lt__": "lt less compare",
    "__hash__": "hash",
    "__bool__": "bool true",
    # TypeScript and JavaScript
    "constructor": "constructor construct create new instance",
}
# lines that open or close a file in any indexed language without saying what it does: PHP tags,
# namespace and `use` lines, imports (`import x`, `from m import x`, `import {…} from`), comments
_BOILERPLATE = re.compile(r"^\s*(<\?php|\?>|namespace\b|use\b|declare\b|import\b|from\s+\S+\s+import\b|"
                          r"[\"']use strict[\"'];?\s*$|//|#|/?\*|\*/|[{}]?\s*$)")


MAX_LINE_CHARS = 2000  # a longer line is cut in a chunk's text (see `chunk_file`)


def _start_line(symbol: Symbol) -> int:
    return symbol.start_line


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a file."""

    path: str
    start_line: int
    end_line: int
    symbol: str  # fqn of the symbol, or "" for top-level leftovers
    kind: str  # the symbol kind, or "file" for leftovers
    name: str
    text: str  # the source lines (the snippet shown to the agent)
    signature: str = ""

    @property
    def embed_text(self) -> str:
        """What the vector leg embeds: a plain-words header, then code with identifiers split.

        A sentence encoder's vocabulary is English; `getUserName` becomes one unknown word piece
        soup, `get User Name` three words it knows.
        """
        owner = owner_name(self.symbol)
        header = f"{self.kind} {name_words(self.name)}"
        if owner:
            header += f" of {words(owner)}"
        return f"{header}\n{split_identifiers(self.text)}"

    @property
    def content_hash(self) -> str:
        """A digest of everything `embed_text` is made from (cheaper than making it: a build hashes
        every chunk of the repository, and the text is only made for the chunks that get embedded)."""
        fields = (EMBED_TEXT_VERSION, self.path, self.symbol, self.kind, self.name, self.signature, self.text)
        return hashlib.sha256("\0".join(fields).encode()).hexdigest()


def words(identifier: str) -> str:
    """`getHTTPResponse_code` -> `get HTTP Response code`."""
    return " ".join(_CAMEL.findall(identifier))


def name_words(name: str) -> str:
    """The words a symbol's name stands for, magic methods spelled out."""
    return _MAGIC.get(name.lower(), words(name))


def owner_name(symbol: str) -> str:
    """The short name of the class-like a member's fqn names, in any language the graph reads: PHP's
    `App\\Http\\Kernel::handle`, Python's `pkg.mod.Outer::run` and TypeScript's
    `src/api/client:Client::get` are members of `Kernel`, `Outer` and `Client` ("" for no member). The
    module part is not the owner's name: its words would dilute what a question says of the class."""
    return short_name(symbol.rsplit("::", 1)[0]) if "::" in symbol else ""


def split_identifiers(text: str) -> str:
    """Replace every identifier by its camelCase/snake_case parts."""
    return _each_identifier(text, _split_one)


def lexical_terms(text: str) -> str:
    """The text, then the parts of each multi-word identifier as often as it occurs.

    Both `findById` and `find` match. Full-text ranking counts terms and document length, not term
    positions, so appending the parts scores exactly as writing them next to each identifier did,
    at a fraction of the cost (a base index runs this over every line of the repository).
    """
    extra = "".join(map(_parts_of, _IDENT.findall(text)))
    return f"{text}\n{extra}" if extra else text


def _each_identifier(text: str, replace: Callable[[str], str]) -> str:
    """`text` with every identifier replaced by `replace(identifier)`.

    A base index runs this over every line of a repository twice (millions of identifiers for
    10,000 files), so it splits once and looks identifiers up in a cache instead of calling a regex
    per match: the same few thousand names make up most of any code base.
    """
    pieces = _IDENT.split(text)
    pieces[1::2] = map(replace, pieces[1::2])
    return "".join(pieces)


@functools.lru_cache(maxsize=1 << 16)
def _split_one(identifier: str) -> str:
    return words(identifier) or identifier


@functools.lru_cache(maxsize=1 << 16)
def _parts_of(identifier: str) -> str:
    """The parts of a multi-word identifier, each followed by a space; "" for a one-word one."""
    parts = _CAMEL.findall(identifier)
    return "" if len(parts) <= 1 else " ".join(parts) + " "


def strip_docblocks(source: str) -> str:
    """Blank out `/** ... */` comments, keeping line numbers (used to test search without them)."""
    return _DOC_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)


def chunk_file(path: str, source: str, symbols: Sequence[Symbol], *, docblocks: bool = True) -> list[Chunk]:
    """Cut `source` (the file at `path`) into chunks along `symbols`.

    A chunk is whole lines, and a line longer than `MAX_LINE_CHARS` keeps only its start: the text is
    a snippet for a reader, and a long line shared by many definitions (minified code that slipped
    past `generated.left_out`) would otherwise be copied whole into the chunk of each of them.
    """
    text = source if docblocks else strip_docblocks(source)
    lines = [line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]} …" for line in text.splitlines()]
    members = sorted((s for s in symbols if s.kind in _BODIES), key=_start_line)
    starts = [m.start_line for m in members]
    chunks = [_body_chunk(path, lines, s, docblocks) for s in members]
    for owner in (s for s in symbols if s.kind in _CLASS_LIKE):
        inner = [m for m in members[bisect_left(starts, owner.start_line):bisect_right(starts, owner.end_line)]
                 if m.end_line <= owner.end_line]
        chunks.append(_header_chunk(path, lines, owner, inner))
    covered = [(s.start_line, s.end_line) for s in symbols if s.kind in _CLASS_LIKE | _BODIES]
    chunks.extend(_leftover_chunks(path, lines, covered))
    chunks.sort(key=lambda c: (c.start_line, c.end_line))
    return chunks


def _slice(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start - 1 : end])


def _body_chunk(path: str, lines: list[str], symbol: Symbol, docblocks: bool) -> Chunk:
    text = _slice(lines, symbol.start_line, symbol.end_line)
    if docblocks and symbol.docblock and symbol.docblock.strip() not in text:
        text = f"{symbol.docblock.strip()}\n{text}"
    return Chunk(
        path, symbol.start_line, symbol.end_line, symbol.fqn, symbol.kind, symbol.name, text, symbol.signature
    )


def _header_chunk(path: str, lines: list[str], owner: Symbol, members: list[Symbol]) -> Chunk:
    """The class-like's own lines; each member body shrinks to its first line."""
    hidden: set[int] = set()
    reached = 0  # members come in order of their first line: one nested in another adds nothing
    for member in members:
        if member.end_line > reached:
            hidden.update(range(max(member.start_line, reached) + 1, member.end_line + 1))
            reached = member.end_line
    kept = [
        lines[n - 1]
        for n in range(owner.start_line, min(owner.end_line, len(lines)) + 1)
        if n not in hidden and lines[n - 1].strip()
    ]
    return Chunk(
        path,
        owner.start_line,
        owner.end_line,
        owner.fqn,
        owner.kind,
        owner.name,
        "\n".join(kept),
        owner.signature,
    )


def _leftover_chunks(path: str, lines: list[str], covered: list[tuple[int, int]]) -> list[Chunk]:
    """Runs of lines outside every class-like and function that hold real code, trimmed to it."""
    chunks: list[Chunk] = []
    following = 1  # the first line after the last covered range
    for start, end in [*_merged(covered), (len(lines) + 1, len(lines) + 1)]:
        if start > following:
            chunk = _code_run(path, lines, following, start - 1)
            if chunk is not None:
                chunks.append(chunk)
        following = max(following, end + 1)
    return chunks


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _code_run(path: str, lines: list[str], first: int, last: int) -> Chunk | None:
    """The lines `first`..`last` without the boilerplate at either end, or None if nothing else."""
    start = next((n for n in range(first, last + 1) if not _BOILERPLATE.match(lines[n - 1])), None)
    if start is None:
        return None
    end = next(n for n in range(last, start - 1, -1) if not _BOILERPLATE.match(lines[n - 1]))
    return Chunk(path, start, end, "", "file", path.rsplit("/", 1)[-1], _slice(lines, start, end))
