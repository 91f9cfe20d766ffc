"""The context window engine: fill a role's token budget by priority, never past it.

Parts come in three priority tiers: the active diff, the scratchpad and execution output (checks'
stdout/stderr, cut to their tail by `execution_part`) first, then graph
signatures of callers and callees, then search chunks and project-memory hits (documents, commits,
discussions: the intent behind the code, whose symbols led to the signatures of the tier above).
Each part enters inside a boundary naming its origin. A part that does not fit is left out and named
in an "omitted" line (which is itself counted), so the model knows what it is not seeing; raw query
results never go past the budget.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import prompts
from graph.runtime.budget import estimate_tokens
from graph.runtime.trace import Trace

Kind = Literal["diff", "scratchpad", "execution", "signature", "search", "memory"]
PRIORITY: dict[str, int] = {"diff": 0, "scratchpad": 0, "execution": 0, "signature": 1, "search": 2, "memory": 2}
_TAGS: dict[str, str] = {"diff": "diff", "scratchpad": "scratchpad", "execution": "execution_output",
                         "signature": "signature", "search": "search_hit", "memory": "memory_hit"}


@dataclass(frozen=True)
class Part:
    kind: Kind
    origin: str  # e.g. "git diff", "graph:callers of App\\Repo::find", "search:src/Repo.php:10-40"
    text: str

    def render(self) -> str:
        return prompts.boundary(_TAGS[self.kind], self.origin, self.text)


@dataclass
class Assembled:
    text: str
    tokens: int
    budget: int
    included: list[Part] = field(default_factory=list)
    omitted: list[Part] = field(default_factory=list)

    def tokens_by_kind(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for part in self.included:
            counts[part.kind] += estimate_tokens(part.render())
        return dict(counts)


def _omitted_line(parts: Sequence[Part]) -> str:
    if not parts:
        return ""
    names = ", ".join(f"{p.kind} {p.origin}" for p in parts)
    return f"Omitted for the context budget ({len(parts)}): {names}. Ask with a tool if you need one."


def assemble(parts: Sequence[Part], budget_tokens: int) -> Assembled:
    """Parts in priority order (stable within a tier), each included only if it still fits."""
    if budget_tokens < 1:
        raise ValueError("budget_tokens must be >= 1")
    ordered = sorted(parts, key=lambda p: PRIORITY[p.kind])
    included: list[Part] = []
    omitted: list[Part] = []
    used = 0
    for part in ordered:
        cost = estimate_tokens(part.render()) + 1
        if used + cost <= budget_tokens:
            included.append(part)
            used += cost
        else:
            omitted.append(part)
    # the omitted line costs tokens too: give back the lowest-priority parts until it fits
    while True:
        text = "\n".join([*(p.render() for p in included), _omitted_line(omitted)]).strip()
        if estimate_tokens(text) <= budget_tokens or not included:
            break
        omitted.insert(0, included.pop())
    if estimate_tokens(text) > budget_tokens:
        text = f"Omitted for the context budget: {len(omitted)} parts."
        if estimate_tokens(text) > budget_tokens:
            raise ValueError(f"a budget of {budget_tokens} tokens cannot even say what was left out")
    return Assembled(text=text, tokens=estimate_tokens(text), budget=budget_tokens, included=included, omitted=omitted)


def assemble_traced(parts: Sequence[Part], budget_tokens: int, role: str, trace: Trace | None) -> Assembled:
    """`assemble`, recording the tokens per kind of this call in the task trace."""
    result = assemble(parts, budget_tokens)
    if trace is not None:
        trace.event("context", role=role, tokens=result.tokens, budget=budget_tokens,
                    by_kind=result.tokens_by_kind(), omitted=len(result.omitted))
    return result


def execution_part(origin: str, output: str, budget_tokens: int) -> Part:
    """Check output as a tier-1 part, cut to the tail that fits `budget_tokens`: a failing test's
    verdict and trace come last, and a whole log would crowd out everything else."""
    if estimate_tokens(output) <= budget_tokens:
        return Part("execution", origin, output)
    lines = output.splitlines()
    kept: list[str] = []
    used = 20  # the cut notice
    for line in reversed(lines):
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            break
        kept.append(line)
        used += cost
    cut = len(lines) - len(kept)
    return Part("execution", origin, f"[{cut} earlier lines cut for the context budget]\n" + "\n".join(reversed(kept)))
