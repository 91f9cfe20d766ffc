"""The contract between `foundation.arqlayout` and arq: real arq workers on a real Redis.

`foundation.arqlayout` is the only code that knows arq's keys beyond its public API (the reaper frees a
dead worker's job with it, the metrics count running jobs with it). If an arq release moves the
in-progress key, changes its lifetime or stops re-running a job whose key is gone, this fails.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq import cron
from arq.connections import ArqRedis, RedisSettings
from arq.jobs import JobStatus
from arq.worker import Worker, func

from bot.tasks.jobcodec import PLAIN
from bot.tasks.queue import job_handle, open_pool
from foundation import arqlayout

JOB_TIMEOUT = 60


class Holder:
    """A job function that records each run and waits until released."""

    def __init__(self) -> None:
        self.runs: list[int] = []  # job_try of each run
        self.release = asyncio.Event()

    async def run(self, ctx: dict[str, Any]) -> str:
        self.runs.append(int(ctx["job_try"]))
        await self.release.wait()
        return "held"


@contextlib.asynccontextmanager
async def running_worker(redis_url: str, holder: Holder) -> AsyncIterator[Worker]:
    worker = Worker(
        functions=[func(holder.run, name="hold")],
        redis_settings=RedisSettings.from_dsn(redis_url),
        handle_signals=False,
        poll_delay=0.05,
        max_jobs=1,
        job_timeout=JOB_TIMEOUT,
        job_serializer=PLAIN.dumps,
        job_deserializer=PLAIN.loads,
    )
    task = asyncio.create_task(worker.async_run())
    try:
        yield worker
    finally:
        holder.release.set()
        await worker.close()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _until(check: Any, timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


@pytest.fixture
async def pool(redis_url: str) -> AsyncIterator[ArqRedis]:
    made = await open_pool(redis_url)
    yield made
    await made.aclose()


async def test_a_taken_job_is_seen_held_and_given_back_to_another_worker(redis_url: str, pool: ArqRedis) -> None:
    first, second = Holder(), Holder()
    job = job_handle("layout-1", pool)
    assert await pool.enqueue_job("hold", _job_id="layout-1") is not None
    async with running_worker(redis_url, first):
        async def taken() -> bool:
            return await job.status() == JobStatus.in_progress

        await _until(taken)
        assert [j async for j in arqlayout.taken_jobs(pool)] == ["layout-1"]
        assert await arqlayout.still_queued(pool, "layout-1")  # arq keeps a running job in its queue
        held = await arqlayout.held_ms(pool, "layout-1", JOB_TIMEOUT + 10)
        assert held is not None and 0 <= held < 10_000  # the key lives job_timeout + 10 s from the start

        assert await arqlayout.give_back(pool, "layout-1")  # what the reaper does for a dead worker
        assert await job.status() == JobStatus.queued
        async with running_worker(redis_url, second):
            async def rerun() -> bool:
                return bool(second.runs)

            await _until(rerun)
        assert first.runs == [1] and second.runs == [2]  # arq counted the given-back run as a new try


async def test_finished_jobs_leave_the_queue_and_cron_ids_are_recognised(redis_url: str, pool: ArqRedis) -> None:
    holder = Holder()
    holder.release.set()
    job = job_handle("layout-2", pool)
    await pool.enqueue_job("hold", _job_id="layout-2")
    async with running_worker(redis_url, holder):
        async def done() -> bool:
            return await job.status() == JobStatus.complete

        await _until(done)
    assert not await arqlayout.still_queued(pool, "layout-2")
    assert [j async for j in arqlayout.taken_jobs(pool)] == []
    assert (await job.result_info()) is not None  # a JSON record arq itself reads back

    async def sweep(ctx: dict[str, Any]) -> None: ...

    assert arqlayout.is_cron(cron(sweep, second=0).name) and not arqlayout.is_cron("gitlab:1234")
