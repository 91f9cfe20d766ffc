"""arq job functions and the worker's construction; the only bot module that imports `graph`.

Errors are translated here, at the job's edge: a rate limit or an unavailable forge becomes a
deferred retry; anything else fails the task with one short comment carrying the task id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from arq import Retry, cron
from arq.connections import ArqRedis, RedisSettings
from arq.worker import Worker, func
from langchain_core.language_models import BaseChatModel
from langgraph.errors import GraphRecursionError

from bot.authz import Authorizer, Decision
from bot.checkpoints import SqlJournal, open_checkpointer, spent
from bot.console.links import task_link
from bot.events import ForgeEvent
from bot.expiry import expire_waiting
from bot.idempotency import task_forge
from bot.identity import IdentityRefused, resolve
from bot.inbox import ACTIVE, Inbox, TaskRow, TaskStatus, open_inbox
from bot.jobcodec import PLAIN, JobCodec, JobFailed
from bot.queue import RUN_TASK, eviction_policy, job_handle
from bot.recovery import failure_marker, lease, reaper_loop
from bot.retention import cleanup
from bot.sweeper import sweep
from foundation.forge import (
    ChangeRef,
    CommentRef,
    Forge,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    IssueRef,
    Marker,
    open_forge,
    where_task_speaks,
)
from foundation.metrics import MODES, record_task
from foundation.settings import Settings
from foundation.workspace import WorkspaceFull, Workspaces
from graph import status
from graph.builder import build_graph
from graph.checkout import Checkout, prepare, release
from graph.deps import Deps
from graph.llm import ModelCallError, ModelConfigError, chat_model
from graph.redact import redact, secrets_of
from graph.resume import run_or_resume
from graph.routing import CHECKOUT_MODES, ModeUnavailable, check_mode
from graph.runtime.boundaries import graph_config
from graph.runtime.limits import BudgetExceeded
from graph.state import TaskState
from project.repoconfig import RepoConfigError

log = logging.getLogger(__name__)

ForgeFactory = Callable[[str], Forge]
ModelFactory = Callable[[str], BaseChatModel]


def task_id_for(event: ForgeEvent) -> str:
    """Derive the task id from the delivery, so a retried job resumes the same checkpoint thread."""
    return event.task_id


def initial_state(event: ForgeEvent, task_id: str) -> TaskState:
    return TaskState(
        task_id=task_id,
        mode=event.mode or "",
        forge=event.forge,
        repo=event.repo.model_dump(),
        number=event.number,
        title=event.title,
        body=event.body,
        started_at=time.time(),
        tokens=0,
        models=[],
    )


async def execute(
    settings: Settings,
    deps: Deps,
    event: ForgeEvent,
    answer: dict[str, str] | None = None,
    checkout: Checkout = prepare,
    status_comment: int = 0,
) -> TaskState:
    """Run the graph for `event` with the configured checkpointer, thread id = task id.

    A new thread starts on a fresh read-only checkout of the default branch; a thread paused for
    questions resumes only with `answer` (an authorized reply), from where it stopped.
    """
    check_mode(event.mode or "")  # resume and cancel events carry no mode; they never start a run here
    task_id = task_id_for(event)
    settings.data_dir.mkdir(parents=True, exist_ok=True)

    async def start() -> TaskState:
        state = initial_state(event, task_id)
        state["status_comment_id"] = status_comment
        state["console_url"] = task_link(settings.console, task_id)
        if event.mode in CHECKOUT_MODES:  # the review route checks out the change's branch itself
            state.update(await checkout(settings, deps.forge, event.repo, task_id))  # type: ignore[typeddict-item]
        elif event.mode == "implement":
            state.update(await prepare_workspace(settings, deps.forge, event, task_id))
        return state

    async with open_checkpointer(settings) as saver:
        compiled = build_graph().compile(checkpointer=saver)
        config = graph_config(settings.llm, task_id)  # the thread and the recursion limit
        result = await run_or_resume(compiled, config, start, replace(deps, journal=SqlJournal(saver)), answer)
    if result.get("outcome") != "need_info":
        await release(settings, event.repo, task_id)
    return result


async def prepare_workspace(settings: Settings, forge: Forge, event: ForgeEvent, task_id: str) -> TaskState:
    """The implement route's worktree: the mirror refreshed, a task branch from the default branch."""
    from foundation.gitrunner import git
    from foundation.workspace import Workspaces, repo_key
    from graph.checkout import index_with_memory
    from graph.nodes.delivery import branch_name

    spaces = Workspaces.for_settings(settings)
    key = repo_key(event.forge, event.repo.project)
    await spaces.mirror(key, event.repo.clone_url, auth=await forge.git_credentials())
    branch = branch_name(event.number, event.title)
    path = await spaces.worktree(key, task_id, branch, f"origin/{event.repo.default_branch}")
    # a retried job reuses the worktree: its base is where the branch forked, not HEAD after step commits
    base = git(path, "merge-base", "HEAD", f"origin/{event.repo.default_branch}").strip()
    indexed = await index_with_memory(settings, forge, event.repo, key, path, task_id)
    return TaskState(
        workspace=str(path), branch=branch, base=base, index=indexed["index"], database=indexed["database"]
    )


