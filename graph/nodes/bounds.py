"""Bounds of the implement route: architect rounds, amendments, restarts, review rounds, tokens.

Every loop of the route passes through `spend`, so no path can run forever; the task's budgets
(`graph.runtime.tasklimits`: tokens, cost, minutes) bound all of them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graph.runtime.tasklimits import DEFAULT_REVIEW_ROUNDS
from graph.state import TaskState


@dataclass(frozen=True)
class Limits:
    architect: int = 3  # planner → architect rounds before the plan is given up
    amend: int = 2  # ADJUST_PLAN amendments
    restart: int = 1  # FULL_RESET restarts
    review: int = DEFAULT_REVIEW_ROUNDS  # fix rounds after gates or review


LIMITS = Limits()


def used(state: TaskState, kind: str) -> int:
    return int(state.get("rounds", {}).get(kind, 0))


def limit(state: TaskState, kind: str, limits: Limits = LIMITS) -> int:
    """The bound of `kind`; review rounds come from the task's limits (`.forgebot.yml` budgets)."""
    if kind == "review" and "max_review_rounds" in state.get("limits", {}):
        return int(state["limits"]["max_review_rounds"])
    return int(getattr(limits, kind))


def left(state: TaskState, kind: str, limits: Limits = LIMITS) -> bool:
    return used(state, kind) < limit(state, kind, limits)


def spend(state: TaskState, kind: str) -> dict[str, Any]:
    """The state update counting one more round of `kind` (TaskState merges `rounds` by kind)."""
    return {"rounds": {kind: used(state, kind) + 1}}


def tokens_left(state: TaskState, budget: int) -> int:
    return budget - int(state.get("tokens", 0))
