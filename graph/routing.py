"""Conditional edges as pure functions of state."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Literal

from graph.state import TaskState

# Routes this build can run; the implement and review routes arrive with their roles.
AVAILABLE_MODES = frozenset({"analyze", "review"})

# The first node of each mode's route.
ENTRY_NODES: dict[Hashable, str] = {"analyze": "decomposer", "review": "review_intake"}


# Modes whose run starts on a read-only checkout of the default branch (the review route checks
# out the change's source branch in its own intake node).
CHECKOUT_MODES = frozenset({"analyze"})


class ModeUnavailable(ValueError):
    """The trigger asked for a route this build does not have."""


def check_mode(mode: str) -> None:
    if mode not in AVAILABLE_MODES:
        available = ", ".join(sorted(AVAILABLE_MODES))
        raise ModeUnavailable(f"mode {mode!r} is not available in this version (available: {available})")


def route_by_mode(state: TaskState) -> str:
    """The route is chosen before any generation starts (seed 000: three modes, shared infrastructure)."""
    check_mode(state["mode"])
    return state["mode"]


def after_decomposer(state: TaskState) -> Literal["analyzer", "ask", "publisher"]:
    """No criteria means the issue lacks information: ask and wait while rounds remain, else report blocked."""
    if state.get("criteria"):
        return "analyzer"
    return "ask" if state.get("may_ask") else "publisher"


def after_analyzer(state: TaskState) -> Literal["publisher"]:
    """The analyze route ends with the report."""
    return "publisher"


def after_review_intake(state: TaskState) -> Literal["reviewer", "__end__"]:
    """Review-only needs the code in git: without a checkout (missing branch) the route ends, replied."""
    return "reviewer" if state.get("workspace") else "__end__"


def after_reviewer(state: TaskState) -> str:
    """The review route publishes the review; the implement route (issue 9) adds its own target here."""
    if state["mode"] == "review":
        return "review_publisher"
    raise ModeUnavailable(f"the reviewer has no next step in mode {state['mode']!r}")
