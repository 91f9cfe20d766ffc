"""build_graph(): wires the nodes; compiling (with a checkpointer) happens in the caller."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from graph import routing
from graph.deps import Deps
from graph.nodes import analyzer, decomposer, publisher
from graph.state import TaskState


def build_graph() -> StateGraph[TaskState, Deps]:
    """The analyze route: decomposer → analyzer → publisher (decomposer → publisher when blocked)."""
    graph = StateGraph(TaskState, context_schema=Deps)
    graph.add_node("decomposer", decomposer.run)
    graph.add_node("analyzer", analyzer.run)
    graph.add_node("publisher", publisher.run)
    graph.add_edge(START, "decomposer")
    graph.add_conditional_edges("decomposer", routing.after_decomposer)
    graph.add_edge("analyzer", "publisher")
    graph.add_edge("publisher", END)
    return graph
