"""Node boundaries in the trace: snapshots after each node, transitions with the router's reason.

`traced_node(name, run)` wraps a node so its state after the update is snapshotted (keys and sizes)
in the task's trace, and an exception it raises is recorded (`error`: the node, the exception, its
reason, and the model failure's kind when a model call caused it); `traced_route(source, route,
explain)` wraps a conditional-edge function so each transition is recorded with its reason.
`graph_config` carries the recursion limit into every run, so a graph that cycles (review rounds,
amendments) stops with LangGraph's error, never silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphBubbleUp
from langgraph.runtime import Runtime, get_runtime

from foundation.llm import ModelCallError
from foundation.settings import LLMSettings
from graph.deps import Deps
from graph.runtime.trace import Trace
from graph.state import TaskState


class NodeFn(Protocol):
    """A node as LangGraph calls it (runtime by keyword)."""

    def __call__(self, state: TaskState, *, runtime: Runtime[Deps]) -> Awaitable[dict[str, Any]]: ...

R = TypeVar("R", bound=str)


def _trace(runtime: Runtime[Deps], state: TaskState) -> Trace:
    return Trace.open(runtime.context.settings.data_dir, state["task_id"])


def traced_node(name: str, run: NodeFn) -> NodeFn:
    async def node(state: TaskState, *, runtime: Runtime[Deps]) -> dict[str, Any]:
        try:
            update = await run(state, runtime=runtime)
        except GraphBubbleUp:  # a pause for an answer, not an error
            raise
        except Exception as exc:  # the trace says where the run broke, and whether the model's answer did it
            failure = exc.failure.kind if isinstance(exc, ModelCallError) else None
            _trace(runtime, state).event("error", node=name, error=type(exc).__name__,
                                         reason=" ".join(str(exc).split())[:300], model_failure=failure)
            raise
        _trace(runtime, state).snapshot(name, {**state, **update}, changed=update)
        return update

    node.__name__ = name
    node.__doc__ = run.__doc__
    return node


def traced_route(
    source: str, route: Callable[[TaskState], R], explain: Callable[[TaskState, str], str] | None = None,
) -> Callable[[TaskState], R]:
    """Record `source → target: reason` for every decision of `route` (pure otherwise).

    The trace's directory comes from the run's own context (`get_runtime`), as nodes get it.
    """

    def decide(state: TaskState) -> R:
        target = route(state)
        reason = explain(state, target) if explain else (route.__doc__ or route.__name__).strip().splitlines()[0]
        data_dir = get_runtime(Deps).context.settings.data_dir
        Trace.open(data_dir, state["task_id"]).node(source, target, reason)
        return target

    decide.__name__ = route.__name__
    return decide


def graph_config(settings: LLMSettings, thread_id: str) -> RunnableConfig:
    """The run config every graph invocation uses: its checkpoint thread and the recursion limit."""
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": settings.recursion_limit}
