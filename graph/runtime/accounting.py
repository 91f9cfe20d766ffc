"""Token and cost accounting per role and per task, with the task's token and cost budgets.

Prices come from `LLMSettings.prices` (USD per million input and output tokens). A model without
a price is counted at 0 and listed in `unpriced`, so a footer never shows a made-up cost.

`Ledger.record` is the one place a model call is counted: it adds to the role's usage and to the
process's Prometheus counters (`foundation.metrics.record_tokens`). A node returns its ledger's
`snapshot()` as `usage`; `merge_usage` is that state key's reducer, so the task's usage is the sum
of every node's, whichever order they ran in — never the last node's alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from typing_extensions import TypedDict

from foundation.metrics import record_tokens, safe_label
from graph.runtime.budget import Exhausted


class RoleUsageRecord(TypedDict):
    """One role's calls, tokens and cost, as state and traces keep them."""

    calls: int
    input: int
    output: int
    cost_usd: float


class UsageRecord(TypedDict, total=False):
    """A ledger's snapshot, or their sum (`merge_usage`); empty before any model call."""

    tokens: int
    cost_usd: float
    unpriced: list[str]
    roles: dict[str, RoleUsageRecord]


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
    """Counts the model calls of one node; `exhausted()` says when what the task had left is spent.

    `token_budget` and `cost_budget` are what remained of the task's budgets when the node started
    (the factory in `graph.runtime.roles` computes them), so a session never starts from the full
    budget however much earlier roles spent.
    """

    token_budget: int
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    roles: dict[str, RoleUsage] = field(default_factory=dict)
    unpriced: set[str] = field(default_factory=set)
    cost_budget: float | None = None
    models: list[str] = field(default_factory=list)  # model names in call order

    def record(self, role: str, model: str, input_tokens: int, output_tokens: int) -> RoleUsage:
        usage = self.roles.setdefault(role, RoleUsage())
        usage.calls += 1
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        self.models.append(model)
        price = self.prices.get(model)
        cost = 0.0
        if price is None:
            self.unpriced.add(model)
        else:
            cost = (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
            usage.cost_usd += cost
        record_tokens(role, safe_label(model), input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost)
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
        if self.cost_budget is not None and self.cost_usd >= self.cost_budget:
            # Exhausted counts in integers: the cost budget is reported in micro-dollars
            return Exhausted(kind="cost", limit=round(self.cost_budget * 1e6), used=round(self.cost_usd * 1e6))
        return None

    def snapshot(self) -> UsageRecord:
        """A JSON-able summary for state and traces."""
        return {
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "unpriced": sorted(self.unpriced),
            "roles": {r: {"calls": u.calls, "input": u.input_tokens, "output": u.output_tokens,
                          "cost_usd": round(u.cost_usd, 6)} for r, u in self.roles.items()},
        }


_ROLE_FIELDS: tuple[Literal["calls", "input", "output"], ...] = ("calls", "input", "output")


def merge_usage(left: UsageRecord | None, right: UsageRecord | None) -> UsageRecord:
    """The `usage` reducer: per-role calls, tokens and cost added, `unpriced` lists merged.

    Totals are recomputed from the roles, so the footer's figures are always the per-role sum.
    """
    roles: dict[str, RoleUsageRecord] = {}
    parts = [part for part in (left, right) if part]
    for part in parts:
        for role, usage in (part.get("roles") or {}).items():
            into = roles.setdefault(role, {"calls": 0, "input": 0, "output": 0, "cost_usd": 0.0})
            for key in _ROLE_FIELDS:
                into[key] += int(usage.get(key, 0))
            into["cost_usd"] = round(into["cost_usd"] + float(usage.get("cost_usd", 0.0)), 6)
    unpriced = sorted({name for part in parts for name in part.get("unpriced", [])})
    return {
        "tokens": sum(r["input"] + r["output"] for r in roles.values()),
        "cost_usd": round(sum(r["cost_usd"] for r in roles.values()), 6),
        "unpriced": unpriced,
        "roles": roles,
    }


def usage_of(message: Any) -> tuple[int, int]:
    """(input, output) tokens from a LangChain message's usage metadata; (0, 0) when absent."""
    meta = getattr(message, "usage_metadata", None) or {}
    return int(meta.get("input_tokens", 0)), int(meta.get("output_tokens", 0))


def cost_text(cost_usd: float, tokens: int, unpriced: Sequence[str]) -> str:
    """A task's cost as an operator reads it, never a bare `$0.0000` that could mean two things.

    "free" when every model it called is priced at 0; "no price" when a model it called has no
    configured price (its calls are not in the sum); "—" before any model call.
    """
    if tokens <= 0 and cost_usd <= 0:
        return "—"
    if unpriced:
        return f"${cost_usd:.4f} + no price" if cost_usd > 0 else "no price"
    return f"${cost_usd:.4f}" if cost_usd > 0 else "free"
