"""Token and cost accounting per role and per task, with the task's total token budget.

Prices come from `LLMSettings.prices` (USD per million input and output tokens). A model without
a price is counted at 0 and listed in `unpriced`, so a footer never shows a made-up cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graph.runtime.budget import Exhausted


@dataclass
class RoleUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Ledger:
    """Counts every model call of a task; `exhausted()` says when the task budget is spent."""

    token_budget: int
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    roles: dict[str, RoleUsage] = field(default_factory=dict)
    unpriced: set[str] = field(default_factory=set)

    def record(self, role: str, model: str, input_tokens: int, output_tokens: int) -> RoleUsage:
        usage = self.roles.setdefault(role, RoleUsage())
        usage.calls += 1
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        price = self.prices.get(model)
        if price is None:
            self.unpriced.add(model)
        else:
            usage.cost_usd += (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
        return usage

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.roles.values())

    @property
    def cost_usd(self) -> float:
        return sum(u.cost_usd for u in self.roles.values())

    def exhausted(self) -> Exhausted | None:
        if self.tokens >= self.token_budget:
            return Exhausted(kind="tokens", limit=self.token_budget, used=self.tokens)
        return None

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able summary for state and traces."""
        return {
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "unpriced": sorted(self.unpriced),
            "roles": {r: {"calls": u.calls, "input": u.input_tokens, "output": u.output_tokens,
                          "cost_usd": round(u.cost_usd, 6)} for r, u in self.roles.items()},
        }


def usage_of(message: Any) -> tuple[int, int]:
    """(input, output) tokens from a LangChain message's usage metadata; (0, 0) when absent."""
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))
