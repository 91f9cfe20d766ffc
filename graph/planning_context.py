"""The planner's code context, filled by the context window engine (seed 002) from the task index.

The analyzer names files and symbols; the planner also needs what surrounds them: the signatures of
those symbols with their callers and callees (graph memory) and the code chunks that match the
criteria (search). `graph.runtime.context.assemble` fits them to the role's budget in priority
order and names what it left out; nothing is fed past the budget.
"""

from __future__ import annotations

from pathlib import Path

from bot.gitrunner import Repo, run
from graph.index.db import connect
from graph.index.queries import explore
from graph.runtime.budget import estimate_tokens
from graph.runtime.context import Assembled, Part, assemble
from graph.tools.search import semantic_search

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
    done = run(["diff", "--no-color", "--no-ext-diff", "--no-textconv", base], Repo.at(workspace))
    return [Part("diff", f"git diff {base[:12]}", done.stdout)] if done.returncode == 0 and done.stdout else []


def graph_parts(index: Path, root: Path, symbols: list[str]) -> list[Part]:
    """Each named symbol's definition signature, then its callers and callees, one part per symbol."""
    if not symbols or not index.exists():
        return []
    conn = connect(index, vectors=False, readonly=True)
    try:
        result = explore(conn, root, symbols[:12], per_symbol=8)
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


def search_parts(index: Path, root: Path, query: str, k: int = 8) -> list[Part]:
    """Code chunks matching the criteria (lexical and graph legs: no embedder at planning time)."""
    if not query.strip() or not index.exists():
        return []
    conn = connect(index, readonly=True)
    try:
        answer = semantic_search(conn, root, query, k=k)
    finally:
        conn.close()
    return [Part("search", f"search:{h.path}:{h.start_line}-{h.end_line}", h.snippet) for h in answer.hits]


def planning_context(
    workspace: Path, index: str, base: str, symbols: list[str], query: str, budget_tokens: int
) -> Assembled:
    """Diff first, then graph signatures, then search chunks, within `budget_tokens`."""
    parts = diff_part(workspace, base)
    if index:
        parts += graph_parts(Path(index), workspace, symbols) + search_parts(Path(index), workspace, query)
    return assemble(parts, budget_tokens)
