"""Node boundaries reach the trace; the recursion limit stops a cycling graph visibly."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime

from foundation.settings import LLMSettings, Settings
from graph.deps import Deps
from graph.runtime.boundaries import graph_config, traced_node, traced_route
from graph.runtime.trace import format_trace, read_trace, trace_path
from graph.state import TaskState
from tests.fakes.forge import FakeForge
from tests.fakes.model_server import scripted


async def _review(state: TaskState, *, runtime: Runtime[Deps]) -> dict[str, Any]:
    return {"review": {"verdict": "request_changes"}, "tokens": 1}


def _after_review(state: TaskState) -> Literal["reviewer", "__end__"]:
    return "reviewer" if state.get("tokens", 0) < 3 else "__end__"


def _why(state: TaskState, target: str) -> str:
    return "changes requested, another round" if target == "reviewer" else f"round limit after {state['tokens']}"


def _graph(data_dir: Path, route: Any, explain: Any = None) -> Any:
    graph = StateGraph(TaskState, context_schema=Deps)
    graph.add_node("reviewer", traced_node("reviewer", _review))
    graph.add_edge(START, "reviewer")
    graph.add_conditional_edges("reviewer", traced_route("reviewer", route, explain))
    return graph.compile()


def _deps(data_dir: Path) -> Deps:
    settings = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
    return Deps(settings=settings, forge=FakeForge(), model_for=lambda role: scripted([]))  # type: ignore[arg-type]


async def test_rounds_are_traced_with_reasons_and_snapshots(tmp_path: Path) -> None:
    graph = _graph(tmp_path, _after_review, _why)
    await graph.ainvoke({"task_id": "t-b", "tokens": 0}, graph_config(LLMSettings(), "t-b"), context=_deps(tmp_path))
    story = format_trace(read_trace(trace_path(tmp_path, "t-b")))
    assert story.count("reviewer → reviewer: changes requested, another round") == 2
    assert "reviewer → __end__: round limit after 3" in story and story.count("state after reviewer:") == 3


async def test_recursion_limit_stops_a_cycle(tmp_path: Path) -> None:
    graph = _graph(tmp_path, lambda state: "reviewer")
    config = graph_config(LLMSettings(recursion_limit=10), "t-c")
    assert config["recursion_limit"] == 10
    with pytest.raises(GraphRecursionError):
        await graph.ainvoke({"task_id": "t-c", "tokens": 0}, config, context=_deps(tmp_path))
