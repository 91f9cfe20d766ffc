"""The code index as agent tools: search by meaning and text, line ranges, and the code graph.

Thin LangChain adapters over `graph.tools.code_search` and `project.index.queries` /
`project.index.contract`: each returns text the model can read — hits as `path:line`
lines, graph answers as compact JSON that includes the index status, so a missing or stale index
is said rather than hidden. Paths are validated by the functions they wrap and again by the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langchain_core.tools import BaseTool

from graph.tools import code_search as _search
from graph.tools.functiontool import function_tool
from project.index import queries
from project.index.contract import override_contract as _contract
from project.index.db import Connection
from project.index.embed import Embedder
from project.index.memory import MemoryHit
from project.index.search import Answer
from project.index.symbol_history import history, render

# What one hit shows: its first lines. A hit can be a 2,000-line table of data (984 of Symfony's 19,102
# chunks are over 200 lines, 304 over 20 kB), and eight of those in one answer would fill a small
# model's context; the header says which lines to read for the rest.
HIT_LINES = 60
HIT_CHARS = 4000
# The definitions one outline answer lists: a generated file can hold tens of thousands (about 150
# characters of JSON each), past any context; `more` says how many were left out.
OUTLINE_SYMBOLS = 300


def render_answer(answer: Answer) -> str:
    """Search hits as `path:start-end symbol` headers over their snippets (each cut to its first
    `HIT_LINES` lines / `HIT_CHARS` characters), then freshness notes."""
    blocks = [f"legs: {', '.join(answer.legs)}"] + [
        f"{h.path}:{h.start_line}-{h.end_line} {h.symbol or h.kind} (score {h.score:.3f}, {'+'.join(h.legs)})"
        f"\n{_shown(h.snippet, h.path, h.start_line, h.end_line)}"
        for h in answer.hits
    ]
    if not answer.hits:
        blocks.append("no hits")
    notes = list(answer.notes)
    if answer.freshness.stale_files:
        notes.append("changed since indexing (read them directly): " + ", ".join(answer.freshness.stale_files))
    if answer.freshness.degraded:
        notes.append(f"search degraded: {answer.freshness.degraded}")
    return "\n\n".join(blocks + notes)


def _shown(snippet: str, path: str, start: int, end: int) -> str:
    lines = snippet.split("\n")
    text = "\n".join(lines[:HIT_LINES])[:HIT_CHARS]
    if len(text) == len(snippet):
        return snippet
    return f"{text}\n[cut: read_file_snippet(\"{path}\", {start}, {end}) reads all {end - start + 1} lines]"


def render_memory(hits: list[MemoryHit], notes: list[str]) -> str:
    """Memory hits as `[kind] source § anchor` headers over their snippets, each with its entry points:
    the fully qualified symbols to hand to find_definition, find_callers or explore next."""
    blocks = []
    for h in hits:
        where = f"{h.source} § {h.anchor}" if h.anchor and h.kind == "document" else h.source
        lines = [f"[{h.kind}] {where} — {h.title} (score {h.score:.3f}, {'+'.join(h.legs)})", h.snippet]
        if h.symbols:
            lines.append("symbols: " + ", ".join(h.symbols))
        if h.paths and h.kind == "commit":
            lines.append("files: " + ", ".join(h.paths[:12]))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks or ["no hits"]) + "".join(f"\n\n{note}" for note in notes)


def search_tools(root: Path, conn: Connection | None, embedder: Embedder | None = None) -> dict[str, BaseTool]:
    """search_code and read_file_snippet always; semantic_search, search_memory and symbol_history when an
    index is open."""

    def search_code(pattern: str, regex: bool = False, ignore_case: bool = False, path_glob: str = "") -> str:
        """Exact text (or regex) search over the repository; answers `path:line: text` lines. path_glob
        narrows it: `*.py`, `src/**` (`*` crosses directories)."""
        hits = _search.search_code(root, pattern, regex=regex, ignore_case=ignore_case, path_glob=path_glob)
        return "\n".join(f"{m.path}:{m.line}: {m.text}" for m in hits) or "no matches"

    def read_file_snippet(path: str, start_line: int = 1, end_line: int = 0) -> str:
        """Numbered lines of a repository file; end_line 0 reads to the end (capped)."""
        snip = _search.read_file_snippet(root, path, start_line, end_line)
        return f"{snip.text}\n[{snip.path}: lines {snip.start_line}-{snip.end_line} of {snip.total_lines}]"

    tools: list[Callable[..., str]] = [search_code, read_file_snippet]
    if conn is not None:

        def semantic_search(query: str, k: int = 8, path_glob: str = "") -> str:
            """Find code by what it does (full-text, code-graph and, when ready, vector search); answers
            path:lines with snippets, the legs that found each hit, and a note when a leg is absent.
            path_glob narrows it as in search_code."""
            return render_answer(_search.semantic_search(conn, root, query, embedder=embedder, k=k,
                                                         path_glob=path_glob))

        def search_memory(query: str, k: int = 8) -> str:
            """Search the project's memory: design docs and ADRs, commit messages, merged changes, closed
            issues and past review findings, for why and where something was decided. Each hit lists
            the code symbols it concerns (fully qualified): explore them, or find their callers, next."""
            return render_memory(*_search.search_memory(conn, query, embedder=embedder, k=k, root=root))

        def symbol_history(symbol: str, limit: int = 8) -> str:
            """The commits that changed one symbol (`Class::method`, a class or function; followed across
            renames and moves), newest first, each with its message, merge request or issue, and the
            hunk: why a line is there, when and why something changed."""
            return render(history(conn, root, symbol, limit=max(1, min(limit, 20)), hunk_lines=30))

        tools += [semantic_search, search_memory, symbol_history]
    return {f.__name__: function_tool(f) for f in tools}


def graph_tools(root: Path, conn: Connection) -> dict[str, BaseTool]:
    """Definitions, callers, callees, impact, outline, batched exploration and override contracts."""

    def find_definition(name: str) -> str:
        """Where a class, function or method (`Class::method`) is defined."""
        return queries.definition(conn, root, name).model_dump_json()

    def find_callers(fqn: str) -> str:
        """Call sites of a function or method, and the lines that hand it over to be called (a route's
        `[UserController::class, 'show']`, `Depends(get_db)`, `onClick={save}`, an Angular template's
        `(click)="checkout()"`, the tests naming a pytest fixture as a parameter): its full name, or a short
        one (`Cart::save`, Python's and TypeScript's `Cart.save`) that only one definition carries; the
        answer's note says how it was read, and what an empty answer leaves open."""
        return queries.callers(conn, root, fqn).model_dump_json()

    def find_callees(fqn: str) -> str:
        """What a fully qualified function or method calls."""
        return queries.callees(conn, root, fqn).model_dump_json()

    def impact(fqn: str, depth: int = 2) -> str:
        """Symbols that depend on `fqn`, transitively up to `depth` (overriders included); for a module (a
        Vue or Svelte component is one), the files importing it."""
        return queries.impact(conn, root, fqn, depth=depth).model_dump_json()

    def get_file_outline(path: str) -> str:
        """The declarations of a file with their line ranges (the first 300; `more` counts the rest)."""
        return queries.outline(conn, root, path, limit=OUTLINE_SYMBOLS).model_dump_json()

    def explore(names: list[str]) -> str:
        """Definitions, callers and callees of several symbols at once."""
        return queries.explore(conn, root, names).model_dump_json()

    def override_contract(method_fqn: str) -> str:
        """The exits (returns, throws, parent calls) of the parent method an override must honour."""
        return _contract(conn, root, method_fqn).model_dump_json()

    funcs = (find_definition, find_callers, find_callees, impact, get_file_outline, explore, override_contract)
    return {f.__name__: function_tool(f) for f in funcs}
