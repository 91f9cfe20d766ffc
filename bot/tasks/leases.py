"""A running job's lease: `forgebot:lease:<job id>` in Redis, alive while its worker is.

The reaper (`bot.worker.recovery`) frees the job of a worker whose lease expired; the console reads the
leases to show which jobs are running and on which worker. The key's value names the holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator

import redis

from bot.tasks.presence import worker_name

log = logging.getLogger(__name__)

LEASE_PREFIX = "forgebot:lease:"


@contextlib.asynccontextmanager
async def lease(redis_url: str, job_id: str, seconds: float) -> AsyncIterator[None]:
    """Hold the job's lease while the block runs; a heartbeat renews it every third of its life.

    The heartbeat is a thread with its own connection, not a task on the event loop: a node that
    blocks the loop for longer than a lease (a big parse, a slow synchronous call) must not make a
    live worker look dead, or a second worker would run the same task at the same time.
    """
    key, ttl_ms = LEASE_PREFIX + job_id, max(int(seconds * 1000), 100)
    holder = worker_name().encode()  # who holds it: the console's health page shows it
    stop = threading.Event()
    client = redis.Redis.from_url(redis_url)

    def beat() -> None:
        while not stop.is_set():
            try:
                client.psetex(key, ttl_ms, holder)
            except redis.RedisError:  # Redis briefly away: the next beat tries again
                log.warning("lease not renewed job=%s", job_id)
            stop.wait(seconds / 3)

    heart = threading.Thread(target=beat, name=f"lease-{job_id}", daemon=True)
    heart.start()
    try:
        yield
    finally:
        stop.set()
        await asyncio.to_thread(heart.join)
        with contextlib.suppress(redis.RedisError):  # an expired lease is as good as a deleted one
            await asyncio.to_thread(client.delete, key)
        client.close()
