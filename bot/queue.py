"""JobQueue: how the receiver hands a verified event to the workers.

The receiver depends on this Protocol, not on arq, so tests pass an in-memory queue and the web
process stays free of graph imports. `ArqQueue` is the production implementation.
"""

from __future__ import annotations

import logging
from typing import Protocol

from arq import create_pool
from arq.connections import ArqRedis, RedisSettings
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms

from bot.batching import Batcher
from bot.events import ForgeEvent

RUN_TASK = "run_task"
log = logging.getLogger(__name__)


class JobQueue(Protocol):
    async def enqueue(self, event: ForgeEvent) -> bool:
        """Queue a task for `event`; False when a job with its delivery id already exists."""
        ...

    async def ping(self) -> bool: ...

    async def close(self) -> None: ...


# arq's enqueue_job (WATCH, EXISTS, MULTI/EXEC: three round trips) as one atomic script: the same
# keys, the same pickled job record, the same refusal when the job id is queued, running or done.
_ENQUEUE = """
if redis.call('exists', KEYS[1], KEYS[2]) > 0 then return 0 end
redis.call('psetex', KEYS[1], ARGV[1], ARGV[2])
redis.call('zadd', KEYS[3], ARGV[3], ARGV[4])
return 1
"""


class ArqQueue:
    """Enqueue `run_task` jobs on Redis with the delivery id as arq's job id, in one round trip."""

    def __init__(self, pool: ArqRedis) -> None:
        self._pool = pool
        self._script = pool.register_script(_ENQUEUE)
        self._batch: Batcher[ForgeEvent, bool] = Batcher(self._push)

    @classmethod
    async def connect(cls, redis_url: str) -> ArqQueue:
        return cls(await create_pool(RedisSettings.from_dsn(redis_url)))

    async def enqueue(self, event: ForgeEvent) -> bool:
        """Queue the job; deliveries arriving together share one pipelined round trip."""
        return await self._batch.submit(event)

    async def _push(self, events: list[ForgeEvent]) -> list[bool]:
        now = timestamp_ms()
        async with self._pool.pipeline(transaction=False) as pipe:
            for event in events:
                job_id = event.delivery_id
                job = serialize_job(
                    RUN_TASK, (event.model_dump_json(),), {}, None, now, serializer=self._pool.job_serializer
                )
                keys = [job_key_prefix + job_id, result_key_prefix + job_id, self._pool.default_queue_name]
                await self._script(keys=keys, args=[self._pool.expires_extra_ms, job, now, job_id], client=pipe)
            created = await pipe.execute()
        return [bool(value) for value in created]

    async def ping(self) -> bool:
        return bool(await self._pool.ping())

    async def close(self) -> None:
        await self._pool.aclose()

    async def eviction_policy(self) -> str | None:
        return await eviction_policy(self._pool)


async def eviction_policy(redis: ArqRedis) -> str | None:
    """Redis's `maxmemory-policy`, logged as an error unless it is `noeviction`.

    Any other policy lets Redis drop queued jobs under memory pressure; the inbox and its sweeper
    recover them, but an operator should know. `None` when CONFIG is not allowed (managed Redis).
    """
    try:
        reply = await redis.config_get("maxmemory-policy")
    except Exception as exc:  # CONFIG is often disabled on managed Redis; not fatal
        log.warning("could not read redis maxmemory-policy: %s", type(exc).__name__)
        return None
    policy = reply.get("maxmemory-policy") or reply.get(b"maxmemory-policy")
    value = policy.decode() if isinstance(policy, bytes) else str(policy)
    if value != "noeviction":
        log.error(
            "redis maxmemory-policy is %s: Redis may evict queued jobs; set it to noeviction "
            "(the inbox sweeper re-enqueues lost jobs, later)",
            value,
        )
    return value
