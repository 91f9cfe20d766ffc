"""Metric families: recording functions, the queue read from a real Redis, and /metrics."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest
from starlette.testclient import TestClient

from bot.tasks.queue import open_pool
from bot.web.app import create_app
from foundation import metrics
from foundation.arqlayout import in_progress_key
from foundation.forge.errors import ForgeAuthError, ForgeRateLimited, error_for_status
from foundation.metrics import QueueCollector, TaskMetrics, read_queue
from foundation.settings import Settings


@pytest.fixture
def task_metrics() -> tuple[CollectorRegistry, TaskMetrics]:
    registry = CollectorRegistry()
    return registry, TaskMetrics.create(registry)


def test_record_functions_count_by_their_labels(task_metrics: tuple[CollectorRegistry, TaskMetrics]) -> None:
    registry, counted = task_metrics
    metrics.record_task("analyze", "done", 42.0, metrics=counted)
    metrics.record_task("analyze", "done", 8.0, metrics=counted)
    metrics.record_tokens("planner", "gpt-4o-mini", input_tokens=1200, output_tokens=300, cost_usd=0.01,
                          metrics=counted)
    metrics.record_gate("tests", "not_run", metrics=counted)
    metrics.record_forge_error("gitlab", ForgeRateLimited("slow down", 30), metrics=counted)
    metrics.record_rate_limit_wait("github", 30, metrics=counted)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("forgebot_tasks_total", mode="analyze", outcome="done") == 2
    assert value("forgebot_task_duration_seconds_sum", mode="analyze", outcome="done") == 50.0
    assert value("forgebot_llm_tokens_total", role="planner", model="gpt-4o-mini", direction="input") == 1200
    assert value("forgebot_llm_tokens_total", role="planner", model="gpt-4o-mini", direction="output") == 300
    assert value("forgebot_llm_cost_usd_total", role="planner", model="gpt-4o-mini") == pytest.approx(0.01)
    assert value("forgebot_gate_results_total", gate="tests", status="not_run") == 1
    assert value("forgebot_forge_api_errors_total", forge="gitlab", kind="rate_limited") == 1
    assert value("forgebot_forge_rate_limit_waits_total", forge="github") == 1
    assert value("forgebot_forge_rate_limit_wait_seconds_total", forge="github") == 30


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: metrics.record_task("deploy", "done", 1, metrics=m), "mode must be one of"),
        (lambda m: metrics.record_task("review", "done", -1, metrics=m), "seconds must not be negative"),
        (lambda m: metrics.record_gate("tests", "green", metrics=m), "status must be one of"),
        (lambda m: metrics.record_gate("a gate with spaces", "passed", metrics=m), "is not a metric label"),
        (lambda m: metrics.record_forge_error("gitea", "auth", metrics=m), "forge must be one of"),
        (lambda m: metrics.record_forge_error("gitlab", "teapot", metrics=m), "kind must be one of"),
        (lambda m: metrics.record_tokens("coder", "m", input_tokens=-5, output_tokens=0, metrics=m),
         "input_tokens must not be negative"),
    ],
)
def test_bad_labels_and_values_are_clear_errors(call: Callable[[TaskMetrics], None], message: str) -> None:
    counted = TaskMetrics.create(CollectorRegistry())
    with pytest.raises(ValueError, match=message):
        call(counted)


def test_forge_error_kind_follows_the_error_tree() -> None:
    assert metrics.forge_error_kind(error_for_status(404, "gone")) == "not_found"
    assert metrics.forge_error_kind(error_for_status(409, "exists")) == "conflict"
    assert metrics.forge_error_kind(error_for_status(502, "bad gateway")) == "unavailable"
    assert metrics.forge_error_kind(ForgeAuthError("no scope")) == "auth"
    assert metrics.forge_error_kind(TimeoutError()) == "other"


async def test_read_queue_splits_waiting_deferred_and_running(redis_url: str) -> None:
    pool = await open_pool(redis_url)
    try:
        await pool.enqueue_job("run_task", "{}", _job_id="running")
        await pool.enqueue_job("run_task", "{}", _job_id="waiting-1")
        await pool.enqueue_job("run_task", "{}", _job_id="waiting-2")
        await pool.enqueue_job("run_task", "{}", _job_id="retry-later", _defer_by=600)
        await pool.set(in_progress_key("running"), b"1")  # what a worker writes when it takes a job
    finally:
        await pool.aclose()

    client = redis.Redis.from_url(redis_url)
    enqueued = cast(float | None, client.zscore("arq:queue", "waiting-1"))
    assert enqueued is not None
    snapshot = read_queue(client, now=enqueued / 1000 + 90)

    assert (snapshot.depth, snapshot.waiting, snapshot.deferred, snapshot.in_progress) == (4, 2, 1, 1)
    assert snapshot.oldest_waiting_seconds == pytest.approx(90, abs=1)


def test_empty_queue_reads_as_zero(redis_url: str) -> None:
    snapshot = read_queue(redis.Redis.from_url(redis_url))
    assert snapshot == metrics.QueueSnapshot(depth=0, waiting=0, deferred=0, in_progress=0, oldest_waiting_seconds=0)


def test_unreachable_redis_is_queue_up_zero_not_a_failed_scrape(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    registry.register(QueueCollector.from_url(f"unix://{tmp_path}/no-such.sock"))
    text = generate_latest(registry).decode()
    assert "forgebot_queue_up 0.0" in text
    assert "forgebot_queue_depth" not in text


def test_metrics_endpoint_serves_queue_and_task_families(settings: Settings, redis_url: str) -> None:
    redis.Redis.from_url(redis_url).zadd("arq:queue", {"job-a": time.time() * 1000 - 5000})
    metrics.record_gate("lint", "disabled")  # the process-wide registry, as jobs and nodes record
    settings.redis_url = redis_url
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    assert "forgebot_queue_up 1.0" in text
    assert "forgebot_queue_depth 1.0" in text
    assert 'forgebot_queue_jobs{state="waiting"} 1.0' in text
    assert 'forgebot_gate_results_total{gate="lint",status="disabled"}' in text
    assert "# TYPE forgebot_webhook_deliveries_total counter" in text  # the webhook families stay beside them


def test_worker_metrics_server_serves_task_and_queue_families(redis_url: str) -> None:
    metrics.record_tokens("coder", "local-model", input_tokens=10, output_tokens=5)
    server = metrics.start_metrics_server(0, "127.0.0.1", redis_url=redis_url)
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    finally:
        server.shutdown()
        server.server_close()
    assert 'forgebot_llm_tokens_total{direction="output",model="local-model",role="coder"}' in text
    assert "forgebot_queue_up 1.0" in text
