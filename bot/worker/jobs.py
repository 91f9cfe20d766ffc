"""arq job functions and the worker's construction: where the service runs the graph for one task.

Errors are translated here, at the job's edge, into one failure record (`graph.failure`): an
outage of the model or the forge (refused connections, 5xx, 429, timeouts) becomes a deferred
retry with growing pauses while tries are left; anything else, or the last try's outage, fails the
task with one record, shown in the status comment and one failure comment (for the issue's author),
the task store (for the console) and one log line (a traceback only for an internal error).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast

from arq import Retry, cron
from arq.connections import ArqRedis, RedisSettings
from arq.worker import Worker, func
from langgraph.errors import GraphRecursionError

from bot.console.links import task_link
from bot.intake.authz import Authorizer, Decision
from bot.intake.identity import Identities, IdentityRefused, resolve
from bot.tasks.checkpoints import SqlJournal, most_spent, open_checkpointer, spent
from bot.tasks.events import ForgeEvent
from bot.tasks.inbox import ACTIVE, Inbox, TaskRow, TaskStatus, open_inbox
from bot.tasks.jobcodec import JobCodec, JobFailed
from bot.tasks.leases import lease
from bot.tasks.presence import announce
from bot.tasks.queue import RUN_TASK, eviction_policy, job_handle
from bot.worker.expiry import expire_waiting
from bot.worker.idempotency import task_forge
from bot.worker.jobcontext import KEY, ForgeFactory, Job, ModelFactory, WorkerContext
from bot.worker.recovery import failure_marker, reaper_loop
from bot.worker.retention import cleanup
from bot.worker.sweeper import sweep
from foundation.forge import (
    ChangeRef,
    CommentRef,
    Forge,
    ForgeNotFound,
    IssueRef,
    Marker,
    item_url,
    open_forge,
    where_task_speaks,
)
from foundation.llm import chat_model, check_config
from foundation.metrics import MODES, record_task
from foundation.redact import secrets_of
from foundation.settings import Settings
from foundation.workspace import Workspaces
from graph import status
from graph.builder import build_graph
from graph.checkout import Checkout, prepare, release
from graph.deps import Deps
from graph.disclosure import ensure_disclosable
from graph.failure import TaskFailure, failure_of, failure_of_state, is_transient, retry_after
from graph.resume import run_or_resume
from graph.routing import CHECKOUT_MODES, check_mode
from graph.runtime.boundaries import graph_config
from graph.runtime.phases import GRAPH, Phases, step
from graph.runtime.tasklimits import BudgetExceeded
from graph.state import RepoDump, TaskState, dump

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_DEFER = 600.0  # seconds: the longest pause before a job's next try after an outage
END_TRIES = 5  # attempts to record a task's end (store or checkpointer briefly away)



def task_id_for(event: ForgeEvent) -> str:
    """Derive the task id from the delivery, so a retried job resumes the same checkpoint thread."""
    return event.task_id


def initial_state(event: ForgeEvent, task_id: str, model: str = "") -> TaskState:
    return TaskState(
        configured_model=model,
        task_id=task_id,
        mode=event.mode or "",
        forge=event.forge,
        repo=dump(event.repo, RepoDump),
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
    phases: Phases | None = None,
) -> TaskState:
    """Run the graph for `event` with the configured checkpointer, thread id = task id.

    A new thread starts on a fresh read-only checkout of the default branch; a thread paused for
    questions resumes only with `answer` (an authorized reply), from where it stopped. `phases`
    traces the steps before the graph and, when an error escapes, names the step or node it came from.
    """
    check_mode(event.mode or "")  # resume and cancel events carry no mode; they never start a run here
    task_id = task_id_for(event)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    phases = phases or Phases(settings.data_dir, task_id)
    phases.current = ""  # a resumed thread runs no step before the graph: an error is the graph's

    async def start() -> TaskState:
        state = initial_state(event, task_id, settings.llm.model)
        state["status_comment_id"] = status_comment
        state["console_url"] = task_link(settings.console, task_id)
        if event.mode in CHECKOUT_MODES:  # the review route checks out the change's branch itself
            state.update(await checkout(settings, deps.forge, event.repo, task_id))
        elif event.mode == "implement":
            # a confidential issue's work is published nowhere its issue is not: asked before any clone or model
            await ensure_disclosable(deps.forge, IssueRef(repo=event.repo, number=event.number))
            state.update(await prepare_workspace(settings, deps.forge, event, task_id))
        return state

    result = await run_graph(settings, deps, task_id, start, answer, phases)
    if result.get("outcome") != "need_info":
        await release(settings, event.repo, task_id)
    return result


async def run_graph(settings: Settings, deps: Deps, task_id: str, start: Callable[[], Awaitable[TaskState]],
                    answer: dict[str, str] | None, phases: Phases) -> TaskState:
    """Start, continue or resume the task's thread (thread id = task id) with the configured checkpointer.

    `start` builds a new thread's state (its steps traced under `phases`); an error that escapes the
    graph leaves `phases.current` naming the node that was running, for the failure record.
    """
    async def begin() -> TaskState:
        state = await start()
        phases.current = GRAPH  # the steps before the graph are done: an error now is a node's
        return state

    with phases.active():
        async with open_checkpointer(settings) as saver:
            compiled = build_graph().compile(checkpointer=saver)
            config = graph_config(settings.llm, task_id)  # the thread and the recursion limit
            try:
                return await run_or_resume(compiled, config, begin, replace(deps, journal=SqlJournal(saver)), answer)
            except Exception:
                if phases.current in ("", GRAPH):  # the graph's own failure: the node that was running
                    with contextlib.suppress(Exception):
                        pending = (await compiled.aget_state(config)).next
                        phases.current = pending[0] if pending else GRAPH
                raise


async def prepare_workspace(settings: Settings, forge: Forge, event: ForgeEvent, task_id: str) -> TaskState:
    """The implement route's worktree: the mirror refreshed, a task branch from the default branch."""
    from foundation.gitrunner import git
    from foundation.workspace import Workspaces, repo_key
    from graph.checkout import index_with_memory
    from graph.nodes.delivery import branch_name

    spaces = Workspaces.for_settings(settings)
    key = repo_key(event.forge, event.repo.project)
    async with step("mirror"):
        mirror = await spaces.mirror(key, event.repo.clone_url, auth=await forge.git_credentials())
    prefix = settings.workspace.branch_prefix
    branch = await _item_branch(forge, event, mirror, branch_name(event.number, event.title, prefix), prefix)
    async with step("worktree"):
        # an earlier task on this item (finished or failed: only one task per item is active) still holds
        # the item's branch in its kept worktree: free it, else git refuses a second checkout of the branch
        holder = await spaces.holder(key, branch)
        if holder is not None and holder != task_id:
            log.info("task %s frees branch %s from the worktree of earlier task %s", task_id, branch, holder)
            await release(settings, event.repo, holder)
        path = await spaces.worktree(key, task_id, branch, f"origin/{event.repo.default_branch}")
    # a retried job reuses the worktree: its base is where the branch forked, not HEAD after step commits
    base = git(path, "merge-base", "HEAD", f"origin/{event.repo.default_branch}").strip()
    indexed = await index_with_memory(settings, forge, event.repo, key, path, task_id)
    return TaskState(
        workspace=str(path), branch=branch, base=base, index=indexed["index"], database=indexed["database"],
        profile=indexed["profile"],
    )


