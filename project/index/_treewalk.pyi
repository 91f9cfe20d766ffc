"""Compiled from treewalk.c by hatch_build.py (see project/index/treewalk.py)."""

import tree_sitter

TREE_SITTER_VERSION: str

def collect(
    root: tree_sitter.Node, table: bytes, names: tuple[str, ...], rules: bytes = ..., /
) -> list[tuple[int, int, str, tree_sitter.Node]]: ...
