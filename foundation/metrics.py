"""Prometheus metrics of the work itself: the queue, tasks, model use, gates and forge calls.

Two kinds live here. The queue families are read from Redis at scrape time by `QueueCollector`
(arq keeps every queued, deferred and running job in the sorted set `arq:queue`, scored by the
time it may start, and marks a running one with `arq:in-progress:<id>`), so any process that can
reach Redis reports the same numbers. The task families are counted where the work happens, deep
inside jobs and graph nodes; threading a registry through every node would touch every signature
for no gain, so they live in one process-wide `TASK_REGISTRY` and the `record_*` functions take
`metrics=` only so tests can count into a registry of their own. `register_collectors` puts both
behind the web app's `/metrics`; a worker process can serve them with `start_metrics_server`.
`forgebot serve` runs its worker as a child process, whose task families are its own: the
receiver's `/metrics` reads them from the child's metrics server at scrape time (`tasks_from`), so
one scrape of serve has them all. The webhook families stay in `bot/intake/webhooks.py`.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import redis
from arq.constants import default_queue_name
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from foundation.arqlayout import in_progress_key

MODES = frozenset({"implement", "analyze", "review"})
GATE_STATUSES = frozenset({"passed", "failed", "not_run", "disabled"})
FORGES = frozenset({"gitlab", "github"})
FORGE_ERROR_KINDS = frozenset({"auth", "not_found", "conflict", "rate_limited", "unavailable", "untrusted", "other"})
# Free-form labels (outcome, role, model, gate) come from code and configuration, never from users;
# the pattern still bounds them so a bug cannot explode the series count with arbitrary text.
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,79}$")
_DURATION_BUCKETS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)
# How many queue members one scrape inspects for in-progress marks; workers take jobs in score
# order, so running jobs sit at the front and a long tail of waiting jobs need not be walked.
QUEUE_SCAN_LIMIT = 1000


@dataclass(frozen=True)
class TaskMetrics:
    """The task-side families, created in one registry."""

    tasks: Counter
    task_seconds: Histogram
    tokens: Counter
    cost: Counter
    gates: Counter
    forge_errors: Counter
    rate_limit_waits: Counter
    rate_limit_wait_seconds: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> TaskMetrics:
        def counter(name: str, doc: str, labels: list[str]) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        return cls(
            tasks=counter("forgebot_tasks", "Finished tasks by mode and outcome", ["mode", "outcome"]),
            task_seconds=Histogram(
                "forgebot_task_duration_seconds", "Wall time of finished tasks", ["mode", "outcome"],
                registry=registry, buckets=_DURATION_BUCKETS,
            ),
            tokens=counter("forgebot_llm_tokens", "Model tokens by role, model and direction",
                           ["role", "model", "direction"]),
            cost=counter("forgebot_llm_cost_usd", "Model cost in US dollars", ["role", "model"]),
            gates=counter("forgebot_gate_results", "Gate results by gate and status", ["gate", "status"]),
            forge_errors=counter("forgebot_forge_api_errors", "Failed forge API calls by kind", ["forge", "kind"]),
            rate_limit_waits=counter(
                "forgebot_forge_rate_limit_waits", "Times a forge rate limit made the bot wait", ["forge"]
            ),
            rate_limit_wait_seconds=counter(
                "forgebot_forge_rate_limit_wait_seconds", "Seconds spent waiting on forge rate limits", ["forge"]
            ),
        )


TASK_REGISTRY = CollectorRegistry()
TASK_METRICS = TaskMetrics.create(TASK_REGISTRY)


def _one_of(name: str, value: str, allowed: frozenset[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, not {value!r}")
    return value


def safe_label(value: str, fallback: str = "other") -> str:
    """`value` when it fits the label alphabet, else `fallback`: a model, gate or lint name from
    configuration, a provider or a repository never fails a task, nor becomes a label as it is."""
    return value if _LABEL.match(value) else fallback


def _label(name: str, value: str) -> str:
    if not _LABEL.match(value):
        raise ValueError(f"{name} {value!r} is not a metric label (letters, digits, _.:/@+-, at most 80)")
    return value


def _non_negative(name: str, value: float) -> float:
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value


def record_task(mode: str, outcome: str, seconds: float, *, metrics: TaskMetrics = TASK_METRICS) -> None:
    """Count one finished task (`outcome` e.g. `done`, `blocked`, `need_info`, `failed`) and its wall time."""
    labels = {"mode": _one_of("mode", mode, MODES), "outcome": _label("outcome", outcome)}
    metrics.tasks.labels(**labels).inc()
    metrics.task_seconds.labels(**labels).observe(_non_negative("seconds", seconds))


def record_tokens(
    role: str,
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cost_usd: float = 0.0,
    metrics: TaskMetrics = TASK_METRICS,
) -> None:
    """Count one model call's tokens and cost for `role` (`planner`, `coder`, ...)."""
    role, model = _label("role", role), _label("model", model)
    metrics.tokens.labels(role=role, model=model, direction="input").inc(_non_negative("input_tokens", input_tokens))
    metrics.tokens.labels(role=role, model=model, direction="output").inc(
        _non_negative("output_tokens", output_tokens)
    )
    metrics.cost.labels(role=role, model=model).inc(_non_negative("cost_usd", cost_usd))