MAX_EARLIER_BRANCHES = 5  # the item's other bot branches asked about (each one forge call)


async def _item_branch(forge: Forge, event: ForgeEvent, mirror: Path, branch: str, prefix: str) -> str:
    """`branch`, or the branch of the change an earlier task of this issue opened when the issue was named
    otherwise: the slug is the title's, so after a rename a new branch opened a second change beside the
    first, which stayed open with the older work. Only a branch with an open change is taken over."""
    from foundation.gitrunner import git

    if await forge.find_change(event.repo, branch) is not None:
        return branch
    item = f"refs/remotes/origin/{prefix}{event.number}-"
    listed = git(mirror, "for-each-ref", "--sort=-committerdate", "--format=%(refname)", item.rsplit("/", 1)[0])
    earlier = [ref.removeprefix("refs/remotes/origin/") for ref in listed.split() if ref.startswith(item)]
    for other in [name for name in earlier if name != branch][:MAX_EARLIER_BRANCHES]:
        if await forge.find_change(event.repo, other) is not None:
            log.info("issue %s was renamed: its open change's branch %s is used, not %s", event.number, other, branch)
            return other
    return branch


async def run_task(ctx: dict[str, Any], event_json: str) -> str:
    """arq job: under the worker's lease, authorize, then cancel, resume or start the task."""
    job = Job.of(ctx)
    work = job.worker
    if not work.redis_url or not job.job_id:  # called directly (tests, `forgebot run`)
        return await _run_event(job, event_json)
    work.presence = f"running job {job.job_id}"  # what the health page says this worker does
    try:
        async with lease(work.redis_url, job.job_id, work.settings.durability.lease_seconds):
            return await _run_event(job, event_json)
    finally:
        work.presence = "idle"


