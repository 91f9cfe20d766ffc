"""Budgets: token estimates, fitting text to a budget, and tool-call limits that scale with the task.

The token estimate is deliberately pessimistic (UTF-8 bytes / 3) and needs no tokenizer download;
a budget computed with it holds for every real tokenizer we have met. Limits are a resource
heuristic: `min(max, base + per_criterion × criteria)` for investigation roles and
`min(max, base + per_item × open items)` for the coder. Exhaustion is always visible: callers get
an `Exhausted` record to turn into the matching orchestration fragment, never a silent cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foundation.settings import LLMSettings

RESEARCH_ROLES = frozenset({"analyzer", "architect", "reviewer"})


def estimate_tokens(text: str) -> int:
    """UTF-8 bytes / 3, rounded up: over-counts English and code, never under-counts much."""
    return -(-len(text.encode("utf-8")) // 3)


@dataclass(frozen=True)
class Fit:
    """What fitted and what did not; `dropped` is reported to the model, never hidden."""

    kept: list[str]
    dropped: int
    tokens: int


def fit_to_budget(texts: Sequence[str], budget_tokens: int) -> Fit:
    """Keep texts in order while they fit; stop at the first that does not (order is priority)."""
    if budget_tokens < 0:
        raise ValueError("budget_tokens must be >= 0")
    kept: list[str] = []
    used = 0
    for text in texts:
        cost = estimate_tokens(text)
        if used + cost > budget_tokens:
            break
        kept.append(text)
        used += cost
    return Fit(kept=kept, dropped=len(texts) - len(kept), tokens=used)


def call_budget(settings: LLMSettings, role: str, *, criteria: int = 0, open_items: int = 0) -> int:
    """Tool calls allowed for one session of `role`."""
    if criteria < 0 or open_items < 0:
        raise ValueError("criteria and open_items are counts")
    if role == "coder":
        return min(settings.coder_max_calls, settings.coder_base_calls + settings.coder_calls_per_item * open_items)
    if role in RESEARCH_ROLES:
        scaled = settings.research_base_calls + settings.research_calls_per_criterion * criteria
        return min(settings.research_max_calls, scaled)
    raise ValueError(f"role {role!r} has no tool loop, so no call budget")


@dataclass(frozen=True)
class Exhausted:
    """A budget ran out: which one, the limit, and what was used."""

    kind: str  # "calls" | "tokens"
    limit: int
    used: int
