"""build_graph(): wires the nodes; compiling (with a checkpointer) happens in the caller.

One graph serves every mode: START routes by mode, and each route adds its own nodes in its own
function below, so routes grow without touching each other.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph import routing
from graph.deps import Deps
from graph.nodes import (
    analyzer,
    architect,
    ask,
    coder,
    decomposer,
    delivery,
    gates,
    need_info,
    planner,
    planner_amend,
    publisher,
    review_intake,
    review_publisher,
    reviewer,
    semantic_sync,
)
from graph.state import TaskState
from graph.status import with_status


def build_graph() -> StateGraph[TaskState, Deps]:
    graph = StateGraph(TaskState, context_schema=Deps)
    graph.add_conditional_edges(START, routing.route_by_mode, routing.ENTRY_NODES)
    _investigation(graph)
    _need_info(graph)
    _analyze_route(graph)
    _implement_route(graph)
    _review_route(graph)
    return graph


def _investigation(graph: StateGraph[TaskState, Deps]) -> None:
    """decomposer → analyzer, shared by the analyze and implement routes."""
    graph.add_node("decomposer", with_status("decomposer", decomposer.run))
    graph.add_node("analyzer", with_status("analyzer", analyzer.run))
    graph.add_conditional_edges("decomposer", routing.after_decomposer)
    graph.add_conditional_edges("analyzer", routing.after_analyzer)


def _need_info(graph: StateGraph[TaskState, Deps]) -> None:
    """decomposer → ask (questions posted) → need_info (interrupt) → decomposer with the answer."""
    graph.add_node("ask", with_status("ask", ask.run))
    graph.add_node("need_info", with_status("need_info", need_info.run))
    graph.add_edge("ask", "need_info")
    graph.add_edge("need_info", "decomposer")


def _analyze_route(graph: StateGraph[TaskState, Deps]) -> None:
    """analyzer → publisher (the report), or decomposer → publisher with questions when blocked."""
    graph.add_node("publisher", with_status("publisher", publisher.run))
    graph.add_edge("publisher", END)


def _implement_route(graph: StateGraph[TaskState, Deps]) -> None:
    """analyzer → planner ⇄ architect → coder → semantic_sync → gates → implement_reviewer → decide → delivery.

    The reviewer is the unified one under its own node name, so no edge of the review route can
    reach a writing role (the graph's shape says so, not only a routing function).
    Blocked or looping coder sessions go through planner_amend back to the coder; a rejected review
    or a failed gate starts a bounded fix round; every dead end ends in report_failure.
    """
    graph.add_node("planner", with_status("planner", planner.run))
    graph.add_node("planner_refine", with_status("planner_refine", planner.refine))
    graph.add_node("architect", with_status("architect", architect.run))
    graph.add_node("coder", with_status("coder", coder.run))
    graph.add_node("semantic_sync", with_status("semantic_sync", semantic_sync.run))
    graph.add_node("planner_amend", with_status("planner_amend", planner_amend.run))
    graph.add_node("gates", with_status("gates", gates.run))
    graph.add_node("decide", with_status("decide", delivery.decide_node))
    graph.add_node("delivery", with_status("delivery", delivery.deliver))
    graph.add_node("report_failure", with_status("report_failure", delivery.report_failure))
    graph.add_conditional_edges("planner", routing.after_plan)
    graph.add_conditional_edges("planner_refine", routing.after_plan)
    graph.add_conditional_edges("architect", routing.after_architect)
    graph.add_edge("coder", "semantic_sync")
    graph.add_conditional_edges("semantic_sync", routing.after_sync)
    graph.add_conditional_edges("planner_amend", routing.after_amend)
    graph.add_node("implement_reviewer", with_status("implement_reviewer", reviewer.run))
    graph.add_edge("gates", "implement_reviewer")
    graph.add_edge("implement_reviewer", "decide")
    graph.add_conditional_edges("decide", routing.after_decide)
    graph.add_edge("delivery", END)
    graph.add_edge("report_failure", END)


def _review_route(graph: StateGraph[TaskState, Deps]) -> None:
    """review_intake → reviewer → review_publisher; never the coder. A missing branch ends at intake."""
    graph.add_node("review_intake", with_status("review_intake", review_intake.run))
    graph.add_node("reviewer", with_status("reviewer", reviewer.run))
    graph.add_node("review_publisher", with_status("review_publisher", review_publisher.run))
    graph.add_conditional_edges("review_intake", routing.after_review_intake)
    graph.add_conditional_edges("reviewer", routing.after_reviewer, ["review_publisher"])
    graph.add_edge("review_publisher", END)