async def run_task(ctx: dict[str, Any], event_json: str) -> str:
    """arq job: under the worker's lease, authorize, then cancel, resume or start the task."""
    if "redis_url" not in ctx or "job_id" not in ctx:  # called directly (tests, `forgebot run`)
        return await _run_event(ctx, event_json)
    async with lease(ctx["redis_url"], ctx["job_id"], ctx["settings"].durability.lease_seconds):
        return await _run_event(ctx, event_json)


async def _run_event(ctx: dict[str, Any], event_json: str) -> str:
    event = ForgeEvent.model_validate_json(event_json)
    inbox: Inbox = ctx["inbox"]
    factory: ForgeFactory | None = ctx.get("forge_factory")
    forge = factory(event.forge) if factory else open_forge(ctx["settings"], event.forge, event.installation)
    try:
        # first, for every route: the repository as the forge names it; the payload's is never used
        event = event.model_copy(update={"repo": await resolve(ctx["settings"], forge, event)})
        decision = await ctx["authorizer"].decide(forge, event)
    except (ForgeRateLimited, ForgeUnavailable) as exc:
        raise _retry(ctx, exc) from exc
    except (IdentityRefused, ForgeNotFound) as exc:
        decision = Decision(False, f"repository: {exc}")
    if not decision.allowed:
        log.info("task refused delivery=%s reason=%s", event.delivery_id, decision.reason)
        if event.trigger in ("label", "command"):
            await inbox.set_state(event.task_id, "cancelled", f"refused: {decision.reason}", only_from=("queued",))
        await inbox.handled(event.delivery_id)
        return "refused"
    if event.trigger == "cancel":
        return await _cancel(ctx, forge, event)
    task = await (_resumable(ctx, event) if event.trigger == "reply" else _claim(ctx, forge, event))
    if task is None:
        await inbox.handled(event.delivery_id)
        return "skipped"
    return await _counted(task.mode, _run_claimed(ctx, forge, event, task))


async def _counted(mode: str, run: Awaitable[str]) -> str:
    """Count the task's end in the metrics (`forgebot_tasks_total`, its duration); a deferred retry is no end."""
    started = time.monotonic()
    outcome = "failed"
    try:
        outcome = await run
        return outcome
    except Retry:
        outcome = ""
        raise
    finally:
        if outcome and mode in MODES:
            record_task(mode, outcome, time.monotonic() - started)


async def _claim(ctx: dict[str, Any], forge: Forge, event: ForgeEvent) -> TaskRow | None:
    """Start the event's own task, or answer that another task is active on the item."""
    inbox: Inbox = ctx["inbox"]
    current = await inbox.task(event.task_id)
    if current is not None and current.state == "running" and current.job_id == event.delivery_id:
        return current  # an earlier try of this very job was deferred or its worker died: carry on
    if current is None or current.state != "queued":
        return None  # cancelled, finished or unknown: nothing to start
    claimed = await inbox.claim(event.task_id, event.delivery_id)
    if claimed is not None:
        return claimed
    other = await inbox.active_task(event.task_key, ("running", "waiting"))
    busy = other.task_id if other else "?"
    if await inbox.set_state(event.task_id, "cancelled", f"busy: task {busy} is active", only_from=("queued",)):
        word = "waiting for an answer" if other and other.state == "waiting" else "running"
        await _say(
            forge,
            event,
            f"Task {busy} is already {word} here; this request was not started. Comment `/cancel` to stop it first.",
            event.task_id,
            "busy",
        )
    return None


