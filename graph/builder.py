"""build_graph(): wires the nodes; compiling (with a checkpointer) happens in the caller.

One graph serves every mode: START routes by mode, and each route adds its own nodes in its own
function below, so routes grow without touching each other.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph import routing
from graph.deps import Deps
from graph.nodes import analyzer, ask, decomposer, need_info, publisher, review_intake, review_publisher, reviewer
from graph.state import TaskState


def build_graph() -> StateGraph[TaskState, Deps]:
    graph = StateGraph(TaskState, context_schema=Deps)
    graph.add_conditional_edges(START, routing.route_by_mode, routing.ENTRY_NODES)
    _investigation(graph)
    _need_info(graph)
    _analyze_route(graph)
    _review_route(graph)
    return graph


def _investigation(graph: StateGraph[TaskState, Deps]) -> None:
    """decomposer → analyzer, shared by the analyze and implement routes."""
    graph.add_node("decomposer", decomposer.run)
    graph.add_node("analyzer", analyzer.run)
    graph.add_conditional_edges("decomposer", routing.after_decomposer)
    graph.add_conditional_edges("analyzer", routing.after_analyzer)


def _need_info(graph: StateGraph[TaskState, Deps]) -> None:
    """decomposer → ask (questions posted) → need_info (interrupt) → decomposer with the answer."""
    graph.add_node("ask", ask.run)
    graph.add_node("need_info", need_info.run)
    graph.add_edge("ask", "need_info")
    graph.add_edge("need_info", "decomposer")


def _analyze_route(graph: StateGraph[TaskState, Deps]) -> None:
    """analyzer → publisher (the report), or decomposer → publisher with questions when blocked."""
    graph.add_node("publisher", publisher.run)
    graph.add_edge("publisher", END)


def _review_route(graph: StateGraph[TaskState, Deps]) -> None:
    """review_intake → reviewer → review_publisher; never the coder. A missing branch ends at intake."""
    graph.add_node("review_intake", review_intake.run)
    graph.add_node("reviewer", reviewer.run)
    graph.add_node("review_publisher", review_publisher.run)
    graph.add_conditional_edges("review_intake", routing.after_review_intake)
    graph.add_conditional_edges("reviewer", routing.after_reviewer, ["review_publisher"])
    graph.add_edge("review_publisher", END)
