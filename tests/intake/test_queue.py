"""ArqQueue enqueues through arq's public `enqueue_job`: one job per delivery id, records in JSON."""

from __future__ import annotations

import asyncio

import redis
from arq.jobs import JobStatus

from bot.tasks.events import parse_gitlab
from bot.tasks.queue import RUN_TASK, ArqQueue, job_handle
from foundation.settings import TriggerSettings
from tests.intake.payloads import gitlab_note


async def test_enqueue_is_arq_compatible_and_refuses_a_known_job_id(redis_url: str) -> None:
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("/implement"), "gitlab:q1", TriggerSettings())
    assert event is not None
    queue = await ArqQueue.connect(redis_url)
    try:
        assert await queue.enqueue(event) is True
        assert await queue.enqueue(event) is False  # queued already: arq's job-id uniqueness
        job = job_handle("gitlab:q1", queue._pool)
        assert await job.status() == JobStatus.queued
        info = await job.info()
        assert info is not None and info.function == RUN_TASK and info.args == (event.model_dump_json(),)
        arq_own = await queue._pool.enqueue_job(RUN_TASK, "x", _job_id="gitlab:q1")
        assert arq_own is None  # and arq agrees the id is taken
    finally:
        await queue.close()


async def test_concurrent_enqueues_keep_job_id_uniqueness(redis_url: str) -> None:
    events = [
        parse_gitlab(
            {"x-gitlab-event": "Note Hook"}, gitlab_note("/implement", id=n), f"gitlab:c{n % 10}", TriggerSettings()
        )
        for n in range(20)
    ]  # 20 submissions, 10 distinct delivery ids
    queue = await ArqQueue.connect(redis_url)
    try:
        created = await asyncio.gather(*(queue.enqueue(e) for e in events if e is not None))
    finally:
        await queue.close()
    assert sorted(created) == [False] * 10 + [True] * 10  # each id queued once, whichever submission won
    assert await _queued(redis_url) == 10


async def _queued(url: str) -> int:
    count: int = redis.Redis.from_url(url).zcard("arq:queue")  # type: ignore[assignment]
    return count
