"""Conditional edges as pure functions of state."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Literal

from graph.nodes import bounds
from graph.state import TaskState

# Routes this build can run; the implement and review routes arrive with their roles.
AVAILABLE_MODES = frozenset({"analyze", "implement", "review"})

# The first node of each mode's route.
ENTRY_NODES: dict[Hashable, str] = {"analyze": "decomposer", "implement": "decomposer", "review": "review_intake"}


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
    """The route is chosen before any generation starts (three modes over shared infrastructure)."""
    check_mode(state["mode"])
    return state["mode"]


def entry_node(state: TaskState) -> str:
    """The first node of the task's route (START's edge, traced with the mode as its reason)."""
    return str(ENTRY_NODES[route_by_mode(state)])


def after_decomposer(state: TaskState) -> Literal["analyzer", "ask", "publisher"]:
    """No criteria: ask the author and wait while rounds remain, else report blocked. A model that gave
    no questions has nothing to ask (the blocked report says the answer missing was the model's)."""
    if state.get("criteria"):
        return "analyzer"
    return "ask" if state.get("may_ask") and state.get("questions") else "publisher"


def after_analyzer(state: TaskState) -> Literal["publisher", "planner"]:
    """The analyze route ends with the report; the implement route plans next."""
    return "planner" if state["mode"] == "implement" else "publisher"


# --- the implement route (docs/implement.md) --------------------------------------------------------

def _refine_or_fail(state: TaskState) -> Literal["planner_refine", "report_failure"]:
    return "planner_refine" if bounds.left(state, "architect") else "report_failure"


def after_plan(state: TaskState) -> Literal["architect", "planner_refine", "report_failure"]:
    """Code's plan problems go back to the planner before any architect call."""
    if state.get("plan") and not state.get("plan_feedback"):
        return "architect"
    return _refine_or_fail(state)


def after_architect(state: TaskState) -> Literal["coder", "planner_refine", "report_failure"]:
    return "coder" if state.get("architect", {}).get("approved") else _refine_or_fail(state)


def after_sync(state: TaskState) -> Literal["gates", "planner_amend", "report_failure"]:
    """Finished sessions go to the gates; blocked or looping ones to planner_amend; infrastructure stops."""
    end = state.get("coder", {}).get("end")
    if end == "finished":
        return "gates"
    return "report_failure" if end == "infrastructure" else "planner_amend"


def after_amend(state: TaskState) -> Literal["coder", "report_failure"]:
    return "report_failure" if state.get("failure") or not state.get("plan") else "coder"


def after_decide(state: TaskState) -> Literal["delivery", "coder", "report_failure"]:
    outcome = state.get("outcome")
    if outcome == "approved":
        return "delivery"
    return "coder" if outcome == "fix_round" and not state.get("failure") else "report_failure"


def after_review_intake(state: TaskState) -> Literal["reviewer", "__end__"]:
    """Review-only needs the code in git: without a checkout (missing branch) the route ends, replied."""
    return "reviewer" if state.get("workspace") else "__end__"


def after_reviewer(state: TaskState) -> str:
    """The review route publishes the review; the implement route goes on to its delivery."""
    if state["mode"] == "review":
        return "review_publisher"
    raise ModeUnavailable(f"the reviewer has no next step in mode {state['mode']!r}")


# --- why a transition happened, for the trace (graph/runtime/boundaries.traced_route) ---------------

def _feedback(state: TaskState) -> str:
    return "; ".join(state.get("plan_feedback", []))[:300] or "no plan"


_REASONS: dict[str, Callable[[TaskState], str]] = {
    "decomposer→analyzer": lambda s: f"{len(s.get('criteria', []))} acceptance criteria",
    "decomposer→ask": lambda s: f"no criteria yet: asking {len(s.get('questions', []))} questions",
    "decomposer→publisher": lambda s: (f"no criteria: the model gave no usable answer ({s.get('blocked_reason', '')})"
                                       if s.get("blocked_by") == "model"
                                       else "no criteria and nobody left to ask: a blocked report"),
    "analyzer→planner": lambda s: f"implement mode; {len(s.get('analysis', {}).get('affected_files', []))} "
                                  "affected files",
    "analyzer→publisher": lambda s: "analyze mode: the report",
    "→architect": lambda s: f"the plan passed code's checks ({len(s.get('plan', {}).get('items', []))} items)",
    "→planner_refine": lambda s: f"plan rejected: {_feedback(s)}",
    "architect→coder": lambda s: "the architect approved the plan",
    "semantic_sync→gates": lambda s: "the coder finished its checklist",
    "semantic_sync→planner_amend": lambda s: f"the coder ended {s.get('coder', {}).get('end')}: "
                                             f"{s.get('coder', {}).get('reason', '')}"[:300],
    "planner_amend→coder": lambda s: f"plan amended ({len(s.get('plan', {}).get('items', []))} items)",
    "decide→delivery": lambda s: "approved: the gates passed and the review approves",
    "decide→coder": lambda s: f"fix round {s.get('rounds', {}).get('review', 0)}: "
                              + "; ".join(s.get("review_problems", []))[:300],
    "→report_failure": lambda s: s.get("failure") or f"stopped: {_feedback(s)}",
    "review_intake→reviewer": lambda s: f"reviewing {s.get('review_base', '')[:12]}..HEAD",
    "review_intake→__end__": lambda s: "no checkout of the change's branch: replied and stopped",
}


def explain(source: str) -> Callable[[TaskState, str], str]:
    """The reason a router of `source` gives for choosing `target`, in the state's own terms."""

    def why(state: TaskState, target: str) -> str:
        reason = _REASONS.get(f"{source}→{target}") or _REASONS.get(f"→{target}")
        if reason is not None:
            return reason(state)
        return f"mode {state.get('mode')}" if source == "START" else "the route's next step"

    return why