async def _run_event(job: Job, event_json: str) -> str:
    event = ForgeEvent.model_validate_json(event_json)
    work = job.worker
    inbox = work.store()
    factory = work.forge_factory
    try:
        forge = factory(event.forge) if factory else open_forge(work.settings, event.forge, event.installation)
        # first, for every route: the repository as the forge names it; the payload's is never used
        event = event.model_copy(update={"repo": await resolve(work.settings, forge, event)})
        decision = await work.authorizer.decide(forge, event)
    except (IdentityRefused, ForgeNotFound) as exc:
        decision = Decision(False, f"repository: {exc}")
    except Exception as exc:  # the forge is down or refuses the token: nobody is authorized yet, nothing is posted
        return await _unauthorized(job, event, exc)
    if not decision.allowed:
        log.info("task refused delivery=%s reason=%s", event.delivery_id, decision.reason)
        if event.trigger in ("label", "command"):
            await inbox.set_state(event.task_id, "cancelled", f"refused: {decision.reason}", only_from=("queued",))
        await inbox.handled(event.delivery_id)
        return "refused"
    if event.trigger == "cancel":
        return await _cancel(job, forge, event)
    if event.trigger in ("label", "command") and event.repo.web_url:  # the address as the forge gives it
        await inbox.set_link(event.task_id, item_url(event.repo, event.target, event.number))
    task = await (_resumable(inbox, event) if event.trigger == "reply" else _claim(inbox, forge, event))
    if task is None:
        await inbox.handled(event.delivery_id)
        return "skipped"
    return await _counted(task.mode, _run_claimed(job, forge, event, task))


async def _unauthorized(job: Job, event: ForgeEvent, exc: Exception) -> str:
    """The forge could not say whether the actor may trigger: retry an outage, else fail the task quietly.

    No comment is posted: the actor's right to an answer on the item is what could not be checked.
    """
    settings, tries = job.worker.settings, job.job_try
    if is_transient(exc) and tries < settings.max_tries:
        delay = _defer_seconds(settings, tries, retry_after(exc))
        log.warning("task deferred delivery=%s step=authorize try=%d of %d, again in %g s: %s", event.delivery_id,
                    tries, settings.max_tries, delay, type(exc).__name__)
        raise Retry(defer=delay) from exc
    record = failure_of(exc, phase="authorize", secrets=secrets_of(settings), tries=tries)
    log.error("%s", record.log_line(event.task_id), exc_info=exc if record.bug else None)
    inbox = job.worker.store()
    if event.trigger in ("label", "command"):
        await _recorded(lambda: inbox.set_state(event.task_id, "failed", record.kind, only_from=("queued",),
                                                failure=record.to_json()), "state")
    await _recorded(lambda: inbox.handled(event.delivery_id), "delivery")
    return "failed"


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


async def _claim(inbox: Inbox, forge: Forge, event: ForgeEvent) -> TaskRow | None:
    """Start the event's own task, or answer that another task is active on the item."""
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


async def _resumable(inbox: Inbox, event: ForgeEvent) -> TaskRow | None:
    """The waiting task a reply resumes, moved to running."""
    task = await inbox.active_task(event.task_key, ("waiting", "running"))
    if task is None:
        return None
    if task.state == "running":
        return task if task.job_id == event.delivery_id else None  # a reply while it runs is only a comment
    return await inbox.claim(task.task_id, event.delivery_id, from_state="waiting")


