"""semantic_sync: after the coder, the task's code index learns the task's edits (delta sync).

A failed sync is recorded as degraded search and the route goes on: the index is a help for later
roles, never a reason to lose the implementation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from foundation.gitrunner import GitTampered
from graph.deps import Deps
from graph.state import IndexSync, TaskState
from project.embedding import embedder_for
from project.index.embed import Embedder
from project.index.taskindex import sync_task, task_index_path


def sync(state: TaskState, data_dir: Path, embedder: Embedder | None = None) -> IndexSync:
    index = task_index_path(data_dir, state["task_id"])
    if not index.is_file():
        return {"status": "skipped", "detail": "this task has no code index"}
    try:
        report = sync_task(index, Path(state["workspace"]), embedder=embedder)
    except GitTampered:
        raise  # the worktree's git metadata was replaced: stop the task, never degrade quietly
    except Exception as exc:  # sync_task records its own failures; this catches opening the index
        return {"status": "degraded", "detail": f"sync failed: {type(exc).__name__}: {exc}"}
    if report.freshness.degraded:
        return {"status": "degraded", "detail": report.freshness.degraded}
    return {"status": "ok", "detail": f"{len(report.changed)} changed, {len(report.removed)} removed"}


async def run(state: TaskState, runtime: Runtime[Deps]) -> dict[str, Any]:
    settings = runtime.context.settings
    return {"index_sync": await asyncio.to_thread(sync, state, settings.data_dir, embedder_for(settings.embedder))}
