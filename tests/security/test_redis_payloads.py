"""Nothing secret and nothing executable in Redis, against a real Redis and the real
worker (`bot.worker.jobs.build_worker`), with the real model client failing over HTTP.

* A model call refused with 401 raises `ModelCallError` around the OpenAI client's `AuthenticationError`,
  which holds the request (its `Authorization: Bearer …` header) and, here, a gateway message echoing that header.
  arq used to pickle that exception into the job's result for an hour. After the task fails,
  every value of every Redis key is read back: none holds the token or a pickle stream.
* Someone with write access to Redis queues a pickled job whose unpickling would create a file:
  the worker refuses the record (it is not JSON), fails that job, carries on, and the file never
  appears.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import redis
from pydantic import SecretStr

from bot.tasks.inbox import open_inbox
from bot.tasks.jobcodec import JobFailed
from bot.tasks.queue import ArqQueue, job_handle, open_pool
from bot.worker.jobs import build_worker
from foundation.arqlayout import QUEUE
from foundation.settings import Settings
from graph.failure import TaskFailure
from tests.durability.harness import analyze_event, seed_forge
from tests.fakes.checkout import local_checkout, php_project
from tests.fakes.forge_http import FakeForgeState
from tests.fakes.model_server import Gate, ModelServer, text

MODEL_KEY = "sk-serve-queue-model-key-0123456789"
PICKLE_PROTOCOL = b"\x80"  # the PROTO opcode every pickle since protocol 2 starts with


def every_value(client: Any) -> dict[bytes, list[bytes]]:  # a sync redis.Redis
    """Each key's stored bytes, read by type (DUMP would hide strings in LZF compression)."""
    values: dict[bytes, list[bytes]] = {}
    for key in client.scan_iter(count=500):
        kind = client.type(key)
        if kind == b"string":
            values[key] = [client.get(key) or b""]
        elif kind == b"zset":
            values[key] = list(client.zrange(key, 0, -1))
        elif kind == b"hash":
            values[key] = [part for pair in client.hgetall(key).items() for part in pair]
        elif kind in (b"list", b"set"):
            values[key] = list(client.lrange(key, 0, -1) if kind == b"list" else client.smembers(key))
        else:
            raise AssertionError(f"unexpected Redis type {kind!r} for {key!r}")
    return values


async def _run_worker(settings: Settings, redis_url: str, tmp_path: Path) -> Any:
    worker = build_worker(
        settings, redis_url, checkout=local_checkout(php_project(tmp_path)), burst=True, handle_signals=False
    )
    try:
        await worker.main()
    finally:
        await worker.close()
    return worker


async def test_a_model_auth_failure_leaves_no_token_and_no_pickle_in_redis(
    settings: Settings, redis_url: str, fake_forge: FakeForgeState, tmp_path: Path
) -> None:
    script = Gate(text("never sent"))
    script.refuse_with = 401
    seed_forge(fake_forge, [31])
    settings.questions.max_rounds = 0
    event = analyze_event(31, "auth-fails")
    inbox = await open_inbox(settings)
    queue = await ArqQueue.connect(redis_url)
    try:
        assert (await inbox.record("gitlab", event.delivery_id, "Issue Hook", event)).result == "accepted"
        assert await queue.enqueue(event)
    finally:
        await queue.close()
    with ModelServer() as model:
        model.responder = script
        settings.llm.base_url = model.openai_url
        settings.llm.api_key = SecretStr(MODEL_KEY)
        settings.llm.max_retries = 0
        await _run_worker(settings, redis_url, tmp_path)
    try:
        task = await inbox.task(event.task_id)
    finally:
        await inbox.close()
    assert model.requests, "the model was never called: the attack did not happen"
    assert task is not None and (task.state, task.detail) == ("failed", "model credentials"), task
    record = TaskFailure.from_json(task.failure)
    assert record is not None and "[REDACTED]" in record.detail  # the echoed header was there, and was removed
    assert MODEL_KEY not in task.failure

    values = every_value(redis.Redis.from_url(redis_url))
    result_keys = [k for k in values if k.startswith(b"arq:result:")]
    assert result_keys, "arq kept no result: nothing was tested"
    for key, stored in values.items():
        for value in stored:
            assert MODEL_KEY.encode() not in value, key
            assert not value.startswith(PICKLE_PROTOCOL), key
    pool = await open_pool(redis_url)
    try:
        info = await job_handle(event.delivery_id, pool).result_info()
    finally:
        await pool.aclose()
    assert info is not None and (info.success, info.result) == (True, "failed")  # recorded, not raised


class Payload:
    """What an attacker pickles: unpickling it creates a directory (standing in for any command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


async def test_a_pickled_job_written_into_the_queue_is_refused_not_run(
    settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    record = {"t": 1, "f": "run_task", "a": (Payload(marker),), "k": {}, "et": 1}
    client = redis.Redis.from_url(redis_url)
    client.set("arq:job:evil", pickle.dumps(record))
    client.zadd(QUEUE, {"evil": 1})
    worker = await _run_worker(settings, redis_url, tmp_path)
    assert not marker.exists(), "the pickled payload ran in the worker"
    assert worker.jobs_failed >= 1
    pool = await open_pool(redis_url)
    try:
        info = await job_handle("evil", pool).result_info()
    finally:
        await pool.aclose()
    assert info is not None and info.success is False and isinstance(info.result, JobFailed)
    assert info.result.kind == "DeserializationError"
    assert client.zscore(QUEUE, "evil") is None  # gone from the queue, not retried forever