async def _resumable(ctx: dict[str, Any], event: ForgeEvent) -> TaskRow | None:
    """The waiting task a reply resumes, moved to running."""
    inbox: Inbox = ctx["inbox"]
    task = await inbox.active_task(event.task_key, ("waiting", "running"))
    if task is None:
        return None
    if task.state == "running":
        return task if task.job_id == event.delivery_id else None  # a reply while it runs is only a comment
    return await inbox.claim(task.task_id, event.delivery_id, from_state="waiting")


async def _run_claimed(ctx: dict[str, Any], forge: Forge, event: ForgeEvent, task: TaskRow) -> str:
    """Run (or resume) the graph for a running task and record how it ended."""
    inbox: Inbox = ctx["inbox"]
    settings: Settings = ctx["settings"]
    original = _stored(task, event)
    answer: dict[str, str] | None = None
    if event.trigger == "reply":  # same delivery id → same thread id → resume from the checkpoint
        original = original.model_copy(update={"comment": event.comment, "comment_id": event.comment_id})
        answer = {"author": event.actor.username, "body": event.comment}  # authorized above, like a trigger
    deps = Deps(settings=settings, forge=task_forge(forge, task.task_id), model_for=ctx["model_factory"])
    log.info("task start delivery=%s task=%s mode=%s", event.delivery_id, task.task_id, task.mode)
    acked = initial_state(original, task.task_id)
    acked["console_url"] = task_link(settings.console, task.task_id)
    trigger = CommentRef(target=target_of(event), id=event.comment_id) if event.comment_id else target_of(event)
    comment_id = await status.acknowledge(forge, acked, trigger, "resuming with your answer" if answer else "started")
    try:
        await _bound_workspaces(settings, inbox)  # before this task may add a worktree
        state = await execute(settings, deps, original, answer, ctx.get("checkout", prepare), comment_id)
    except (ForgeRateLimited, ForgeUnavailable) as exc:
        if ctx.get("job_try", 1) >= settings.max_tries:  # arq will not call us again: fail visibly
            await status.conclude(forge, acked, "failed")
            await _report_failure(forge, original, exc, secrets_of(settings))
            await _finish(inbox, task.task_id, event.delivery_id, "failed", type(exc).__name__, settings)
            raise
        raise _retry(ctx, exc) from exc
    except ForgeNotFound:
        log.info("task gone delivery=%s: issue or project no longer exists", event.delivery_id)
        await _finish(inbox, task.task_id, event.delivery_id, "failed", "gone", settings)
        return "gone"
    except (BudgetExceeded, GraphRecursionError) as exc:  # a limit ended the task: say which, do not retry
        used = exc.spent if isinstance(exc, BudgetExceeded) else {}
        await status.conclude(forge, TaskState(**{**acked, **used}), "stopped")  # type: ignore[typeddict-item]
        await _report_failure(forge, original, exc)
        await _finish(inbox, task.task_id, event.delivery_id, "failed", _stop_detail(exc), settings)
        return "stopped"
    except Exception as exc:
        await status.conclude(forge, acked, "failed")
        await _report_failure(forge, original, exc, secrets_of(settings))
        await _finish(inbox, task.task_id, event.delivery_id, "failed", type(exc).__name__, settings)
        raise
    outcome = str(state.get("outcome", "done"))
    await status.conclude(forge, state, outcome)
    final: TaskStatus = "waiting" if outcome == "need_info" else "done"
    await _finish(inbox, task.task_id, event.delivery_id, final, outcome, settings)
    return outcome


def _stored(task: TaskRow, event: ForgeEvent) -> ForgeEvent:
    """The event that started `task`, on the repository `event` resolved (same item, same project)."""
    return ForgeEvent.model_validate_json(task.event_json).model_copy(update={"repo": event.repo})


async def _bound_workspaces(settings: Settings, inbox: Inbox) -> None:
    """Keep mirrors and worktrees under `workspace.max_bytes`: finished tasks' worktrees, then idle
    mirrors, are pruned; active tasks (running, or waiting for an answer) keep theirs."""
    active = {t.task_id for state in ACTIVE for t in await inbox.tasks_in(state)}
    removed = await Workspaces.for_settings(settings).enforce_bound(active)
    if removed:
        log.info("workspace bound: pruned %s", ", ".join(removed))