def record_gate(gate: str, status: str, *, metrics: TaskMetrics = TASK_METRICS) -> None:
    """Count one gate result; the four statuses are the ones the merge request reports."""
    metrics.gates.labels(gate=_label("gate", gate), status=_one_of("status", status, GATE_STATUSES)).inc()


def forge_error_kind(error: BaseException) -> str:
    """The `kind` label for a failure of a forge call: the ForgeError subclass, else `other`."""
    from foundation.forge.errors import (
        ForgeAuthError,
        ForgeConflict,
        ForgeNotFound,
        ForgeRateLimited,
        ForgeUnavailable,
        ForgeUntrusted,
    )

    kinds: list[tuple[type[BaseException], str]] = [
        (ForgeAuthError, "auth"),
        (ForgeNotFound, "not_found"),
        (ForgeConflict, "conflict"),
        (ForgeRateLimited, "rate_limited"),
        (ForgeUnavailable, "unavailable"),
        (ForgeUntrusted, "untrusted"),
    ]
    return next((kind for cls, kind in kinds if isinstance(error, cls)), "other")


def record_forge_error(forge: str, error: BaseException | str, *, metrics: TaskMetrics = TASK_METRICS) -> None:
    """Count one failed forge API call; `error` is the exception or one of `FORGE_ERROR_KINDS`."""
    kind = error if isinstance(error, str) else forge_error_kind(error)
    metrics.forge_errors.labels(
        forge=_one_of("forge", forge, FORGES), kind=_one_of("kind", kind, FORGE_ERROR_KINDS)
    ).inc()


def record_rate_limit_wait(forge: str, seconds: float, *, metrics: TaskMetrics = TASK_METRICS) -> None:
    """Count one wait imposed by a forge rate limit (a deferred retry or a sleep) and its length."""
    forge = _one_of("forge", forge, FORGES)
    metrics.rate_limit_waits.labels(forge=forge).inc()
    metrics.rate_limit_wait_seconds.labels(forge=forge).inc(_non_negative("seconds", seconds))


@dataclass(frozen=True)
class QueueSnapshot:
    """The arq queue at one instant; `depth` = waiting + deferred + in progress."""

    depth: int
    waiting: int
    deferred: int
    in_progress: int
    oldest_waiting_seconds: float


