"""Vue and Svelte components (`.vue`, `.svelte`): the code graph reads their `<script>` blocks as TypeScript.

A Vue or Svelte application keeps most of its code in components: the composables, stores and helpers
a component calls are called from its `<script>` (`<script setup>`, `<script module>`) block. Without
them the graph said a composable used by thirty components had no callers, and `impact` that changing
it touched nothing, which an agent takes as a fact.

The blocks are read in place (`script_blocks`): every byte outside them becomes a space, newlines
kept, so the parse tree's byte offsets and lines are the file's own and every reader that slices the
file by a node's bytes (names, signatures, search chunks) reads the file itself. A block is the raw
text between a top-level `<script …>` and the next `</script>`, as Vue's compiler (and HTML) reads it;
one inside an HTML comment is not a block. Both blocks of a component (`<script>` and `<script setup>`,
Svelte's `<script module>` and `<script>`) are read, as one module named by the file's path with its
suffix (`import Cart from "./Cart.vue"` names it so). The template (Svelte's markup) is not read: a
component's uses there are not calls in the graph.
"""

from __future__ import annotations

import re

import tree_sitter

# an opening tag whose attributes may hold `>` in quotes (`generic="T extends Map<K, V>"`)
_OPEN = re.compile(rb"""<script\b(?:[^>"']|"[^"]*"|'[^']*')*>""", re.IGNORECASE)
_CLOSE = re.compile(rb"</script\s*>", re.IGNORECASE)
_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
# every byte to a space but the line breaks, which keep the lines where they are
_BLANK = bytes(b if b in b"\r\n" else 0x20 for b in range(256))


def script_blocks(source: bytes) -> bytes:
    """`source` with everything outside its `<script>` blocks blanked (same length, same lines)."""
    kept = bytearray(source.translate(_BLANK))
    comments = [match.span() for match in _COMMENT.finditer(source)]
    at = 0
    while (opening := _OPEN.search(source, at)) is not None:
        start = opening.end()
        closing = _CLOSE.search(source, start)
        end = closing.start() if closing is not None else len(source)
        if not any(first <= opening.start() < last for first, last in comments):
            kept[start:end] = source[start:end]
        at = closing.end() if closing is not None else len(source)
    return bytes(kept)


class ScriptParser:
    """A TypeScript parser that reads a component's script blocks in place (see the module's docstring)."""

    def __init__(self, parser: tree_sitter.Parser) -> None:
        self._parser = parser

    def parse(self, source: bytes, old_tree: tree_sitter.Tree | None = None, /) -> tree_sitter.Tree:
        blocks = script_blocks(source)
        return self._parser.parse(blocks) if old_tree is None else self._parser.parse(blocks, old_tree)
