"""Starting, continuing and resuming a task's graph run on its checkpoint thread.

One entry point for the job (and `forgebot run`): a thread with no checkpoint starts from the
initial state; one with pending nodes (a crashed or retried job) continues; one paused in
`need_info` resumes only with an answer, via `Command(resume=...)`, so the nodes before the pause
do not run again. A finished thread is returned as it is: a duplicate delivery does nothing.

Once a run returns, every node it ran has its checkpoint, so the thread's session journals
(`graph.runtime.journal`, kept for a worker that dies inside a node) are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from graph.deps import Deps
from graph.state import TaskState


async def run_or_resume(
    compiled: CompiledStateGraph[TaskState, Deps, TaskState, TaskState], config: RunnableConfig,
    start: Callable[[], Awaitable[TaskState]],
    deps: Deps, answer: dict[str, str] | None = None,
) -> TaskState:
    """Run the thread of `config` as far as it can go now; `answer` resumes a paused one.

    `start` builds the initial state (and prepares the checkout); it is called only for a new thread.
    """
    snapshot = await compiled.aget_state(config)
    values = cast(dict[str, Any], snapshot.values or {})
    if values and not snapshot.next:
        return cast(TaskState, values)
    if snapshot.interrupts:
        if answer is None:  # still waiting: a redelivered trigger must not continue without an answer
            return cast(TaskState, values)
        # the time spent waiting for the answer is not the task's working time (`budgets.max_minutes`)
        payload: Any = Command(resume=answer, update={"waited_seconds": _since(snapshot.created_at)})
    else:
        payload = None if snapshot.next else await start()  # the checkout is prepared for fresh runs only
    result = await compiled.ainvoke(payload, config, context=deps, durability="sync")
    if deps.journal is not None:
        await deps.journal.drop(str(config.get("configurable", {})["thread_id"]))
    return cast(TaskState, result)


def _since(created_at: str | None) -> float:
    """Seconds since a checkpoint's ISO timestamp (when the task paused); 0 when unknown."""
    if not created_at:
        return 0.0
    return max(0.0, time.time() - datetime.fromisoformat(created_at).timestamp())
