"""JobQueue: how the receiver hands a verified event to the workers.

The receiver depends on this Protocol, not on arq, so tests pass an in-memory queue and the web
process stays free of graph imports. `ArqQueue` is the production implementation; it and every
other arq pool or job handle in the product come from `open_pool` / `job_handle`, so job records
are JSON everywhere (`bot.tasks.jobcodec`) and arq is used only through its public API.
"""

from __future__ import annotations

import logging
from typing import Protocol

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.jobs import Job
from redis.asyncio import Redis

from bot.tasks.events import ForgeEvent
from bot.tasks.jobcodec import PLAIN, JobCodec

RUN_TASK = "run_task"
log = logging.getLogger(__name__)


class JobQueue(Protocol):
    async def enqueue(self, event: ForgeEvent) -> bool:
        """Queue a task for `event`; False when a job with its delivery id already exists."""
        ...

    async def ping(self) -> bool: ...

    async def close(self) -> None: ...


async def open_pool(redis_url: str, codec: JobCodec = PLAIN) -> ArqRedis:
    """An arq connection pool that reads and writes job records as JSON (see `bot.tasks.jobcodec`)."""
    return await create_pool(
        RedisSettings.from_dsn(redis_url), job_serializer=codec.dumps, job_deserializer=codec.loads
    )


def job_handle(job_id: str, redis: ArqRedis, codec: JobCodec = PLAIN) -> Job:
    """arq's handle on one job (status, info, abort), reading its records as JSON."""
    return Job(job_id, redis, _deserializer=codec.loads)


class ArqQueue:
    """Enqueue `run_task` jobs on Redis with the delivery id as arq's job id.

    arq's own `enqueue_job` refuses a job id that is queued, running or kept as a result; that
    refusal is the queue's half of "one delivery, one job" (the inbox is the other half).
    """

    def __init__(self, pool: ArqRedis) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, redis_url: str) -> ArqQueue:
        return cls(await open_pool(redis_url))

    async def enqueue(self, event: ForgeEvent) -> bool:
        job = await self._pool.enqueue_job(RUN_TASK, event.model_dump_json(), _job_id=event.delivery_id)
        return job is not None

    async def ping(self) -> bool:
        return bool(await self._pool.ping())

    async def close(self) -> None:
        await self._pool.aclose()

    async def eviction_policy(self) -> str | None:
        return await eviction_policy(self._pool)


async def eviction_policy(redis: Redis) -> str | None:
    """Redis's `maxmemory-policy`, logged as an error unless it is `noeviction`.

    Any other policy lets Redis drop queued jobs under memory pressure (arq's job keys expire, so even
    the `volatile-*` ones, the managed services' defaults, take them); the inbox and its sweeper recover
    them, but an operator should know. `None` when Redis says neither through CONFIG nor INFO.
    """
    value = await read_eviction_policy(redis)
    if value is None:
        log.warning("could not read redis maxmemory-policy (CONFIG and INFO refused): make sure it is noeviction")
    elif value != "noeviction":
        log.error(
            "redis maxmemory-policy is %s: Redis may evict queued jobs; set it to noeviction "
            "(the inbox sweeper re-enqueues lost jobs, later)",
            value,
        )
    return value


async def read_eviction_policy(redis: Redis) -> str | None:
    """`maxmemory-policy` by `CONFIG GET`, else by `INFO memory`: managed Redis services (ElastiCache, Azure
    Cache, Memorystore) refuse CONFIG but answer INFO, which only said "could not read" before."""
    try:
        reply = await redis.config_get("maxmemory-policy")
        policy = reply.get("maxmemory-policy") or reply.get(b"maxmemory-policy")
    except Exception:  # CONFIG renamed away or refused: INFO tells the same
        try:
            policy = (await redis.info("memory")).get("maxmemory_policy")
        except Exception:
            return None
    if policy is None:
        return None
    return policy.decode() if isinstance(policy, bytes) else str(policy)
