"""ArqQueue's one-round-trip enqueue writes exactly what arq's own enqueue_job writes."""

from __future__ import annotations

from arq.jobs import Job, JobStatus

from bot.events import parse_gitlab
from bot.queue import RUN_TASK, ArqQueue
from bot.settings import TriggerSettings
from tests.intake.payloads import gitlab_note


async def test_enqueue_is_arq_compatible_and_refuses_a_known_job_id(redis_url: str) -> None:
    event = parse_gitlab({"x-gitlab-event": "Note Hook"}, gitlab_note("/implement"), "gitlab:q1", TriggerSettings())
    assert event is not None
    queue = await ArqQueue.connect(redis_url)
    try:
        assert await queue.enqueue(event) is True
        assert await queue.enqueue(event) is False  # queued already: arq's job-id uniqueness
        job = Job("gitlab:q1", queue._pool)
        assert await job.status() == JobStatus.queued
        info = await job.info()
        assert info is not None and info.function == RUN_TASK and info.args == (event.model_dump_json(),)
        arq_own = await queue._pool.enqueue_job(RUN_TASK, "x", _job_id="gitlab:q1")
        assert arq_own is None  # and arq agrees the id is taken
    finally:
        await queue.close()
