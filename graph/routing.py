"""Conditional edges as pure functions of state."""

from __future__ import annotations

from typing import Literal

from graph.state import TaskState


def after_decomposer(state: TaskState) -> Literal["analyzer", "publisher"]:
    """No criteria means the issue lacks information: report the questions instead of analysing."""
    return "analyzer" if state.get("criteria") else "publisher"
