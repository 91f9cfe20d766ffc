"""Retention: a finished task's checkpoints, trace and workspace are deleted after `retention_days`.

The task row stays (it is small, `forgebot tasks` lists it and the inbox keeps a task's delivery
id as long as the task). Every step is idempotent, so a pass that dies half-way is simply repeated
by the next one; the worker runs a pass once a day (`cleanup` below, an arq cron job).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from bot.tasks.checkpoints import delete_checkpoints
from bot.tasks.events import ForgeEvent
from bot.tasks.inbox import Inbox
from bot.worker.jobcontext import Job
from foundation.settings import Settings
from foundation.workspace import Workspaces, repo_key

log = logging.getLogger(__name__)

FINISHED = ("done", "failed", "cancelled")


@dataclass(frozen=True)
class Cleaned:
    tasks: int
    traces: int
    workspaces: int


async def expired_tasks(inbox: Inbox, retention_days: float, now: float) -> list[tuple[str, str]]:
    """(task id, event JSON) of finished tasks last changed more than `retention_days` ago."""
    cutoff = now - retention_days * 86400
    times = await inbox.task_times()
    return [
        (t.task_id, t.event_json)
        for t in await inbox.tasks()
        if t.state in FINISHED and times.get(t.task_id, (now, now))[1] < cutoff
    ]


async def clean(settings: Settings, inbox: Inbox, now: float | None = None) -> Cleaned:
    """Delete what expired tasks left behind: checkpoint threads, trace files, worktrees."""
    from graph.runtime.trace import trace_path

    expired = await expired_tasks(inbox, settings.durability.retention_days, time.time() if now is None else now)
    await delete_checkpoints(settings, [task for task, _ in expired])
    workspaces, traces, trees = Workspaces.for_settings(settings), 0, 0
    for task, event_json in expired:
        trace = trace_path(settings.data_dir, task)
        if trace.exists():
            trace.unlink()
            traces += 1
        if workspaces.task_path(task).exists():
            event = ForgeEvent.model_validate_json(event_json)
            await workspaces.cleanup(repo_key(event.forge, event.repo.project), task)
            trees += 1
    if expired:
        log.info("retention: %d tasks expired, %d traces and %d worktrees removed", len(expired), traces, trees)
    return Cleaned(len(expired), traces, trees)


async def cleanup(ctx: dict[str, Any]) -> int:
    """arq cron: one retention pass."""
    work = Job.of(ctx).worker
    return (await clean(work.settings, work.store())).tasks