async def _run_claimed(job: Job, forge: Forge, event: ForgeEvent, task: TaskRow) -> str:
    """Run (or resume) the graph for a running task and record how it ended."""
    work = job.worker
    inbox, settings = work.store(), work.settings
    original = _stored(task, event)
    answer: dict[str, str] | None = None
    if event.trigger == "reply":  # same delivery id → same thread id → resume from the checkpoint
        original = original.model_copy(update={"comment": event.comment, "comment_id": event.comment_id})
        answer = {"author": event.actor.username, "body": event.comment}  # authorized above, like a trigger
    deps = Deps(settings=settings, forge=task_forge(forge, task.task_id), model_for=work.model_factory)
    tries = job.job_try
    log.info("task start delivery=%s task=%s mode=%s try=%d", event.delivery_id, task.task_id, task.mode, tries)
    acked = initial_state(original, task.task_id, settings.llm.model)
    acked["console_url"] = task_link(settings.console, task.task_id)
    trigger = CommentRef(target=target_of(event), id=event.comment_id) if event.comment_id else target_of(event)
    phase = "resuming with your answer" if answer else "started" if tries == 1 else f"trying again ({tries} of " \
        f"{settings.max_tries})"
    comment_id = await status.acknowledge(forge, acked, trigger, phase)
    phases = Phases(settings.data_dir, task.task_id)
    try:
        if work.configured_models:  # no usable model: say so before any clone or index is paid for
            phases.current = "start"
            check_config(settings.llm)
        await _bound_workspaces(settings, inbox)  # before this task may add a worktree
        state = await execute(settings, deps, original, answer, work.checkout, comment_id, phases)
    except Exception as exc:
        return await _failed(job, forge, original, task, acked, exc, phases.current, deps.spent_at_failure)
    outcome = str(state.get("outcome", "done"))
    if outcome == "failed":  # the route ended itself as failed and wrote its own comment (a kept branch…)
        record = failure_of_state(state, secrets_of(settings))
        log.warning("%s", record.log_line(task.task_id))
        await status.conclude(forge, state, outcome, record)
        await _finish(inbox, task.task_id, event.delivery_id, "failed", record.kind, settings, record)
        return outcome
    await status.conclude(forge, state, outcome)
    final: TaskStatus = "waiting" if outcome == "need_info" else "done"
    await _finish(inbox, task.task_id, event.delivery_id, final, outcome, settings)
    return outcome


async def _failed(job: Job, forge: Forge, event: ForgeEvent, task: TaskRow, acked: TaskState,
                  exc: Exception, phase: str, spent_then: dict[str, Any] | None = None) -> str:
    """Defer an outage while tries are left; else fail the task with its one record, shown everywhere.
    `spent_then`: what the task had spent when its node failed (`Deps.spent_at_failure`)."""
    settings, tries = job.worker.settings, job.job_try
    record = failure_of(exc, phase=phase, secrets=secrets_of(settings), tries=tries)
    if record.transient and tries < settings.max_tries:  # the task stays running: the next try carries on
        delay = _defer_seconds(settings, tries, retry_after(exc))
        log.warning("task deferred task=%s step=%s try=%d of %d, again in %g s: %s (%s)", task.task_id,
                    record.where(), tries, settings.max_tries, delay, record.kind, record.detail)
        await status.write(forge, acked, f"waiting to try again in {delay:g} s ({record.reason})")
        raise Retry(defer=delay) from exc
    if isinstance(exc, ForgeNotFound):  # the item or project is gone: nobody to tell
        log.info("%s", record.log_line(task.task_id))
        await _finish(job.worker.store(), task.task_id, event.delivery_id, "failed", record.kind, settings, record,
                      spent_then)
        return "gone"
    log.error("%s", record.log_line(task.task_id), exc_info=exc if record.bug else None)
    stopped = isinstance(exc, BudgetExceeded | GraphRecursionError)  # a limit ended the task: say which
    used: TaskState = exc.spent if isinstance(exc, BudgetExceeded) else cast(TaskState, spent_then or {})
    concluded: TaskState = {**acked, **used}
    await status.conclude(forge, concluded, "stopped" if stopped else "failed", record)
    await _post_failure(forge, event, task.task_id, record)
    await _finish(job.worker.store(), task.task_id, event.delivery_id, "failed", record.kind, settings, record,
                  spent_then)
    return "stopped" if stopped else "failed"


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
                  settings: Settings | None = None, failure: TaskFailure | None = None,
                  spent_then: dict[str, Any] | None = None) -> None:
    """Record how the task ended: what it spent, its final state, its delivery handled.

    Each write is retried (a store or checkpointer briefly away) and none raises: the task's work is
    done, and a failure to write it down must not turn it into a failed job. Should every try fail,
    the reaper finds the job complete and settles the task from the job's own result.
    """
    if settings is not None:  # what it spent, beside its state: listing tasks then reads no checkpoint
        await _recorded(lambda: _spend(inbox, settings, task_id, spent_then), "spending")
    record = failure.to_json() if failure else ""
    # never over a /cancel
    await _recorded(lambda: inbox.set_state(task_id, state, detail, only_from=("running",), failure=record), "state")
    await _recorded(lambda: inbox.handled(delivery_id), "delivery")