def read_queue(
    client: redis.Redis, queue_name: str = default_queue_name, now: float | None = None
) -> QueueSnapshot:
    """Read the queue's sorted set; scores are the epoch milliseconds a job may start at."""
    now_ms = int((time.time() if now is None else now) * 1000)
    depth = int(cast(int, client.zcard(queue_name)))
    deferred = int(cast(int, client.zcount(queue_name, f"({now_ms}", "+inf")))
    head = cast(list[tuple[bytes, float]], client.zrange(queue_name, 0, QUEUE_SCAN_LIMIT - 1, withscores=True))
    pipe = client.pipeline(transaction=False)
    for member, _ in head:
        pipe.exists(in_progress_key(member.decode()))
    running = [bool(flag) for flag in pipe.execute()]
    in_progress = sum(running)
    oldest = next((score for (_, score), busy in zip(head, running, strict=True) if not busy and score <= now_ms), None)
    return QueueSnapshot(
        depth=depth,
        waiting=max(0, depth - deferred - in_progress),
        deferred=deferred,
        in_progress=in_progress,
        oldest_waiting_seconds=0.0 if oldest is None else (now_ms - oldest) / 1000,
    )


class QueueCollector(Collector):
    """Report the queue at scrape time; an unreachable Redis is `forgebot_queue_up 0`, not a failed scrape."""

    def __init__(self, read: Callable[[], QueueSnapshot]) -> None:
        self._read = read

    @classmethod
    def from_url(cls, redis_url: str, queue_name: str = default_queue_name) -> QueueCollector:
        # Scrapes run on the web's event loop (prometheus_client collects synchronously): keep the
        # blocking client's timeouts short so a dead Redis costs a scrape one second, not thirty.
        client = redis.Redis.from_url(redis_url, socket_timeout=1.0, socket_connect_timeout=1.0)
        return cls(lambda: read_queue(client, queue_name))

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not touch Redis; names are checked by the tests instead

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("forgebot_queue_up", "1 when the job queue in Redis could be read at scrape time")
        try:
            snapshot = self._read()
        except (redis.RedisError, OSError):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield GaugeMetricFamily("forgebot_queue_depth", "Jobs in the queue: waiting, deferred and running",
                                value=snapshot.depth)
        jobs = GaugeMetricFamily("forgebot_queue_jobs", "Jobs in the queue by state", labels=["state"])
        for state in ("waiting", "deferred", "in_progress"):
            jobs.add_metric([state], getattr(snapshot, state))
        yield jobs
        yield GaugeMetricFamily("forgebot_queue_oldest_job_age_seconds",
                                "Age of the oldest job that could start but has not (0: none)",
                                value=snapshot.oldest_waiting_seconds)


class _Forward(Collector):
    """Expose another registry's families through this one (the process-wide task families)."""

    def __init__(self, source: CollectorRegistry) -> None:
        self._source = source

    def collect(self) -> Iterator[Metric]:
        return iter(self._source.collect())


class _Scraped(Collector):
    """The task families of another process (serve's worker child), read from its `/metrics` at scrape time.

    Only the task families are taken (the receiver reports the queue itself); `forgebot_worker_metrics_up`
    says whether the worker answered, so a scrape never fails because the worker is busy or gone.
    """

    def __init__(self, url: str, timeout: float = 2.0) -> None:
        self._url, self._timeout = url, timeout

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not call the worker

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("forgebot_worker_metrics_up", "1 when serve's worker answered this scrape")
        try:
            with urllib.request.urlopen(self._url, timeout=self._timeout) as response:
                text = response.read().decode("utf-8", errors="replace")
        except (OSError, ValueError):
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        names = {family.name for family in TASK_REGISTRY.collect()}
        yield from (family for family in text_string_to_metric_families(text) if family.name in names)


def register_collectors(registry: CollectorRegistry, redis_url: str | None, tasks_from: str | None = None) -> None:
    """Add the task families and, with a Redis URL, the queue collector to an app's registry.

    `tasks_from`: the metrics URL of the process that runs the tasks (serve's worker child), read
    instead of this process's own task families.
    """
    registry.register(_Scraped(tasks_from) if tasks_from else _Forward(TASK_REGISTRY))
    if redis_url:
        registry.register(QueueCollector.from_url(redis_url))


def start_metrics_server(port: int, addr: str = "0.0.0.0", redis_url: str | None = None) -> Any:
    """Serve the task families (and the queue, with `redis_url`) for a worker process that has no web app."""
    registry = CollectorRegistry()
    register_collectors(registry, redis_url)
    server, _thread = start_http_server(port, addr, registry=registry)
    return server
