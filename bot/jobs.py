"""arq job functions and the worker's construction; the only bot module that imports `graph`.

Errors are translated here, at the job's edge: a rate limit or an unavailable forge becomes a
deferred retry; anything else fails the task with one short comment carrying the task id.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any, cast

from arq import Retry
from arq.connections import RedisSettings
from arq.worker import Worker, func
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from bot.events import ForgeEvent
from bot.forge import Forge, ForgeNotFound, ForgeRateLimited, ForgeUnavailable, IssueRef, open_forge
from bot.queue import RUN_TASK
from bot.settings import Settings
from graph.builder import build_graph
from graph.deps import Deps
from graph.llm import chat_model
from graph.routing import ModeUnavailable, check_mode
from graph.state import TaskState

log = logging.getLogger(__name__)

ForgeFactory = Callable[[str], Forge]
ModelFactory = Callable[[str], BaseChatModel]


def task_id_for(event: ForgeEvent) -> str:
    """Derive the task id from the delivery, so a retried job resumes the same checkpoint thread."""
    return hashlib.sha256(event.delivery_id.encode()).hexdigest()[:16]


def initial_state(event: ForgeEvent, task_id: str) -> TaskState:
    return TaskState(
        task_id=task_id,
        mode=event.mode,
        forge=event.forge,
        repo=event.repo.model_dump(),
        number=event.number,
        title=event.title,
        body=event.body,
        started_at=time.time(),
        tokens=0,
        models=[],
    )


async def execute(settings: Settings, deps: Deps, event: ForgeEvent) -> TaskState:
    """Run the graph for `event` with the SQLite checkpointer, thread id = task id."""
    check_mode(event.mode)
    task_id = task_id_for(event)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(settings.checkpoint_path)) as saver:
        compiled = build_graph().compile(checkpointer=saver)
        config: RunnableConfig = {"configurable": {"thread_id": task_id}}
        snapshot = await compiled.aget_state(config)
        if snapshot.values and not snapshot.next:
            return cast(TaskState, snapshot.values)  # finished earlier: a duplicate run does nothing
        # a checkpoint with pending nodes resumes from where it stopped; otherwise start fresh
        start = None if snapshot.next else initial_state(event, task_id)
        if start is not None and event.mode == "implement":
            start.update(await prepare_workspace(settings, deps.forge, event, task_id))
        result = await compiled.ainvoke(start, config, context=deps, durability="sync")
        return cast(TaskState, result)


async def prepare_workspace(settings: Settings, forge: Forge, event: ForgeEvent, task_id: str) -> TaskState:
    """The implement route's worktree: the mirror refreshed, a task branch from the default branch."""
    from bot.workspace import Workspaces, repo_key
    from graph.coder.gitstate import git
    from graph.nodes.delivery import branch_name

    spaces = Workspaces.for_settings(settings)
    key = repo_key(event.forge, event.repo.project)
    await spaces.mirror(key, event.repo.clone_url, auth=await forge.git_credentials())
    branch = branch_name(event.number, event.title)
    path = await spaces.worktree(key, task_id, branch, f"origin/{event.repo.default_branch}")
    # a retried job reuses the worktree: its base is where the branch forked, not HEAD after step commits
    base = git(path, "merge-base", "HEAD", f"origin/{event.repo.default_branch}").strip()
    return TaskState(workspace=str(path), branch=branch, base=base)


async def run_task(ctx: dict[str, Any], event_json: str) -> str:
    """arq job: one task for one verified event."""
    settings: Settings = ctx["settings"]
    event = ForgeEvent.model_validate_json(event_json)
    forge = ctx["forge_factory"](event.forge)
    deps = Deps(settings=settings, forge=forge, model_for=ctx["model_factory"])
    log.info("task start delivery=%s task=%s mode=%s", event.delivery_id, task_id_for(event), event.mode)
    try:
        state = await execute(settings, deps, event)
    except ForgeRateLimited as exc:
        raise Retry(defer=exc.retry_after) from exc
    except ForgeUnavailable as exc:
        raise Retry(defer=min(60, 5 * ctx.get("job_try", 1))) from exc
    except ForgeNotFound:
        log.info("task gone delivery=%s: issue or project no longer exists", event.delivery_id)
        return "gone"
    except Exception as exc:
        await _report_failure(forge, event, exc)
        raise
    return str(state.get("outcome", "done"))


async def _report_failure(forge: Forge, event: ForgeEvent, exc: Exception) -> None:
    task = task_id_for(event)
    log.exception("task failed delivery=%s task=%s", event.delivery_id, task)
    # only our own user-facing errors carry their message; others could hold payload or paths
    reason = str(exc) if isinstance(exc, ModeUnavailable) else type(exc).__name__
    body = f"forgebot could not finish this task: {reason}.\n\n<sub>forgebot · task {task}</sub>"
    try:
        await forge.post_comment(IssueRef(repo=event.repo, number=event.number), body)
    except Exception:  # the failure note is best effort; the job still fails loudly
        log.exception("failure note not posted delivery=%s", event.delivery_id)


def build_worker(
    settings: Settings,
    redis_url: str,
    *,
    forge_factory: ForgeFactory | None = None,
    model_factory: ModelFactory | None = None,
    burst: bool = False,
    handle_signals: bool = True,
) -> Worker:
    """An arq worker running `run_task`, one job at a time (the seed's scaling model)."""
    ctx: dict[str, Any] = {
        "settings": settings,
        "forge_factory": forge_factory or (lambda kind: open_forge(settings, kind)),  # type: ignore[arg-type]
        "model_factory": model_factory or (lambda role: chat_model(settings.llm, role)),
    }
    return Worker(
        functions=[func(run_task, name=RUN_TASK)],
        redis_settings=RedisSettings.from_dsn(redis_url),
        ctx=ctx,
        max_jobs=1,
        job_timeout=settings.job_timeout,
        max_tries=settings.max_tries,
        burst=burst,
        poll_delay=0.05 if burst else 0.5,
        handle_signals=handle_signals,
        keep_result=3600,
    )
