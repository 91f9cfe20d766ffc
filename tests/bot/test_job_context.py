"""The worker's context as arq hands it to a job: a copy of the worker's dict sharing one typed object.

arq gives each job `{**worker.ctx, job_id, job_try, ...}`. What a job records for the console's
health page must reach the worker's announcer, which holds the worker's own dict: with the job's
state in the shared `WorkerContext`, it does (a key written into the copy would be lost).
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.worker import jobs
from bot.worker.jobcontext import Job, WorkerContext
from foundation.settings import Settings


async def test_a_jobs_presence_reaches_the_workers_own_context(
    settings: Settings, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = jobs.build_worker(settings, redis_url, handle_signals=False)
    shared: WorkerContext = worker.ctx["worker"]
    seen: list[str] = []

    async def run(job: Job, event_json: str) -> str:
        seen.append(shared.presence)  # what the announcer would publish while the job runs
        return "done"

    monkeypatch.setattr(jobs, "_run_event", run)
    job_ctx: dict[str, Any] = {**worker.ctx, "job_id": "job-1", "job_try": 1}  # arq's per-job copy
    assert await jobs.run_task(job_ctx, "{}") == "done"
    assert seen == ["running job job-1"]
    assert shared.presence == "idle"
    await worker.close()


def test_a_context_without_the_worker_object_is_refused() -> None:
    with pytest.raises(TypeError, match="not a WorkerContext"):
        Job.of({"worker": {"settings": "a dict is not the context"}})
