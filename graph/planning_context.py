"""Code context for the planner, coder and reviewer, filled by the context window engine.

The analyzer names files and symbols; the planner also needs what surrounds them: the signatures of
those symbols with their callers and callees (graph memory) and the code chunks that match the
criteria (search). `graph.runtime.context.assemble` fits them to the role's budget in priority
order and names what it left out; nothing is fed past the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from foundation.gitrunner import Repo, run_bytes
from graph.runtime.budget import estimate_tokens
from graph.runtime.context import Assembled, Part, assemble_traced
from graph.runtime.trace import Trace
from graph.tools.code_search import search_memory, semantic_search
from project import filetext
from project.index.db import connect
from project.index.embed import Embedder
from project.index.queries import explore

# share of the model's window the assembled code context may take; the rest is the fixed prompt,
# the issue, the analysis and the answer
CONTEXT_SHARE = 4


def budget_for(window_tokens: int, fixed_text: str) -> int:
    """Tokens left for code context: a quarter of the window, less the fixed text already there."""
    return max(256, window_tokens // CONTEXT_SHARE - estimate_tokens(fixed_text) // CONTEXT_SHARE)


def diff_part(workspace: Path, base: str) -> list[Part]:
    """The task's own changes so far (amendments plan around what is already applied)."""
    if not base:
        return []
    done = run_bytes(["diff", "--no-color", "--no-ext-diff", "--no-textconv", base], Repo.at(workspace))
    text = filetext.decode_lines(done.stdout) if done.returncode == 0 else ""
    return [Part("diff", f"git diff {base[:12]}", text)] if text else []


def graph_parts(index: Path, root: Path, symbols: list[str]) -> list[Part]:
    """Each named symbol's definition signature, then its callers and callees, one part per symbol."""
    if not symbols or not index.exists():
        return []
    conn = connect(index, vectors=False, readonly=True)
    try:
        result = explore(conn, root, symbols[:18], per_symbol=8)
    finally:
        conn.close()
    parts = []
    for item in result.items:
        lines = [f"{d.kind} {d.fqn} {d.signature} ({d.path}:{d.start_line}-{d.end_line})" for d in item.definitions]
        lines += [f"called from {c.caller or '(file)'} at {c.path}:{c.line}" for c in item.callers]
        lines += [f"calls {c.target_fqn or c.target_name} at {c.path}:{c.line}" for c in item.callees]
        if lines:
            parts.append(Part("signature", f"graph:{item.query}", "\n".join(lines)))
    return parts


def search_parts(index: Path, root: Path, query: str, embedder: Embedder | None, k: int = 8) -> list[Part]:
    """Code chunks matching the criteria, by every leg the index serves; a note says which ran."""
    if not query.strip() or not index.exists():
        return []
    conn = connect(index, readonly=True)
    try:
        answer = semantic_search(conn, root, query, embedder=embedder, k=k)
    finally:
        conn.close()
    hits = [
        Part("search", f"search:{h.path}:{h.start_line}-{h.end_line} ({'+'.join(h.legs)})", h.snippet)
        for h in answer.hits
    ]
    notes = [f"search legs: {', '.join(answer.legs)}", *answer.notes]
    return [Part("search", "search notes", "\n".join(notes)), *hits] if hits else []


MEMORY_HITS = 4
MEMORY_SYMBOLS = 6


def memory_parts(index: Path, query: str, embedder: Embedder | None) -> tuple[list[Part], list[str]]:
    """Discovery: project-memory hits for the criteria, and the
    graph symbols they name, whose signatures, callers and callees `graph_parts` then adds."""
    if not query.strip() or not index.exists():
        return [], []
    conn = connect(index, readonly=True)
    try:
        hits, _ = search_memory(conn, query, embedder=embedder, k=MEMORY_HITS)
    finally:
        conn.close()
    parts = [Part("memory", f"memory:{h.kind}:{h.source}" + (f" § {h.anchor}" if h.kind == "document" else ""),
                  "\n".join([h.title, h.snippet, *(["symbols: " + ", ".join(h.symbols)] if h.symbols else [])]))
             for h in hits]
    symbols = list(dict.fromkeys(s for h in hits for s in h.symbols))[:MEMORY_SYMBOLS]
    return parts, symbols


def notes_part(notes: dict[str, list[str]]) -> list[Part]:
    """The investigation's scratchpad (facts, paths, open questions), read again by later roles."""
    lines = [f"{kind}: {text}" for kind, texts in notes.items() for text in texts]
    return [Part("scratchpad", "investigation notes", "\n".join(lines))] if lines else []


def planning_context(
    workspace: Path, index: str, base: str, symbols: list[str], query: str, budget_tokens: int,
    embedder: Embedder | None = None, *, first: Sequence[Part] = (), role: str = "planner",
    trace: Trace | None = None,
) -> Assembled:
    """`first` (scratchpad, execution output), the diff, then graph signatures (of the named symbols,
    then of those project memory led to), then search chunks and memory hits, within `budget_tokens`;
    the tokens per tier go to the task trace."""
    parts = [*first, *diff_part(workspace, base)]
    if index:
        recalled, entry_points = memory_parts(Path(index), query, embedder)
        named = list(dict.fromkeys([*symbols[:12], *entry_points]))
        parts += graph_parts(Path(index), workspace, named)
        parts += search_parts(Path(index), workspace, query, embedder)
        parts += recalled
    return assemble_traced(parts, budget_tokens, role, trace)