async def _finish(inbox: Inbox, task_id: str, delivery_id: str, state: TaskStatus, detail: str,
                  settings: Settings | None = None) -> None:
    if settings is not None:  # what it spent, beside its state: listing tasks then reads no checkpoint
        async with open_checkpointer(settings) as saver:
            await inbox.spent(task_id, *await spent(saver, task_id))
    await inbox.set_state(task_id, state, detail, only_from=("running",))  # never over a /cancel
    await inbox.handled(delivery_id)


def _retry(ctx: dict[str, Any], exc: ForgeRateLimited | ForgeUnavailable) -> Retry:
    """arq's deferred retry; the task stays running so the next try carries on."""
    if isinstance(exc, ForgeRateLimited):
        return Retry(defer=exc.retry_after)
    return Retry(defer=min(60, ctx["settings"].durability.retry_seconds * ctx.get("job_try", 1)))


async def _cancel(ctx: dict[str, Any], forge: Forge, event: ForgeEvent) -> str:
    """Stop the item's active task: mark it cancelled and ask arq to abort its running job."""
    inbox: Inbox = ctx["inbox"]
    task = await inbox.active_task(event.task_key)
    if task is not None and await inbox.set_state(
        task.task_id, "cancelled", f"cancelled by {event.actor.username}", only_from=ACTIVE
    ):
        if task.state == "running" and "redis" in ctx:
            await _abort(ctx, task.job_id)
        if task.state != "queued":  # a queued task was never acknowledged: its "Cancelled" note says it all
            cancelled = _stored(task, event)
            await status.conclude(forge, initial_state(cancelled, task.task_id), "cancelled")
        await _say(
            forge,
            event,
            f"Cancelled task {task.task_id} at the request of @{event.actor.username}.",
            task.task_id,
            "cancel",
        )
    await inbox.handled(event.delivery_id)
    return "cancelled" if task is not None else "nothing to cancel"


async def _abort(ctx: dict[str, Any], job_id: str) -> None:
    """Ask arq to abort the job (the worker running it cancels it); do not wait for it to stop."""
    with contextlib.suppress(asyncio.TimeoutError, JobFailed):  # still running, or already failed
        await job_handle(job_id, ctx["redis"], ctx.get("codec", PLAIN)).abort(timeout=0, poll_delay=0.01)


def target_of(event: ForgeEvent) -> IssueRef | ChangeRef:
    """Where notes about the event's task go (`where_task_speaks`: the change for a `/review`, else the issue)."""
    return where_task_speaks(event.repo, event.number, target=event.target, mode=event.mode or "")


async def _say(forge: Forge, event: ForgeEvent, text: str, task_id: str, purpose: str) -> None:
    """A note about the task; its marker makes a retried job edit it rather than post it twice."""
    try:
        await forge.post_comment(
            target_of(event), f"{text}\n\n<sub>forgebot · task {task_id}</sub>", Marker(task=task_id, purpose=purpose)
        )
    except Exception:  # a courtesy note; the state in the inbox is what counts
        log.exception("note not posted delivery=%s", event.delivery_id)


def _stop_reason(exc: Exception) -> str:
    """The comment's sentence for a limit that ended the task ("" for other errors)."""
    if isinstance(exc, BudgetExceeded):
        return str(exc)
    if isinstance(exc, GraphRecursionError):
        found = re.search(r"[Rr]ecursion limit of (\d+)", str(exc))
        steps = f" after {found.group(1)} graph steps" if found else ""
        return (f"it was stopped{steps} by the recursion limit (`FORGEBOT_LLM__RECURSION_LIMIT`): "
                "its route kept cycling")
    return ""


def _stop_detail(exc: BudgetExceeded | GraphRecursionError) -> str:
    """The task store's short detail for a stop."""
    return f"budget: {exc.budget}" if isinstance(exc, BudgetExceeded) else "recursion limit"


async def _report_failure(forge: Forge, event: ForgeEvent, exc: Exception, secrets: Sequence[str] = ()) -> None:
    task = task_id_for(event)
    log.exception("task failed delivery=%s task=%s", event.delivery_id, task)
    # only our own user-facing errors carry their message; others could hold payload or paths. A model
    # failure names the role, the provider's short reason (redacted: a gateway may echo a key) and the setting.
    if _stop_reason(exc):
        reason = _stop_reason(exc)
    elif isinstance(exc, ModeUnavailable | WorkspaceFull | RepoConfigError):
        reason = str(exc)
    elif isinstance(exc, (ModelCallError, ModelConfigError)):
        reason = redact(str(exc), secrets).rstrip(".")
    else:
        reason = type(exc).__name__
    body = f"forgebot could not finish this task: {reason}.\n\n<sub>forgebot · task {task}</sub>"
    try:
        # one failure note per task however often the job is retried: the marker makes it idempotent
        await forge.post_comment(target_of(event), body, failure_marker(task))
    except Exception:  # the failure note is best effort; the job still fails loudly
        log.exception("failure note not posted delivery=%s", event.delivery_id)


