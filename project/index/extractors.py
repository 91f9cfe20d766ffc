"""Which extractor turns a file into code-graph rows, chosen by the file's suffix.

An extractor is two steps the build times apart: `parse` (tree-sitter, the cost every other phase
is compared with) and `rows` (definitions, imports and call sites of the parsed tree, as the rows
the store writes). The store and the build only ever go through this table, so supporting another
language is adding an `Extractor` here; nothing else in the build names a language.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter

from project.index import parse
from project.index.parse import FileRows


@dataclass(frozen=True)
class Extractor:
    language: str
    suffixes: tuple[str, ...]
    new_parser: Callable[[], tree_sitter.Parser]
    # (repository-relative path, bytes, the bytes parsed, content hash) -> the file's rows
    rows: Callable[[str, bytes, tree_sitter.Tree, str], FileRows]


EXTRACTORS = (Extractor("php", (".php",), parse.new_parser, parse.tree_rows),)
_BY_SUFFIX = {suffix: extractor for extractor in EXTRACTORS for suffix in extractor.suffixes}


def extractor_for(path: str) -> Extractor | None:
    """The extractor of `path`, or None when the graph holds no file of its kind."""
    return _BY_SUFFIX.get(os.path.splitext(path)[1])


class Parsers:
    """One parser per language, made on first use and reused for every later file of a batch."""

    def __init__(self) -> None:
        self._made: dict[str, tree_sitter.Parser] = {}

    def get(self, extractor: Extractor) -> tree_sitter.Parser:
        parser = self._made.get(extractor.language)
        if parser is None:
            parser = self._made[extractor.language] = extractor.new_parser()
        return parser