async def _spend(inbox: Inbox, settings: Settings, task_id: str, spent_then: dict[str, Any] | None = None) -> None:
    """What the task spent: its last checkpoint's, or more when a node failed after spending (`spent_then`)."""
    async with open_checkpointer(settings) as saver:
        await inbox.spent(task_id, *most_spent(await spent(saver, task_id), spent_then))


async def _recorded(write: Callable[[], Awaitable[T]], what: str, tries: int = END_TRIES,
                    pause: float = 0.5) -> T | None:
    """`write()`, tried again after doubling pauses; None (logged once) when every try failed."""
    for number in range(1, tries + 1):
        try:
            return await write()
        except Exception as exc:
            if number == tries:
                log.error("task end not recorded (%s) after %d tries: %s: %s", what, tries, type(exc).__name__, exc)
                return None
            wait = pause * 2 ** (number - 1)
            log.warning("task end not recorded yet (%s), try %d of %d, again in %.1f s: %s: %s", what, number, tries,
                        wait, type(exc).__name__, exc)
            await asyncio.sleep(wait)
    return None


def _defer_seconds(settings: Settings, tries: int, asked: float | None) -> float:
    """The pause before the next try: what the service asked for (Retry-After), else a growing back-off.

    `durability.retry_seconds` times four to the power of the tries so far (15 s, 60 s, 240 s by
    default), so a one-minute outage is outlasted within the default three tries.
    """
    if asked is not None:
        return min(max(asked, 0.0), MAX_DEFER)
    return min(settings.durability.retry_seconds * float(4 ** (tries - 1)), MAX_DEFER)


async def _cancel(job: Job, forge: Forge, event: ForgeEvent) -> str:
    """Stop the item's active task: mark it cancelled and ask arq to abort its running job."""
    inbox = job.worker.store()
    task = await inbox.active_task(event.task_key)
    if task is not None and await inbox.set_state(
        task.task_id, "cancelled", f"cancelled by {event.actor.username}", only_from=ACTIVE
    ):
        if task.state == "running" and job.redis is not None:
            await _abort(job.redis, job.worker.codec, task.job_id)
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


async def _abort(redis: ArqRedis, codec: JobCodec, job_id: str) -> None:
    """Ask arq to abort the job (the worker running it cancels it); do not wait for it to stop."""
    with contextlib.suppress(asyncio.TimeoutError, JobFailed):  # still running, or already failed
        await job_handle(job_id, redis, codec).abort(timeout=0, poll_delay=0.01)


def target_of(event: ForgeEvent) -> IssueRef | ChangeRef:
    """Where notes about the event's task go (`where_task_speaks`: the change for a `/review`, else the issue)."""
    return where_task_speaks(event.repo, event.number, target=event.target, mode=event.mode or "")


async def _say(forge: Forge, event: ForgeEvent, text: str, task_id: str, purpose: str) -> None:
    """A note about the task; its marker makes a retried job edit it rather than post it twice."""
    try:
        await forge.post_comment(
            target_of(event), f"{text}\n\n<sub>forgebot · task {task_id}</sub>", Marker(task=task_id, purpose=purpose)
        )
    except Exception as exc:  # a courtesy note; the state in the inbox is what counts
        log.warning("note not posted delivery=%s: %s", event.delivery_id, type(exc).__name__)


async def _post_failure(forge: Forge, event: ForgeEvent, task_id: str, record: TaskFailure) -> None:
    """The task's one failure comment; its marker makes a retried job edit it rather than post it twice."""
    try:
        await forge.post_comment(target_of(event), record.comment(task_id), failure_marker(task_id))
    except Exception as exc:  # the failure note is best effort; the record is in the task store
        log.warning("failure note not posted task=%s: %s", task_id, type(exc).__name__)