async def sweep_inbox(ctx: dict[str, Any]) -> int:
    """arq cron: queue accepted deliveries that never reached (or fell out of) Redis."""
    settings: Settings = ctx["settings"]
    pool: ArqRedis = ctx["redis"]

    async def enqueue(delivery_id: str, event_json: str) -> bool:
        return await pool.enqueue_job(RUN_TASK, event_json, _job_id=delivery_id) is not None

    requeued = await sweep(ctx["inbox"], enqueue, settings.intake.sweep_grace, settings.intake.dedupe_hours)
    await expire_waiting(ctx["inbox"], ctx["forge_for_event"], settings.questions.wait_hours)
    return requeued


async def _startup(ctx: dict[str, Any]) -> None:
    if "inbox" not in ctx:
        ctx["inbox"] = await open_inbox(ctx["settings"])
        ctx["own_inbox"] = True
    await eviction_policy(ctx["redis"])
    ctx["reaper"] = asyncio.create_task(reaper_loop(ctx))


async def _shutdown(ctx: dict[str, Any]) -> None:
    reaper = ctx.pop("reaper", None)
    if reaper is not None:
        reaper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reaper
    if ctx.pop("own_inbox", False):
        await ctx.pop("inbox").close()


def _sweep_seconds(interval: int) -> set[int]:
    """arq cron seconds for a sweep every `interval` seconds (at least once a minute)."""
    step = min(max(interval, 5), 60)
    return set(range(0, 60, step))


def build_worker(
    settings: Settings,
    redis_url: str,
    *,
    forge_factory: ForgeFactory | None = None,
    model_factory: ModelFactory | None = None,
    inbox: Inbox | None = None,
    checkout: Checkout | None = None,
    burst: bool = False,
    handle_signals: bool = True,
) -> Worker:
    """An arq worker running `run_task`, one job at a time (the seed's scaling model), and the sweeper.

    Job records and results are JSON, exceptions reduced to redacted messages (`bot.jobcodec`);
    the codec also removes every configured secret from those messages.
    """
    codec = JobCodec(secrets_of(settings))
    ctx: dict[str, Any] = {
        "settings": settings,
        "forge_factory": forge_factory,  # None: open_forge per event (GitHub App installation from the payload)
        "model_factory": model_factory or (lambda role: chat_model(settings.llm, role)),
        "authorizer": Authorizer(settings),
        "redis_url": redis_url,  # the lease's heartbeat thread opens its own connection
        "codec": codec,
    }
    # the reaper's and the expiry's notes: the injected factory, else the forge the event names
    # (a GitHub App event's own installation), as `_run_event` opens it
    ctx["forge_for_event"] = lambda event: (
        forge_factory(event.forge) if forge_factory else open_forge(settings, event.forge, event.installation)
    )
    if inbox is not None:
        ctx["inbox"] = inbox
    if checkout is not None:
        ctx["checkout"] = checkout
    return Worker(
        functions=[func(run_task, name=RUN_TASK)],
        cron_jobs=[
            cron(sweep_inbox, second=_sweep_seconds(settings.intake.sweep_interval), run_at_startup=True),
            cron(cleanup, hour=3, minute=17, second=0),  # retention, once a day
        ],
        redis_settings=RedisSettings.from_dsn(redis_url),
        ctx=ctx,
        on_startup=_startup,
        on_shutdown=_shutdown,
        max_jobs=1,
        job_timeout=settings.job_timeout,
        max_tries=settings.max_tries,
        burst=burst,
        poll_delay=0.05 if burst else 0.5,
        handle_signals=handle_signals,
        # on SIGTERM (a deploy) let the running task finish or reach its next checkpoint
        job_completion_wait=settings.job_timeout,
        keep_result=3600,
        allow_abort_jobs=True,
        job_serializer=codec.dumps,
        job_deserializer=codec.loads,
    )
