"""Vue and Svelte components (`.vue`, `.svelte`): the code graph reads them as TypeScript, in place.

A Vue or Svelte application keeps most of its code in components: the composables, stores and helpers
a component calls are called from its `<script>` (`<script setup>`, `<script module>`) block and from
the expressions of its template. Without them the graph said a composable used by thirty components
had no callers, and `impact` that changing it touched nothing, which an agent takes as a fact.

A component is read in place (`readable`): its script blocks as they are, and each expression of its
template (Vue's `{{ total() }}`, `:items="visible(list)"`, `@click="save(item)"`; Svelte's
`{format(date)}`, `class={cn(a, b)}`, `{#if ready(x)}`) as a statement of its own, its delimiters
turned into `;`; every other byte becomes a space, newlines kept. The parse tree's byte offsets and
lines are then the file's own, and every reader that slices the file by a node's bytes (names,
signatures, search chunks) reads the file itself. A block is the raw text between a top-level
`<script …>` and the next `</script>`, as the frameworks' compilers (and HTML) read it; nothing inside
an HTML comment or a `<style>` block is read. Both blocks of a component are one module named by the
file's path with its suffix (`import Cart from "./Cart.vue"` names it so); a template's calls are
the module's. A template expression the grammar cannot read is the template's problem, not the
file's: only errors inside the script blocks make a component stale (`in_template`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

import tree_sitter

# what the top level of a component is scanned for: a comment, or the opening tag of a script or style block
# whose attributes may hold `>` in quotes (`generic="T extends Map<K, V>"`)
_TOP = re.compile(rb"""<!--|<(script|style)\b(?:[^>"']|"[^"]*"|'[^']*')*>""", re.IGNORECASE)
_CLOSE = {b"script": re.compile(rb"</script\s*>", re.IGNORECASE), b"style": re.compile(rb"</style\s*>", re.IGNORECASE)}
# every byte to a space but the line breaks, which keep the lines where they are
_BLANK = bytes(b if b in b"\r\n" else 0x20 for b in range(256))
_SEMICOLON, _OPEN_PAREN, _CLOSE_PAREN, _SPACE = b";() "
_LINE_BREAKS = b"\r\n"
Span = tuple[int, int]


def _blocks(source: bytes) -> tuple[list[Span], list[Span]]:
    """The script blocks' contents and the spans no template expression is read from (the script and
    style blocks, comments), each in source order. One pass from the top, as HTML reads it: a `<!--`
    inside a script block is the script's text, a `<script>` inside a comment is the comment's."""
    scripts: list[Span] = []
    closed: list[Span] = []
    at = 0
    while (found := _TOP.search(source, at)) is not None:
        tag = found.group(1)
        if tag is None:  # a comment, to its `-->` (or the end)
            end = source.find(b"-->", found.end())
            at = end + 3 if end >= 0 else len(source)
        else:
            closing = _CLOSE[tag.lower()].search(source, found.end())
            if tag.lower() == b"script":
                scripts.append((found.end(), closing.start() if closing is not None else len(source)))
            at = closing.end() if closing is not None else len(source)
        closed.append((found.start(), at))
    return scripts, closed


def _closing(source: bytes, start: int, close: bytes) -> int:
    """Where the expression opened just before `start` closes (`close`: b"}" or b"}}"), past nested braces
    and the strings and template literals inside it; -1 when it never does."""
    depth, at, end = 0, start, len(source)
    while at < end:
        byte = source[at]
        if byte in b"\"'`":
            at += 1
            while at < end and source[at] != byte:
                at += 2 if source[at] == 0x5C else 1  # a backslash escapes the next byte
        elif byte == 0x7B:  # {
            depth += 1
        elif byte == 0x7D:  # }
            if depth == 0 and source.startswith(close, at):
                return at
            depth -= 1
        at += 1
    return -1


def _keep(kept: bytearray, source: bytes, start: int, end: int) -> None:
    """Keep `source[start:end]` as an expression statement of its own: in parentheses on the blanked bytes
    around it (an object literal stays one: `value={{ start, end }}`), after a `;` on the byte before
    those when it is a blanked one (not a line break: two expressions a line apart then read as a call of
    a parenthesized expression, which is no call the graph records). A line break is never written over:
    the parenthesis goes on the nearest blanked byte past it (`{#if\ncond}`, `v-for="x in\nlist"`)."""
    kept[start:end] = source[start:end]
    before = start - 1
    while before > 0 and kept[before] in _LINE_BREAKS:
        before -= 1
    if before >= 0 and kept[before] not in _LINE_BREAKS:
        kept[before] = _OPEN_PAREN
        if before >= 1 and kept[before - 1] == _SPACE:
            kept[before - 1] = _SEMICOLON
    after = end
    while after < len(kept) and kept[after] in _LINE_BREAKS:
        after += 1
    if after < len(kept):
        kept[after] = _CLOSE_PAREN


# Svelte's tags: what each keeps of what follows its keyword (`{#each items as item}` keeps `items`)
_SVELTE_TAG = re.compile(rb"\s*(#if|:else if|#each|#await|#key|@html|@render|@const|@debug|\.\.\.|[#:/@])?\s*")
_SVELTE_CUT = {b"#each": re.compile(rb"\s+as\s"), b"#await": re.compile(rb"\s+then\b|\s+catch\b")}


def _svelte(source: bytes, kept: bytearray, closed: list[Span]) -> None:
    """Each `{expression}` of the markup and its attributes, and the expression of each `{#if …}`,
    `{#each … as x}`, `{#await …}`, `{#key …}`, `{@html …}`, `{@render …}`, `{@const …}`, `{...spread}`."""
    at = 0
    while (start := source.find(b"{", at)) >= 0:
        inside = _within(closed, start)
        if inside is not None:
            at = inside
            continue
        end = _closing(source, start + 1, b"}")
        if end < 0:
            return
        at = end + 1
        tag = _SVELTE_TAG.match(source, start + 1)
        assert tag is not None  # everything in it is optional
        keyword = tag.group(1)
        if keyword in (b"#", b":", b"/", b"@"):  # `{#snippet …}`, `{:else}`, `{/if}`: nothing to read
            continue
        first = tag.end()
        cut = _SVELTE_CUT.get(keyword or b"")
        stop = cut.search(source, first, end) if cut is not None else None
        _keep(kept, source, first, stop.start() if stop is not None else end)


_MUSTACHE = re.compile(rb"\{\{")
# a directive's value: `v-if="…"`, `:prop="…"`, `@click="…"`, `#slot="…"`, `v-bind:x='…'`
_DIRECTIVE = re.compile(rb"""\s(?:v-[\w\-]+|[:@#])[\w:.\-\[\]]*\s*=\s*("[^"]*"|'[^']*')""")
_V_FOR = re.compile(rb"\s(?:in|of)\s")


def _vue(source: bytes, kept: bytearray, closed: list[Span]) -> None:
    """Each `{{ expression }}` of the template and the value of each directive (`v-for` keeps its list)."""
    at = 0
    while (mustache := _MUSTACHE.search(source, at)) is not None:
        inside = _within(closed, mustache.start())
        if inside is not None:
            at = inside
            continue
        end = _closing(source, mustache.end(), b"}}")
        if end < 0:
            return
        _keep(kept, source, mustache.end(), end)
        at = end + 2
    for directive in _DIRECTIVE.finditer(source):
        if _within(closed, directive.start()) is not None:
            continue
        first, end = directive.start(1) + 1, directive.end(1) - 1
        if directive.group(0).lstrip().startswith(b"v-for"):
            listed = _V_FOR.search(source, first, end)
            first = listed.end() if listed is not None else end
        if first < end:
            _keep(kept, source, first, end)


def _within(spans: list[Span], at: int) -> int | None:
    """The end of the span of `spans` (sorted, not overlapping) holding `at`, else None."""
    index = bisect_right(spans, (at, 1 << 62)) - 1
    if index >= 0 and spans[index][0] <= at < spans[index][1]:
        return spans[index][1]
    return None


Markup = Callable[[bytes, bytearray, list[Span]], None]
MARKUP: dict[str, Markup] = {"vue": _vue, "svelte": _svelte}


def readable(source: bytes, markup: Markup | None = None) -> bytes:
    """`source` as TypeScript can read it in place: its script blocks, and with `markup` its template's
    expressions as statements, every other byte blanked (same length, same lines)."""
    kept = bytearray(source.translate(_BLANK))
    scripts, closed = _blocks(source)
    for start, end in scripts:
        kept[start:end] = source[start:end]
    if markup is not None:
        markup(source, kept, closed)
    return bytes(kept)


def in_template(source: bytes) -> Callable[[tree_sitter.Node], bool]:
    """Whether an error node lies outside the component's script blocks (a template expression's)."""
    scripts, _ = _blocks(source)
    return lambda error: _within(scripts, error.start_byte) is None


class ScriptParser:
    """A TypeScript parser that reads a component in place (see the module's docstring)."""

    def __init__(self, parser: tree_sitter.Parser, markup: Markup) -> None:
        self._parser, self._markup = parser, markup

    def parse(self, source: bytes, old_tree: tree_sitter.Tree | None = None, /) -> tree_sitter.Tree:
        text = readable(source, self._markup)
        return self._parser.parse(text) if old_tree is None else self._parser.parse(text, old_tree)
