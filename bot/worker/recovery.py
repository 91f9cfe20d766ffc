"""Crash recovery: worker leases, and the reaper that frees a dead worker's job and ends orphaned tasks.

arq marks a job taken with an in-progress key (`foundation.arqlayout`), which expires `job_timeout + 10 s` after the
start. A worker killed with SIGKILL leaves that key behind, so on its own arq re-runs the job only
after a full job timeout (an hour by default), and a job whose tries are used up is finalized
without ever calling our code, leaving its task `running` forever and the issue locked by the
one-active-task index.

Two mechanisms bound that:

* **Lease** (`bot.tasks.leases`). While a job runs, its worker refreshes `forgebot:lease:<job id>` (TTL `lease_seconds`)
  every third of the lease, from a thread, so a busy event loop does not lose it. The reaper (a
  task in every worker, every `reap_interval` seconds) deletes the in-progress key of a job that
  has held it longer than a lease without a live lease: the job
  is then taken by the next free worker (arq counts it as a new try) and resumes from its last
  checkpoint. Recovery time ≤ lease + reap interval + arq's poll delay.
* **Orphans.** A `running` task whose arq job is finished or gone (the try limit was hit while
  workers kept dying, the job timed out, Redis lost it) is failed with one failure comment, marked
  so that a second reaper pass or a late job never posts another. A job that finished its task but
  could not write that down (the store was away through every retry) left its outcome as the job's
  result: the task is settled from it, never failed.

The reaper also settles `forgebot run` tasks of this host whose process is gone (`bot.tasks.localruns`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from arq.connections import ArqRedis
from arq.jobs import JobStatus

from bot.tasks.events import ForgeEvent
from bot.tasks.inbox import Inbox, TaskRow, TaskStatus
from bot.tasks.jobcodec import PLAIN, JobCodec
from bot.tasks.leases import LEASE_PREFIX
from bot.tasks.localruns import settle_lost
from bot.tasks.queue import job_handle
from bot.worker.jobcontext import ForgeForEvent, Job
from foundation import arqlayout
from foundation.forge import Marker, where_task_speaks
from graph.failure import TaskFailure, worker_lost

log = logging.getLogger(__name__)

LOCAL = "local:"  # the key prefix of tasks `forgebot run` records (bot.worker.local)
FAILURE = "failure"  # the marker purpose of the one failure comment a task can get


def failure_marker(task_id: str) -> Marker:
    return Marker(task=task_id, purpose=FAILURE)


async def release_abandoned(redis: ArqRedis, lease_seconds: float, in_progress_seconds: float) -> list[str]:
    """Free the jobs whose worker died: in progress for longer than a lease, with no lease alive."""
    released: list[str] = []
    lease_ms = lease_seconds * 1000
    async for job_id in arqlayout.taken_jobs(redis):
        if arqlayout.is_cron(job_id) or await redis.exists(LEASE_PREFIX + job_id):
            continue
        if not await arqlayout.still_queued(redis, job_id):
            continue  # finished: the key is arq's leftover, not a job anyone waits for
        held = await arqlayout.held_ms(redis, job_id, in_progress_seconds)
        if held is None or held < lease_ms:
            continue  # no TTL (not arq's) or just taken: the job may not have started its lease yet
        if await arqlayout.give_back(redis, job_id):
            released.append(job_id)
            log.warning("released job %s: its worker stopped renewing the lease", job_id)
    return released


async def fail_orphans(
    inbox: Inbox, redis: ArqRedis, forge_for: ForgeForEvent, tries: int, codec: JobCodec = PLAIN
) -> list[str]:
    """Fail `running` tasks whose arq job is over without having finished them; one comment each.

    Only running tasks are read (an indexed query): the pass costs what is running, not every task
    ever created.
    """
    failed: list[str] = []
    for task in await inbox.tasks_in("running"):
        if task.task_key.startswith(LOCAL):
            continue  # a `forgebot run` process's own task: no arq job ever ran it (`settle_lost`'s)
        handle = job_handle(task.job_id, redis, codec)
        status = await handle.status()
        if status not in (JobStatus.complete, JobStatus.not_found):
            continue
        if status == JobStatus.complete and await _settled(inbox, task, await handle.result_info()):
            continue
        record = worker_lost(status.value, tries)
        if await inbox.set_state(task.task_id, "failed", record.kind, only_from=("running",),
                                 failure=record.to_json()):
            log.error("%s", record.log_line(task.task_id))
            await post_failure(forge_for, task, record)
            failed.append(task.task_id)
    return failed


FAILED_OUTCOMES = frozenset({"failed", "stopped", "gone"})


async def _settled(inbox: Inbox, task: TaskRow, result: Any) -> bool:
    """Finish a task from its complete job's own outcome (a string the job returned); False without one."""
    outcome = getattr(result, "result", None)
    if not getattr(result, "success", False) or not isinstance(outcome, str) or not outcome:
        return False
    state: TaskStatus = "failed" if outcome in FAILED_OUTCOMES else "waiting" if outcome == "need_info" else "done"
    if await inbox.set_state(task.task_id, state, outcome, only_from=("running",)):
        log.warning("task %s settled from its job's result (%s): its end had not been recorded", task.task_id,
                    outcome)
    return True


async def post_failure(forge_for: ForgeForEvent, task: TaskRow, record: TaskFailure) -> None:
    """The task's one failure comment (edited in place if it exists)."""
    event = ForgeEvent.model_validate_json(task.event_json)
    try:
        forge = forge_for(event)
        where = where_task_speaks(event.repo, event.number, target=event.target, mode=event.mode or task.mode)
        await forge.post_comment(where, record.comment(task.task_id), failure_marker(task.task_id))
    except Exception as exc:  # the task is failed in the store either way; the next pass does not retry the note
        log.warning("failure note not posted task=%s: %s", task.task_id, type(exc).__name__)


async def reap(ctx: dict[str, Any]) -> int:
    """One reaper pass: release abandoned jobs, then fail orphaned tasks. Returns how many it acted on."""
    job = Job.of(ctx)
    work, redis = job.worker, job.pool()
    settings = work.settings
    released = await release_abandoned(redis, settings.durability.lease_seconds, settings.job_timeout + 10)
    failed = await fail_orphans(work.store(), redis, work.forge_for_event, settings.max_tries, work.codec)
    lost = await settle_lost(work.store())  # `forgebot run` processes of this host killed outright
    return len(released) + len(failed) + len(lost)


async def reaper_loop(ctx: dict[str, Any]) -> None:
    """Reap every `reap_interval` seconds for the worker's life.

    A task of its own, not an arq cron job: a cron job waits for the worker's one job slot, which is
    taken while a task runs, so with every worker busy nobody would notice a dead one.
    """
    interval = Job.of(ctx).worker.settings.durability.reap_interval
    while True:
        try:
            acted = await reap(ctx)
        except Exception:  # Redis or the store briefly away: the next pass tries again
            log.exception("reaper pass failed")
        else:  # at debug level: a line per pass shows a stuck reaper (and lets tests wait on a pass)
            log.debug("reaper pass done acted=%d", acted)
        await asyncio.sleep(interval)
