"""build_graph(): wires the nodes; compiling (with a checkpointer) happens in the caller.

One graph serves every mode: START routes by mode, and each route adds its own nodes in its own
function below, so routes grow without touching each other.
"""

from __future__ import annotations

from typing import Any, get_args, get_type_hints

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
from graph.runtime.boundaries import NodeFn, traced_node, traced_route
from graph.runtime.tasklimits import with_limits
from graph.state import TaskState
from graph.status import with_status

Graph = StateGraph[TaskState, Deps]


def node(graph: Graph, name: str, run: NodeFn) -> None:
    """Add a node with its boundaries: budgets checked first, then the status comment, the state
    snapshot in the trace after it."""
    graph.add_node(name, with_limits(with_status(name, traced_node(name, run))))


def route(graph: Graph, source: str, decide: Any, targets: list[str] | None = None) -> None:
    """A conditional edge whose every decision is traced with its reason."""
    traced = traced_route(source, decide, routing.explain(source))
    # the router's Literal return type names its targets (LangGraph reads it from the router itself)
    targets = targets or list(get_args(get_type_hints(decide).get("return")))
    graph.add_conditional_edges(source, traced, targets or None)


def edge(graph: Graph, source: str, target: str) -> None:
    """A fixed edge, traced like a routed one (the story of a run shows every transition)."""
    route(graph, source, _always(target), [target])


def _always(target: str) -> Any:
    def next_step(state: TaskState) -> str:
        return target

    return next_step


def build_graph() -> Graph:
    graph = StateGraph(TaskState, context_schema=Deps)
    graph.add_conditional_edges(START, traced_route("START", routing.entry_node, routing.explain("START")),
                                sorted(set(map(str, routing.ENTRY_NODES.values()))))
    _investigation(graph)
    _need_info(graph)
    _analyze_route(graph)
    _implement_route(graph)
    _review_route(graph)
    return graph


def _investigation(graph: Graph) -> None:
    """decomposer → analyzer, shared by the analyze and implement routes."""
    node(graph, "decomposer", decomposer.run)
    node(graph, "analyzer", analyzer.run)
    route(graph, "decomposer", routing.after_decomposer)
    route(graph, "analyzer", routing.after_analyzer)


def _need_info(graph: Graph) -> None:
    """decomposer → ask (questions posted) → need_info (interrupt) → decomposer with the answer."""
    node(graph, "ask", ask.run)
    node(graph, "need_info", need_info.run)
    edge(graph, "ask", "need_info")
    edge(graph, "need_info", "decomposer")


def _analyze_route(graph: Graph) -> None:
    """analyzer → publisher (the report), or decomposer → publisher with questions when blocked."""
    node(graph, "publisher", publisher.run)
    edge(graph, "publisher", END)


def _implement_route(graph: Graph) -> None:
    """analyzer → planner ⇄ architect → coder → semantic_sync → gates → implement_reviewer → decide → delivery.

    The reviewer is the unified one under its own node name, so no edge of the review route can
    reach a writing role (the graph's shape says so, not only a routing function).
    Blocked or looping coder sessions go through planner_amend back to the coder; a rejected review
    or a failed gate starts a bounded fix round; every dead end ends in report_failure.
    """
    node(graph, "planner", planner.run)
    node(graph, "planner_refine", planner.refine)
    node(graph, "architect", architect.run)
    node(graph, "coder", coder.run)
    node(graph, "semantic_sync", semantic_sync.run)
    node(graph, "planner_amend", planner_amend.run)
    node(graph, "gates", gates.run)
    node(graph, "decide", delivery.decide_node)
    node(graph, "delivery", delivery.deliver)
    node(graph, "report_failure", delivery.report_failure)
    route(graph, "planner", routing.after_plan)
    route(graph, "planner_refine", routing.after_plan)
    route(graph, "architect", routing.after_architect)
    edge(graph, "coder", "semantic_sync")
    route(graph, "semantic_sync", routing.after_sync)
    route(graph, "planner_amend", routing.after_amend)
    node(graph, "implement_reviewer", reviewer.run)
    edge(graph, "gates", "implement_reviewer")
    edge(graph, "implement_reviewer", "decide")
    route(graph, "decide", routing.after_decide)
    edge(graph, "delivery", END)
    edge(graph, "report_failure", END)


def _review_route(graph: Graph) -> None:
    """review_intake → reviewer → review_publisher; never the coder. A missing branch ends at intake."""
    node(graph, "review_intake", review_intake.run)
    node(graph, "reviewer", reviewer.run)
    node(graph, "review_publisher", review_publisher.run)
    route(graph, "review_intake", routing.after_review_intake)
    route(graph, "reviewer", routing.after_reviewer, ["review_publisher"])
    edge(graph, "review_publisher", END)
