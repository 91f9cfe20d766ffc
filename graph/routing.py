"""Conditional edges as pure functions of state."""

from __future__ import annotations

from typing import Literal

from graph.state import TaskState

# Routes this build can run; the implement and review routes arrive with their roles.
AVAILABLE_MODES = frozenset({"analyze"})


class ModeUnavailable(ValueError):
    """The trigger asked for a route this build does not have."""


def check_mode(mode: str) -> None:
    if mode not in AVAILABLE_MODES:
        raise ModeUnavailable(f"mode {mode!r} is not available in this version (available: analyze)")


def after_decomposer(state: TaskState) -> Literal["analyzer", "publisher"]:
    """No criteria means the issue lacks information: report the questions instead of analysing."""
    return "analyzer" if state.get("criteria") else "publisher"
