"""Which extractor turns a file into code-graph rows, chosen by the file's suffix.

An extractor is two steps the build times apart: `parse` (tree-sitter, the cost every other phase
is compared with) and `rows` (definitions, imports and call sites of the parsed tree, as the rows
the store writes). The store, the build, the queries and project memory only ever go through this
table, so supporting another language is adding an `Extractor` here; nothing else names a language.
A repository holding several languages gets each file read by its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol

import tree_sitter

from project.index import parse, python_graph, script_graph, sfc, syntax
from project.index.generated import too_deep
from project.index.parse import FileRows
from project.index.syntax import ExitSyntax

if TYPE_CHECKING:
    from project.index.aliases import Aliases

_log = logging.getLogger(__name__)


class SourceParser(Protocol):
    """A file's bytes to its tree: tree-sitter's parser, or one that reads part of the file in place
    (`sfc.ScriptParser`: a Vue or Svelte component's script blocks and template expressions)."""

    def parse(self, source: bytes, old_tree: tree_sitter.Tree | None = None, /) -> tree_sitter.Tree: ...


class RowsReader(Protocol):
    """(repository-relative path, bytes, the bytes parsed, content hash, what the checkout's bare import
    specifiers name) -> the file's rows; without `relations`, its definitions alone (history reads every
    version of a file, and needs no call of it)."""

    def __call__(self, path: str, source: bytes, tree: tree_sitter.Tree, digest: str, aliases: Aliases | None,
                 /, *, relations: bool = True) -> FileRows: ...


@dataclass(frozen=True)
class Extractor:
    language: str  # the `files.language` column; one parser per language is kept per batch
    suffixes: tuple[str, ...]
    new_parser: Callable[[], SourceParser]
    rows: RowsReader
    # the member a class's instantiation calls (`new X`, `X()`): callers of a class are its callers
    constructor: str
    exits: ExitSyntax  # what an override contract reads in a method body
    # names compare without case (PHP's classes and functions); the graph's columns compare so, and a
    # query for a case-sensitive language keeps only the rows spelled as asked
    caseless: bool = False
    # the module a file is (`src/util/index.ts` is `src/util`), for a language whose bare imports the
    # checkout's configuration can map to its own modules (`aliases`); None when it cannot
    module_of: Callable[[str], str] | None = None
    # the languages whose code calls one another's (TypeScript, JavaScript and their components): a call
    # by name from a file of another family is never a call of this one's definitions
    family: str = ""

    def read(self, path: str, source: bytes, tree: tree_sitter.Tree, digest: str,
             aliases: Aliases | None = None, *, relations: bool = True) -> FileRows:
        """The file's rows (without `relations`, its definitions alone); a file the extractor fails on
        gets none, marked as not read cleanly.

        Repository files are untrusted input: a generated or hostile file must cost the graph that
        file, not the whole build (every other file of the checkout, and the task waiting on them).
        The store treats it as a file with syntax errors: its last good rows stay and it is listed
        as stale, with `failure` saying why. A tree nested deeper than `generated.MAX_NESTING` is not
        swept at all: the file is left out (`left_out` says why), as the store leaves out bundles.
        """
        deep = too_deep(tree)
        if deep:
            return FileRows(path, digest, self.language, False, [], [], left_out=deep)
        try:
            return self.rows(path, source, tree, digest, aliases, relations=relations)
        except OSError:
            raise  # the machine's trouble (a disk gone), not the file's: the build stops and rolls back
        except Exception as exc:  # any other is this file's: the build goes on without it
            reason = f"{type(exc).__name__}: {str(exc)[:200]}"
            _log.warning("code graph: %s not read, the %s extractor failed on it (%s)", path, self.language, reason)
            return FileRows(path, digest, self.language, True, [], [], failure=reason)


def _unaliased(rows: Callable[[str, bytes, tree_sitter.Tree, str], FileRows]) -> RowsReader:
    """A language whose imports name modules by their own rules alone (PHP's namespaces); its history is
    read by its own reader (`declarations.PhpReader`), so it always reads everything."""
    def read(path: str, source: bytes, tree: tree_sitter.Tree, digest: str, aliases: Aliases | None,
             /, *, relations: bool = True) -> FileRows:
        return rows(path, source, tree, digest)
    return read


def _component_parser(name: str) -> SourceParser:
    return sfc.ScriptParser(script_graph.parser_of(name)(), sfc.MARKUP[name])


EXTRACTORS = (
    Extractor("php", (".php",), parse.new_parser, _unaliased(parse.tree_rows), "__construct", syntax.PHP,
              caseless=True),
    Extractor("python", (".py",), python_graph.new_parser, python_graph.tree_rows, python_graph.CONSTRUCTOR,
              syntax.PYTHON),
    Extractor("typescript", (".ts", ".mts", ".cts"), script_graph.parser_of("typescript"),
              script_graph.rows_of("typescript"), script_graph.CONSTRUCTOR, syntax.SCRIPT,
              module_of=script_graph.module_name, family="script"),
    Extractor("tsx", (".tsx",), script_graph.parser_of("tsx"), script_graph.rows_of("tsx"),
              script_graph.CONSTRUCTOR, syntax.SCRIPT, module_of=script_graph.module_name, family="script"),
    Extractor("javascript", (".js", ".jsx", ".mjs", ".cjs"), script_graph.parser_of("javascript"),
              script_graph.rows_of("javascript"), script_graph.CONSTRUCTOR, syntax.SCRIPT,
              module_of=script_graph.module_name, family="script"),
    # a Vue or Svelte component's script blocks and template expressions, as TypeScript (`sfc`)
    *(Extractor(name, (f".{name}",), partial(_component_parser, name), script_graph.rows_of(name),
                script_graph.CONSTRUCTOR, syntax.SCRIPT, module_of=script_graph.module_name, family="script")
      for name in ("vue", "svelte")),
)
_BY_SUFFIX = {suffix: extractor for extractor in EXTRACTORS for suffix in extractor.suffixes}
# `git ls-files`-style patterns of every file some extractor reads
PATTERNS = tuple(f"*{suffix}" for suffix in _BY_SUFFIX)
CONSTRUCTORS = tuple(dict.fromkeys(extractor.constructor for extractor in EXTRACTORS))


def same_name(path: str, stored: str, asked: str) -> bool:
    """Whether `stored` (a name in the file at `path`) is the name `asked`, by the file language's rules."""
    if stored == asked:
        return True
    return caseless(path) and stored.lower() == asked.lower()


def caseless(path: str) -> bool:
    """Whether the language of the file at `path` compares names without case (PHP's classes and functions)."""
    extractor = extractor_for(path)
    return extractor is not None and extractor.caseless


def extractor_for(path: str) -> Extractor | None:
    """The extractor of `path`, or None when the graph holds no file of its kind."""
    return _BY_SUFFIX.get(os.path.splitext(path)[1])


def callable_from(path: str) -> tuple[str, ...]:
    """The suffixes of the files whose code can call the code of `path`: its language family's (empty
    when the graph does not read `path`)."""
    extractor = extractor_for(path)
    if extractor is None:
        return ()
    family = extractor.family or extractor.language
    return tuple(suffix for other in EXTRACTORS if (other.family or other.language) == family
                 for suffix in other.suffixes)


class Parsers:
    """One parser per language, made on first use and reused for every later file of a batch."""

    def __init__(self) -> None:
        self._made: dict[str, SourceParser] = {}

    def get(self, extractor: Extractor) -> SourceParser:
        parser = self._made.get(extractor.language)
        if parser is None:
            parser = self._made[extractor.language] = extractor.new_parser()
        return parser
