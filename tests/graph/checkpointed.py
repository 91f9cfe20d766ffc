"""A task's graph run in tests, the way the worker's job runs it: the product's checkpointer (SQLite in
the settings' data directory, with the serializer that constructs only allow-listed types), the job's
config (thread and recursion limit), `run_or_resume` and the session journal.

A route test through this helper meets what the job meets: state that does not survive the
checkpoint serializer, or a resume that depends on objects kept in memory, fails here too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.tasks.checkpoints import SqlJournal, open_checkpointer
from foundation.settings import Settings
from graph.builder import build_graph
from graph.deps import Deps
from graph.resume import run_or_resume
from graph.runtime.boundaries import graph_config
from graph.state import TaskState


async def run_task(settings: Settings, deps: Deps, start: TaskState | dict[str, Any], task_id: str,
                   answer: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Run (or resume, with `answer`) the task's thread; its final state and the nodes it has passed,
    in order, over every run of the thread so far."""
    async with open_checkpointer(settings) as saver:
        compiled = build_graph().compile(checkpointer=saver)
        config = graph_config(settings.llm, task_id)

        async def begin() -> TaskState:
            return start  # type: ignore[return-value]

        result = await run_or_resume(compiled, config, begin, replace(deps, journal=SqlJournal(saver)), answer)
        history = [s async for s in compiled.aget_state_history(config)]
    visited = [n for s in reversed(history) for n in s.next if n != "__start__"]
    return dict(result), visited
