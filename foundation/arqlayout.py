"""The one place that knows arq's Redis layout beyond its public API.

Everything else talks to arq through `ArqRedis.enqueue_job`, `Job.status/info/abort` and `Worker`.
Two needs have no public API:

* **Freeing a dead worker's job.** arq marks a job taken with an "in progress" key that expires
  `job_timeout + 10 s` after the start; a worker killed with SIGKILL leaves it behind, and arq has
  no call to give the job back. The reaper (`bot.worker.recovery`) finds such keys and deletes them.
* **Counting running jobs** for the queue metrics, cheaply and without deserializing records.

`tests/durability/test_arq_layout.py` runs real arq workers against these helpers: if an arq
release moves the keys or changes what they mean, that test fails instead of recovery silently
doing nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from arq.connections import ArqRedis
from arq.constants import default_queue_name, in_progress_key_prefix

QUEUE = default_queue_name
CRON_PREFIX = "cron:"  # arq names a cron job's id `cron:<function>:<time>`


def in_progress_key(job_id: str) -> str:
    """The key a worker holds while it runs `job_id`."""
    return in_progress_key_prefix + job_id


def is_cron(job_id: str) -> bool:
    """arq keeps a cron job's in-progress key after the run on purpose: it stops a second run."""
    return job_id.startswith(CRON_PREFIX)


async def taken_jobs(redis: ArqRedis) -> AsyncIterator[str]:
    """Ids of the jobs some worker holds (or held, if it died) as in progress."""
    async for raw in redis.scan_iter(match=in_progress_key_prefix + "*", count=200):
        key = raw.decode() if isinstance(raw, bytes) else str(raw)
        yield key.removeprefix(in_progress_key_prefix)


async def held_ms(redis: ArqRedis, job_id: str, in_progress_seconds: float) -> float | None:
    """How long the job has been held, from its key's remaining life; None if the key has no TTL."""
    remaining = int(await redis.pttl(in_progress_key(job_id)))
    if remaining < 0:
        return None
    return in_progress_seconds * 1000.0 - remaining


async def still_queued(redis: ArqRedis, job_id: str) -> bool:
    """True while the job is in arq's queue (taken jobs stay there until they finish)."""
    return await redis.zscore(QUEUE, job_id) is not None


async def give_back(redis: ArqRedis, job_id: str) -> bool:
    """Drop the in-progress mark so the next free worker takes the job (arq counts a new try)."""
    return bool(await redis.delete(in_progress_key(job_id)))