async def sweep_inbox(ctx: dict[str, Any]) -> int:
    """Queue accepted deliveries that never reached (or fell out of) Redis; expire unanswered questions."""
    job = Job.of(ctx)
    work, pool = job.worker, job.pool()
    settings = work.settings

    async def enqueue(delivery_id: str, event_json: str) -> bool:
        return await pool.enqueue_job(RUN_TASK, event_json, _job_id=delivery_id) is not None

    requeued = await sweep(work.store(), enqueue, settings.intake.sweep_grace, settings.intake.dedupe_hours)
    await expire_waiting(work.store(), work.forge_for_event, settings.questions.wait_hours)
    return requeued


async def sweeper_loop(ctx: dict[str, Any]) -> None:
    """Sweep every `intake.sweep_interval` seconds for the worker's life (the first sweep ran at start-up).

    A task of its own, like the reaper, not an arq cron job: a cron job waits for the worker's one
    job slot, so while a long task ran nothing stranded was queued again.
    """
    interval = Job.of(ctx).worker.settings.intake.sweep_interval
    while True:
        await asyncio.sleep(interval)
        try:
            await sweep_inbox(ctx)
        except Exception as exc:  # Redis or the store briefly away: the next sweep tries again
            log.warning("sweep failed: %s: %s", type(exc).__name__, exc)


async def _startup(ctx: dict[str, Any]) -> None:
    """Open the store, start the reaper and the sweeper, then learn who the bot is before any job.

    The worker takes jobs only once every configured forge has said who the bot is (its own
    comments must never trigger it): until then deliveries wait in the queue, neither run nor failed.
    """
    job = Job.of(ctx)
    work = job.worker
    if work.inbox is None:
        work.inbox = await open_inbox(work.settings)
        work.own_inbox = True
    await eviction_policy(job.pool())
    work.loops.append(asyncio.create_task(reaper_loop(ctx)))
    try:
        await sweep_inbox(ctx)  # what Redis lost while no worker ran, queued before the first poll
    except Exception as exc:
        log.warning("start-up sweep failed: %s: %s", type(exc).__name__, exc)
    work.loops.append(asyncio.create_task(sweeper_loop(ctx)))
    doing = lambda: work.presence  # noqa: E731  (read at each announcement)
    work.loops.append(asyncio.create_task(announce(job.pool(), doing, work.settings.durability.reap_interval)))
    identities = work.identities
    if identities is not None and identities.pending():
        work.presence = f"waiting for {' and '.join(identities.pending())} to say who the bot is"
        log.info("%s before taking jobs", work.presence)
        await identities.learn()
        work.presence = "idle"


async def _shutdown(ctx: dict[str, Any]) -> None:
    work = Job.of(ctx).worker
    while work.loops:
        loop = work.loops.pop()
        loop.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await loop
    if work.own_inbox and work.inbox is not None:
        inbox, work.inbox, work.own_inbox = work.inbox, None, False
        await inbox.close()


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
    identities: Identities | None = None,
) -> Worker:
    """An arq worker running `run_task`, one job at a time (a deployment scales by running more
    workers), with the reaper and the sweeper beside it; with `identities`, it takes jobs once the
    bot's identity is known.

    Job records and results are JSON, exceptions reduced to redacted messages (`bot.tasks.jobcodec`);
    the codec also removes every configured secret from those messages.
    """
    codec = JobCodec(secrets_of(settings))
    work = WorkerContext(
        settings=settings,
        model_factory=model_factory or (lambda role: chat_model(settings.llm, role)),
        # the reaper's and the expiry's notes: the injected factory, else the forge the event names
        # (a GitHub App event's own installation), as `_run_event` opens it
        forge_for_event=lambda event: (
            forge_factory(event.forge) if forge_factory else open_forge(settings, event.forge, event.installation)
        ),
        authorizer=Authorizer(settings),
        forge_factory=forge_factory,
        configured_models=model_factory is None,
        checkout=checkout or prepare,
        identities=identities,
        codec=codec,
        redis_url=redis_url,
        inbox=inbox,
    )
    ctx: dict[str, Any] = {KEY: work}
    return Worker(
        functions=[func(run_task, name=RUN_TASK)],
        cron_jobs=[cron(cleanup, hour=3, minute=17, second=0)],  # retention, once a day
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
